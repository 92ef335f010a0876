/**
 * The proposal awaiting review, drawn as an experiment's output at the top of the list: number,
 * an "awaiting review" badge and the description; which proposer made it and why; the rationale;
 * the diff, highlighted as the experiment renderer does; the engine's refusal of an edit; the knobs
 * the offline proposer leaves alone because a reviewer's note named them. Under it Approve, Edit
 * (the files in code editors, then Approve edited or Cancel), Reject, Approve all, and a note that
 * goes with Reject or Approve. The buttons execute the panel's commands (src/lab/commands/run-commands.ts) with
 * the proposal's number, and are labelled and enabled as the commands are.
 */
import type { IEditorServices } from '@jupyterlab/codeeditor';
import type { TranslationBundle } from '@jupyterlab/translation';
import type { CommandRegistry } from '@lumino/commands';
import type { ReadonlyJSONObject, ReadonlyPartialJSONObject } from '@lumino/coreutils';
import { knobRulesOfMeta } from '../../../core/step-mode/knob-notes';
import { Panel, Widget } from '@lumino/widgets';
import { parseDiff } from '../../renderer/diff';
import { el } from '../../renderer/dom';
import { renderDiff } from '../../renderer/experiment-view';
import { lineHighlighter } from '../../renderer/highlight';
import { RunCommandIDs } from '../../commands/command-ids';
import type { ReviewController } from './review-controller';
import { ReviewEditor } from './review-editor';
import type { RunModel } from '../run/run-model';

export interface IReviewViewOptions {
  review: ReviewController;
  run: RunModel;
  trans: TranslationBundle;
  commands: CommandRegistry;
  editorServices: IEditorServices;
  /** The arguments that make the commands act on this panel. */
  args: () => ReadonlyPartialJSONObject;
}

const ACTIONS = [RunCommandIDs.approve, RunCommandIDs.editProposal, RunCommandIDs.reject, RunCommandIDs.approveAll];

export class ReviewView extends Panel {
  readonly card = new Widget();
  readonly editor: ReviewEditor;
  readonly actions = new Widget();
  readonly note = document.createElement('input');
  readonly buttons = new Map<string, HTMLButtonElement>();
  /** The proposal (and its refusal) the card shows, so a redraw happens only when they change. */
  private drawnKey = '';
  private noteFor: number | null = null;

  constructor(private readonly opts: IReviewViewOptions) {
    super();
    const { trans } = opts;
    this.addClass('jp-AutoresearchReview');
    this.addClass('jp-OutputArea-output');
    this.card.addClass('jp-AutoresearchReview-card');
    this.editor = new ReviewEditor(opts.editorServices);
    this.actions.addClass('jp-AutoresearchReview-actions');
    this.note.className = 'jp-mod-styled jp-AutoresearchReview-note';
    this.note.placeholder = trans.__('note for the next proposal (optional)');
    this.note.setAttribute('aria-label', trans.__('A note with Reject or Approve, passed to the next proposal'));
    for (const id of ACTIONS) {
      const b = document.createElement('button');
      const mod = id === RunCommandIDs.approve ? 'jp-mod-accept' : id === RunCommandIDs.reject ? 'jp-mod-warn' : '';
      b.className = `jp-Button jp-mod-styled jp-AutoresearchReview-button ${mod}`;
      b.dataset.command = id;
      b.addEventListener('click', () => void opts.commands.execute(id, this.argsFor(id)));
      this.buttons.set(id, b);
    }
    const reject = this.buttons.get(RunCommandIDs.reject)!;
    this.actions.node.append(
      this.buttons.get(RunCommandIDs.approve)!,
      this.buttons.get(RunCommandIDs.editProposal)!,
      this.note,
      reject,
      this.buttons.get(RunCommandIDs.approveAll)!,
    );
    this.note.addEventListener('keydown', event => {
      if (event.key === 'Enter' && !reject.disabled) {
        reject.click();
      }
    });
    this.addWidget(this.card);
    this.addWidget(this.editor);
    this.addWidget(this.actions);
    opts.review.model.changed.connect(this.render, this);
    opts.review.changed.connect(this.render, this);
    opts.run.changed.connect(this.render, this);
    opts.commands.commandChanged.connect(this.renderButtons, this);
    this.render();
  }

  dispose(): void {
    if (this.isDisposed) {
      return;
    }
    this.opts.commands.commandChanged.disconnect(this.renderButtons, this);
    super.dispose();
  }

  /** Draws the pending proposal, or hides the output when none awaits review. */
  render(): void {
    const { run, review } = this.opts;
    const pending = run.pending;
    const p = review.model.proposal;
    this.setHidden(pending === null);
    this.node.dataset.n = pending ? String(pending.n) : '';
    if (pending === null) {
      this.drawnKey = '';
      this.editor.close();
      return;
    }
    const key = JSON.stringify([pending.n, p?.n ?? null, p?.refused ?? null, review.model.error, review.model.sent]);
    if (key !== this.drawnKey) {
      this.drawnKey = key;
      this.card.node.replaceChildren(...this.cardContent(pending.n, pending.description));
    }
    if (this.noteFor !== pending.n) {
      this.noteFor = pending.n; // a note is about one proposal
      this.note.value = '';
    }
    const editing = review.model.editing && p !== null;
    if (editing && this.editor.proposalN !== p.n) {
      this.editor.open(p);
      requestAnimationFrame(() => this.editor.focus());
    } else if (!editing && this.editor.proposalN !== null) {
      this.editor.close();
    }
    this.editor.setHidden(!editing);
    this.node.classList.toggle('jp-mod-editing', editing);
    this.renderButtons();
  }

  private cardContent(n: number, description: string): HTMLElement[] {
    const { trans, review } = this.opts;
    const p = review.model.proposal?.n === n ? review.model.proposal : null;
    const head = el('div', 'jp-AutoresearchExperiment-header');
    head.append(
      el('span', 'jp-AutoresearchExperiment-number', `#${n}`),
      el('span', 'jp-AutoresearchExperiment-status jp-mod-pending', trans.__('awaiting review')),
      el('span', 'jp-AutoresearchExperiment-description', p?.description ?? description),
    );
    const out: HTMLElement[] = [head];
    if (!p) {
      out.push(el('div', 'jp-AutoresearchReview-loading', trans.__('Reading the proposal…')));
    } else {
      const by = el('div', 'jp-AutoresearchReview-proposer');
      by.appendChild(el('span', 'jp-AutoresearchExperiment-label', trans.__('Proposed by: ')));
      // The offline proposer's `why` ends with the rationale, which has its own line below.
      const why = p.why?.endsWith(`; ${p.rationale}`) ? p.why.slice(0, -p.rationale.length - 2) : p.why;
      by.appendChild(document.createTextNode(why ? `${p.proposer} — ${why}` : p.proposer));
      out.push(by);
      // The rules the offline proposer inferred from the reviewers' notes (src/core/step-mode/knob-notes.ts).
      for (const rule of knobRulesOfMeta(p.meta)) {
        const line = el('div', 'jp-AutoresearchReview-rule', trans.__('Leaving %1 alone', rule.name));
        line.append(` ${trans.__('(from your note on #%1)', rule.n)}`);
        out.push(line);
      }
      if (p.rationale) {
        const why = el('div', 'jp-AutoresearchExperiment-rationale');
        why.append(
          el('span', 'jp-AutoresearchExperiment-label', trans.__('Why: ')),
          document.createTextNode(p.rationale),
        );
        out.push(why);
      }
      if (p.refused) {
        out.push(
          el('div', 'jp-AutoresearchReview-refused', trans.__('The edited version was refused: %1', p.refused.message)),
        );
      }
      const lines = parseDiff(p.diff);
      const added = lines.filter(l => l.kind === 'add').length;
      const removed = lines.filter(l => l.kind === 'del').length;
      out.push(renderDiff(p.diff, trans.__('diff (+%1 −%2)', added, removed), true, lineHighlighter()));
    }
    if (review.model.sent !== null) {
      out.push(el('div', 'jp-AutoresearchReview-sent', trans.__('Decision sent; the engine takes it next.')));
    }
    if (review.model.error) {
      out.push(el('div', 'jp-AutoresearchReview-error', review.model.error));
    }
    return out;
  }

  /** The command arguments of a button: the proposal's number, the note, the edited files. */
  private argsFor(id: string): ReadonlyPartialJSONObject {
    const n = this.opts.review.model.proposal?.n ?? this.opts.run.pending?.n;
    const base = { ...this.opts.args(), ...(n !== undefined ? { n } : {}) };
    if (id === RunCommandIDs.reject) {
      return { ...base, note: this.note.value };
    }
    // An approval's note reaches the proposer too (a knob it names is left alone: core/knob-notes.ts).
    const note = id === RunCommandIDs.approve && this.note.value.trim() ? { note: this.note.value } : {};
    if (id === RunCommandIDs.approve && this.opts.review.model.editing) {
      return { ...base, ...note, files: this.editor.changedFiles(), edited: true };
    }
    return { ...base, ...note };
  }

  private renderButtons(): void {
    const editing = this.opts.review.model.editing;
    for (const [id, b] of this.buttons) {
      const args = id === RunCommandIDs.approve && editing ? { ...this.opts.args(), edited: true } : this.opts.args();
      b.textContent = this.opts.commands.label(id, args);
      b.title = this.opts.commands.caption(id, args);
      b.disabled = !this.opts.commands.isEnabled(id, args);
      if (this.opts.commands.isToggleable(id, args as ReadonlyJSONObject)) {
        b.setAttribute('aria-pressed', String(this.opts.commands.isToggled(id, args)));
      }
    }
    const reject = this.buttons.get(RunCommandIDs.reject)!;
    this.note.disabled = reject.disabled;
    // A disabled field says why, as the buttons beside it do.
    this.note.title = reject.disabled ? reject.title : '';
  }
}
