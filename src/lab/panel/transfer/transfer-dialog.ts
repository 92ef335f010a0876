/**
 * The *Transfer study* dialog: the larger scale's environment as KEY=VALUE lines (prefilled from
 * program.md's `transfer:` block), its training budget, the repeats of each replay, and whether to
 * check additivity by removing each kept change from the best. What the fields mean is
 * ./transfer-fields.ts's, asked again with the problem shown until they make sense.
 */
import { Dialog, DOMUtils, showDialog } from '@jupyterlab/apputils';
import type { TranslationBundle } from '@jupyterlab/translation';
import { Widget } from '@lumino/widgets';
import type { ITransferRequest } from '../../api/transfer';
import { envLines, parseTransferFields, type ITransferFields } from './transfer-fields';
import { dialogRow } from '../../dialog-row';

/** Numbers the dialogs' ids (a field points at its problem's line). */
let dialogs = 0;

/** The dialog's body: its fields, and a line for what was wrong with the last try. */
export class TransferDialogBody extends Widget implements Dialog.IBodyWidget<ITransferFields> {
  readonly env = document.createElement('textarea');
  readonly budget = document.createElement('input');
  readonly runs = document.createElement('input');
  readonly ablate = document.createElement('input');
  /** What makes Start study unavailable now, if anything. */
  readonly invalid = document.createElement('p');

  constructor(trans: TranslationBundle, fields: ITransferFields, error: string | null, budgetHint: string) {
    super();
    this.addClass('jp-AutoresearchTransferDialog');
    const row = (label: string, control: HTMLElement, hint = '') =>
      dialogRow('jp-AutoresearchTransferDialog-row', label, control, hint);
    // A checkbox before its word on one line, both in the label (a click on the word ticks it),
    // the hint under them and named as the box's description.
    const check = (label: string, box: HTMLInputElement, hint: string) => {
      const wrap = document.createElement('div');
      wrap.className = 'jp-AutoresearchTransferDialog-row';
      const line = document.createElement('label');
      line.className = 'jp-AutoresearchTransferDialog-check';
      const text = document.createElement('span');
      text.textContent = label;
      line.append(box, text);
      const small = document.createElement('small');
      small.id = DOMUtils.createDomID();
      small.textContent = hint;
      box.setAttribute('aria-describedby', small.id);
      wrap.append(line, small);
      return wrap;
    };
    this.env.className = 'jp-mod-styled jp-AutoresearchTransferDialog-env';
    this.env.rows = 4;
    this.env.value = fields.env;
    this.env.placeholder = 'AUTORESEARCH_SCALE=2';
    this.budget.className = 'jp-mod-styled jp-AutoresearchTransferDialog-budget';
    this.budget.type = 'number';
    this.budget.min = '1';
    this.budget.value = fields.budget;
    this.budget.placeholder = budgetHint;
    this.runs.className = 'jp-mod-styled jp-AutoresearchTransferDialog-runs';
    this.runs.type = 'number';
    this.runs.min = '2';
    this.runs.step = '1';
    this.runs.value = fields.runs;
    this.runs.placeholder = trans.__("the run's noise_runs");
    this.ablate.type = 'checkbox';
    this.ablate.className = 'jp-AutoresearchTransferDialog-ablate';
    this.ablate.checked = fields.ablate;
    const intro = document.createElement('p');
    intro.textContent = trans.__(
      'Replays the baseline and each kept commit at a larger scale, then compares every change’s gain there with its gain in the search.',
    );
    this.node.append(
      intro,
      row(trans.__('Environment of the larger scale (KEY=VALUE a line)'), this.env),
      row(trans.__('Training budget (s)'), this.budget),
      row(trans.__('Runs of each replay'), this.runs),
      check(
        trans.__('Ablate'),
        this.ablate,
        trans.__('remove each kept change from the best alone, at the search scale'),
      ),
    );
    // The dialog disables Start study while a field is invalid (a number out of range): say
    // which and why, beside the fields and on the button, as the user types.
    this.invalid.className = 'jp-AutoresearchTransferDialog-invalid';
    this.invalid.setAttribute('role', 'status');
    this.invalid.hidden = true;
    this.invalid.id = `jp-AutoresearchTransferDialog-invalid-${++dialogs}`;
    this.node.appendChild(this.invalid);
    const limits: Array<[HTMLInputElement, string]> = [
      [this.budget, trans.__('Training budget: a number of seconds above 0.')],
      [this.runs, trans.__('Runs of each replay: a whole number of 2 or more (a standard error needs two runs).')],
    ];
    this.node.addEventListener('input', () => this.checkFields(limits, trans));
    if (error) {
      const problem = document.createElement('p');
      problem.className = 'jp-AutoresearchTransferDialog-error';
      problem.textContent = error;
      this.node.appendChild(problem);
    }
  }

  /** Says what makes Start study unavailable (an invalid field), next to the fields and as the button's tooltip. */
  checkFields(limits: Array<[HTMLInputElement, string]>, trans: TranslationBundle): void {
    const problems: string[] = [];
    for (const [field, words] of limits) {
      const bad = !field.validity.valid;
      field.setAttribute('aria-invalid', String(bad));
      field.title = bad ? words : '';
      if (bad) {
        field.setAttribute('aria-describedby', this.invalid.id);
        problems.push(words);
      } else {
        field.removeAttribute('aria-describedby');
      }
    }
    this.invalid.textContent = problems.join(' ');
    this.invalid.hidden = problems.length === 0;
    const accept = this.node.closest('.jp-Dialog-content')?.querySelector<HTMLButtonElement>('.jp-mod-accept');
    if (accept) {
      accept.title = problems.length ? trans.__('Unavailable until the fields are valid: %1', problems.join(' ')) : '';
    }
  }

  getValue(): ITransferFields {
    return { env: this.env.value, budget: this.budget.value, runs: this.runs.value, ablate: this.ablate.checked };
  }
}

/** Asks for the study's settings until they make sense; null when cancelled. */
export async function askTransfer(
  trans: TranslationBundle,
  tag: string,
  defaults: { env: Record<string, string>; budget_s: number | null },
  defaultsProblem: string | null = null,
): Promise<ITransferRequest | null> {
  let fields: ITransferFields = { env: envLines(defaults.env), budget: '', runs: '', ablate: false };
  let error: string | null = defaultsProblem
    ? trans.__("program.md's transfer block could not be read: %1", defaultsProblem)
    : null;
  const hint = defaults.budget_s !== null ? String(defaults.budget_s) : trans.__("program.md's, else the run's");
  for (;;) {
    const body = new TransferDialogBody(trans, fields, error, hint);
    const result = await showDialog({
      title: trans.__('Transfer study of %1', tag),
      body,
      focusNodeSelector: 'textarea',
      buttons: [
        Dialog.cancelButton({ label: trans.__('Cancel') }),
        Dialog.okButton({ label: trans.__('Start study') }),
      ],
    });
    if (!result.button.accept || result.value === null) {
      return null;
    }
    fields = result.value;
    const parsed = parseTransferFields(fields);
    if ('request' in parsed) {
      return parsed.request;
    }
    error = parsed.error;
  }
}
