/**
 * Step mode's wait: a checked proposal is offered to a reviewer (the pending file, atomically, and a
 * review record in the journal, so a kill -9 offers the same one again on --resume), then the engine
 * waits for a decision file naming its number — from `autoresearch approve/reject` in another shell,
 * the server for the panel, or the TTY prompt, whichever answers first. fs.watch wakes it at once;
 * a slow poll is the backstop where watching a folder is unreliable (network file systems). The
 * mode file (review-mode.ts) turns the reviewing on and off while the run goes on.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { ReviewNote } from '../../core/step-mode/knob-notes';
import { REVIEW_DECISION_FILE, REVIEW_PENDING_FILE } from '../../core/journal/layout';
import { PendingReview, ReviewDecision, type ReviewAction, type ReviewSource } from '../../core/step-mode/review';
import { exec } from '../git/exec';
import { guardedEnv } from '../git/git-guard';
import type { JournalStore } from '../store/journal-store';
import type { Proposal } from '../proposers/types';
import { readReviewMode, watchMode } from './review-mode';
import { readNoFollow, replaceFile } from '../workspace/workspace-files';

/** Stop requested while a proposal awaited review: it stays pending (nothing recorded) for a resume. */
export class ReviewPostponed extends Error {}

/** The TTY's (or any other in-process) reviewer: resolves with a decision, or never when aborted. */
export type Asker = (pending: PendingReview, signal: AbortSignal) => Promise<ReviewDecision>;

/** What a reviewer decided, as the experiment records it. */
export interface ReviewOutcome {
  action: ReviewAction;
  source: ReviewSource;
  waited_s: number;
  note?: string;
}

/** The proposal on offer, and how to try the reviewer's version of its files. */
export interface Offer {
  n: number;
  proposal: Proposal;
  diff: string;
  proposer: string;
  editable: string[];
  /**
   * Writes the reviewer's files over the proposal's and checks them as a proposal is checked;
   * returns the problem (the proposal's files are back then), or the new diff.
   */
  tryEdit: (files: Record<string, string>) => Promise<{ problem: string | null; diff: string }>;
}

export interface StepReviewOptions {
  root: string;
  journal: JournalStore;
  signal: AbortSignal;
  asker?: Asker;
  note: (text: string) => void;
  /** The backstop poll's period (ms). */
  pollMs?: number;
  /** Step mode as the run starts (its config.step); the mode file switches it afterwards. */
  enabled: boolean;
  /** The first experiment number this engine may offer: a switch seen before any is asked applies from it. */
  firstN: number;
  /** When this engine claimed the workspace (ms): a mode file from before is an earlier engine's, old news. */
  since: number;
  /** Whether the mode file is followed (not with several workers, which are never reviewed one by one). */
  switchable: boolean;
  /** The notes of the decisions journaled before this engine (reviewNotesOf the journal). */
  notes?: ReviewNote[];
}

/** The pending and decision files of a run's folder. */
export function reviewPaths(root: string): { pending: string; decision: string } {
  return { pending: path.join(root, REVIEW_PENDING_FILE), decision: path.join(root, REVIEW_DECISION_FILE) };
}

/** Writes JSON so a reader sees the old file or the new one, never half of one. */
export function writeJsonAtomic(file: string, value: unknown): void {
  replaceFile(file, JSON.stringify(value, null, 2) + '\n');
}

/** The pending proposal of a run's folder, or null when none (or not one of ours). */
export function readPending(root: string): PendingReview | null {
  try {
    const parsed = PendingReview.safeParse(JSON.parse(readNoFollow(reviewPaths(root).pending).toString('utf8')));
    return parsed.success ? parsed.data : null;
  } catch {
    return null;
  }
}

/** Why the proposer chose it, where its meta says (the offline proposer's move). */
function whyOf(p: Proposal): string | null {
  const meta = p.meta as { kind?: string; change?: { name: string; direction: string; level: number; jump?: boolean } };
  if (meta?.kind !== 'offline' || !meta.change) return null;
  const c = meta.change;
  return `offline move: ${c.name} ${c.direction}, step level ${c.level}${c.jump ? ' (a jump)' : ''}; ${p.rationale}`;
}

/** The diff from the proposal's files to the reviewer's (git diff --no-index on copies). */
async function editDiff(before: Record<string, string>, after: Record<string, string>): Promise<string> {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'autoresearch-edit-'));
  try {
    let out = '';
    for (const [file, text] of Object.entries(after)) {
      for (const [side, content] of [
        ['proposed', before[file] ?? ''],
        ['edited', text],
      ] as const) {
        fs.mkdirSync(path.dirname(path.join(tmp, side, file)), { recursive: true });
        fs.writeFileSync(path.join(tmp, side, file), content);
      }
      const r = await exec(
        'git',
        ['diff', '--no-index', '--no-ext-diff', '--no-textconv', '--no-prefix', `proposed/${file}`, `edited/${file}`],
        { cwd: tmp, env: guardedEnv() },
      );
      out += r.stdout;
    }
    return out;
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}

/**
 * One run's reviewer: offers each proposal and waits. `enabled` follows the mode file (a switch
 * newer than what it knew) and goes false after "approve all"; each change is journaled.
 */
export class StepReview {
  enabled: boolean;
  /** When the last switch it took was made (ms); a mode file no newer is old news (at first: this engine's start). */
  private modeKnown: number;
  /** The highest experiment number asked about: a switch seen later applies from the next one. */
  private asked: number;
  /** Proposals reviewed whatever the mode: those a stopped engine left awaiting review. */
  private readonly required = new Set<number>();
  private readonly unwatch: () => void;
  /** Every decision's note in this run, the journal's before this engine's and its own since, oldest first. */
  readonly notes: ReviewNote[];

  constructor(private readonly o: StepReviewOptions) {
    this.notes = [...(o.notes ?? [])];
    this.enabled = o.enabled;
    this.modeKnown = o.since;
    this.asked = o.firstN - 1;
    // Followed while the run goes on, not only at the next offer, so the state (and the panel's toggle) shows a switch at once.
    this.unwatch = o.switchable ? watchMode(o.root, () => this.followMode(this.asked + 1), o.pollMs ?? 1000) : () => {};
    o.signal.addEventListener('abort', () => this.close(), { once: true });
  }

  /** Proposal n is reviewed even with step mode off (it was left awaiting review). */
  require(n: number): void {
    this.required.add(n);
  }

  /** Whether proposal n, checked and about to be committed, waits for a reviewer: the mode file is taken first. */
  wants(n: number): boolean {
    this.followMode(n);
    this.asked = Math.max(this.asked, n);
    return this.enabled || this.required.has(n);
  }

  /** Stops following the mode file (before the run's end is journaled). */
  close(): void {
    this.unwatch();
  }

  /** Takes a mode file newer than the last switch: a change of mode is journaled, applying from experiment `from`. */
  private followMode(from: number): void {
    if (this.o.signal.aborted || !this.o.switchable) return;
    const mode = readReviewMode(this.o.root);
    const at = mode ? Date.parse(mode.ts) : NaN;
    if (!mode || !(at > this.modeKnown)) return;
    this.modeKnown = at;
    if (mode.step !== this.enabled) this.switchMode(mode.step, mode.source, from);
  }

  private switchMode(step: boolean, source: ReviewSource, n: number): void {
    this.enabled = step;
    this.o.journal.append({ type: 'review', ts: new Date().toISOString(), n, event: 'mode', step, source });
    this.o.note(
      step
        ? `step mode on (${source}): from #${n} each proposal awaits review`
        : `step mode off (${source}): from #${n} proposals are not reviewed`,
    );
  }

  /** Offers proposal n and waits for a usable decision; throws ReviewPostponed when the run stops first. */
  async review(offer: Offer): Promise<ReviewOutcome> {
    const { pending: pendingFile, decision: decisionFile } = reviewPaths(this.o.root);
    const earlier = readPending(this.o.root);
    const pending: PendingReview = {
      n: offer.n,
      since: earlier?.n === offer.n ? earlier.since : new Date().toISOString(),
      description: offer.proposal.description,
      rationale: offer.proposal.rationale,
      diff: offer.diff,
      files: offer.proposal.files,
      editable: offer.editable,
      proposer: offer.proposer,
      why: whyOf(offer.proposal),
      ...(offer.proposal.meta !== undefined ? { meta: offer.proposal.meta } : {}),
    };
    writeJsonAtomic(pendingFile, pending);
    const offered = this.o.journal.read().some(r => r.type === 'review' && r.event === 'pending' && r.n === offer.n);
    if (!offered) this.o.journal.append({ type: 'review', ts: pending.since, n: offer.n, event: 'pending' });
    this.o.note(`#${offer.n} awaits review: ${offer.proposal.description} (autoresearch approve / reject)`);
    const started = Date.now();
    for (;;) {
      const d = await this.nextDecision(offer.n, pending, decisionFile);
      const waited_s = (Date.now() - started) / 1000;
      let action: ReviewAction = d.decision;
      let edit_diff: string | undefined;
      if (d.decision === 'approve' && d.files) {
        const problem = await this.edit(offer, d.files);
        if (typeof problem === 'string') {
          pending.refused = { ts: new Date().toISOString(), message: problem };
          writeJsonAtomic(pendingFile, pending);
          this.o.note(`#${offer.n}: the edited version was refused (${problem}); the proposal still awaits review`);
          continue;
        }
        // Files handed back unchanged are a plain approval.
        if (problem.editDiff) [action, edit_diff] = ['edit', problem.editDiff];
      }
      const note = d.note?.trim() || undefined;
      this.o.journal.append({
        type: 'review',
        ts: new Date().toISOString(),
        n: offer.n,
        event: 'decision',
        action,
        source: d.source,
        waited_s,
        ...(note !== undefined ? { note } : {}),
        ...(edit_diff !== undefined ? { edit_diff } : {}),
        ...(d.all ? { all: true } : {}),
      });
      // As reviewNotesOf reads it back from the journal on --resume.
      if (note !== undefined) this.notes.push({ n: offer.n, note });
      fs.rmSync(pendingFile, { force: true });
      // "Approve all" leaves step mode, journaled as any switch is (a mode file written before it stays old news).
      if (d.all) {
        this.modeKnown = Math.max(this.modeKnown, Date.now());
        if (this.enabled) this.switchMode(false, d.source, offer.n + 1);
      }
      return { action, source: d.source, waited_s, ...(note !== undefined ? { note } : {}) };
    }
  }

  /** The reviewer's files, checked: the problem in words, or the edit's diff against the proposal. */
  private async edit(offer: Offer, files: Record<string, string>): Promise<string | { editDiff: string }> {
    const outside = Object.keys(files).filter(f => !offer.editable.includes(f));
    if (outside.length) return `not editable: ${outside.join(', ')}`;
    const tried = await offer.tryEdit(files);
    if (tried.problem) return tried.problem;
    offer.diff = tried.diff;
    return { editDiff: await editDiff(offer.proposal.files, files) };
  }

  /** The next decision for proposal n: from the decision file (a stale one is refused and removed) or the asker. */
  private nextDecision(n: number, pending: PendingReview, file: string): Promise<ReviewDecision> {
    const signal = this.o.signal;
    return new Promise<ReviewDecision>((resolve, reject) => {
      const done = new AbortController();
      let watcher: fs.FSWatcher | null = null;
      let timer: NodeJS.Timeout | null = null;
      const finish = (fn: () => void) => {
        if (done.signal.aborted) return;
        done.abort();
        watcher?.close();
        if (timer) clearInterval(timer);
        signal.removeEventListener('abort', onAbort);
        fn();
      };
      const onAbort = () => finish(() => reject(new ReviewPostponed(`#${n} left awaiting review`)));
      const look = () => {
        const d = this.takeDecision(n, file);
        if (d) finish(() => resolve(d));
      };
      if (signal.aborted) return onAbort();
      signal.addEventListener('abort', onAbort, { once: true });
      try {
        watcher = fs.watch(path.dirname(file), (_e, name) => {
          if (name === null || name === path.basename(file)) look();
        });
        watcher.on('error', () => undefined);
      } catch {
        // The poll below still finds the decision.
      }
      timer = setInterval(look, this.o.pollMs ?? 1000);
      look();
      this.o.asker?.(pending, done.signal).then(
        d => finish(() => resolve(d)),
        () => undefined,
      );
    });
  }

  /** Reads and removes the decision file; one for another proposal is refused with a note. */
  private takeDecision(n: number, file: string): ReviewDecision | null {
    let text: string;
    try {
      text = readNoFollow(file).toString('utf8');
    } catch {
      return null;
    }
    let parsed: ReturnType<typeof ReviewDecision.safeParse>;
    try {
      parsed = ReviewDecision.safeParse(JSON.parse(text));
    } catch {
      // Half written by a writer that is not atomic: read it again on the next wake.
      return null;
    }
    fs.rmSync(file, { force: true });
    if (!parsed.success) {
      this.o.note(
        `ignored ${REVIEW_DECISION_FILE}: it is no decision (${parsed.error.issues[0]?.message ?? 'invalid'})`,
      );
      return null;
    }
    if (parsed.data.n !== n) {
      this.o.note(`ignored a decision for #${parsed.data.n}: #${n} is the proposal awaiting review`);
      return null;
    }
    return parsed.data;
  }
}
