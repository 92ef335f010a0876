/**
 * One experiment as a notebook output: a MIME bundle with the experiment's
 * own JSON (for the panel's renderer) and static `text/html` and `text/plain`
 * fallbacks. The HTML is plain semantic markup — tables, <details>, <pre>,
 * <b>, <code> — with no scripts, styles or style attributes, because GitHub
 * and nbviewer strip those and the file must still read well there.
 * Pure: no DOM and no Node APIs, so the panel and the engine share it.
 */
import { proposalNotes, type ExperimentRecord, type ProposalNotes } from '../journal/journal';
import type { Direction } from '../rule/noise';
import { fmtNoise } from '../rule/noise';
import { cacheHitRate } from '../config/pricing';
import { confirmedWords, runWords, sameAsWords, spread, verdictWords } from '../rule/noise-words';

export const EXPERIMENT_MIME = 'application/vnd.autoresearch.experiment+json';

/** How many lines of a crashed run's log the bundle carries. */
export const LOG_TAIL_LINES = 30;

/** How many characters of the model's reasoning the plain-text fallback shows (the HTML has it all, collapsed). */
export const REASONING_PLAIN_CHARS = 600;

/** What the experiment MIME type carries: the journal record less proposer internals, plus context. */
export interface ExperimentBundleData extends Omit<ExperimentRecord, 'type' | 'proposal_meta'> {
  metric_name: string;
  direction: Direction;
  /** The last lines of the run's log, for a crash; null otherwise or when the log is gone. */
  log_tail: string | null;
  /** The model's reasoning (its summarised thinking), its prediction, the lesson it drew and its effort, where it gave them. */
  reasoning?: string;
  expected_delta?: number;
  lesson?: { about: number; text: string };
  effort?: string;
}

/** The notes of a proposal that a reader of the notebook is shown (the rest of proposal_meta is proposer state). */
function shownNotes(
  notes: ProposalNotes,
): Pick<ExperimentBundleData, 'reasoning' | 'expected_delta' | 'lesson' | 'effort'> {
  return {
    ...(notes.reasoning ? { reasoning: notes.reasoning } : {}),
    ...(notes.expected_delta !== undefined ? { expected_delta: notes.expected_delta } : {}),
    ...(notes.lesson ? { lesson: notes.lesson } : {}),
    ...(notes.effort ? { effort: notes.effort } : {}),
  };
}

export interface ExperimentBundle {
  [EXPERIMENT_MIME]: ExperimentBundleData;
  'text/html': string;
  'text/plain': string;
}

export interface BundleOptions {
  metric?: string;
  direction?: Direction;
  /** The run's log text (or its tail); only shown for a crash. */
  log?: string | null;
}

/** The classes that keep MathJax (2: tex2jax_ignore; 3 and 4: mathjax_ignore) out of an element. */
export const NO_MATH_CLASSES = 'tex2jax_ignore mathjax_ignore';

/** Escapes text for HTML element content and attribute values. */
export function escapeHtml(text: string): string {
  return text
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&#39;');
}

/** The last `n` lines of a text (a trailing newline does not count as a line). */
export function tailLines(text: string, n = LOG_TAIL_LINES): string {
  const lines = text.replace(/\r\n/g, '\n').replace(/\n$/, '').split('\n');
  return lines.slice(-n).join('\n');
}

/** A metric with 6 decimals, or a dash. */
export function fmtMetric(v: number | null): string {
  return v === null ? '—' : v.toFixed(6);
}

/** A signed delta with 6 decimals, or an empty string. */
export function fmtDelta(v: number | null): string {
  return v === null ? '' : `${v >= 0 ? '+' : ''}${v.toFixed(6)}`;
}

function fmtCost(usd: number): string {
  return usd > 0 ? `$${usd.toFixed(4)}` : '—';
}

function fmtSeconds(s: number): string {
  return s >= 90 ? `${(s / 60).toFixed(1)} min` : `${s.toFixed(1)} s`;
}

/** "(-0.010000 vs best 1.000000)", or "" when there is nothing to compare (the baseline). */
function comparison(r: ExperimentRecord): string {
  if (r.best_before === null) {
    return '';
  }
  return r.delta === null
    ? `(best before ${fmtMetric(r.best_before)})`
    : `(${fmtDelta(r.delta)} vs best ${fmtMetric(r.best_before)})`;
}

/** `3 runs: mean 0.990000 ± 0.0023, confirmed`, the runs' heading; null before repeats. */
function runsHeading(r: ExperimentRecord): string | null {
  if (!r.runs || r.runs.length === 0) {
    return null;
  }
  const k = r.runs.length;
  const se = r.verdict?.se;
  const mean =
    r.metric !== null
      ? `: mean ${fmtMetric(r.metric)}${se !== null && se !== undefined ? ` ± ${fmtNoise(se)}` : ''}`
      : '';
  const confirmed = confirmedWords(r);
  return `${k} run${k === 1 ? '' : 's'}${mean}${confirmed ? `, ${confirmed}` : ''}`;
}

function resourceCells(r: ExperimentRecord): Array<[string, string]> {
  const hit = cacheHitRate(r.usage);
  return [
    ['lines', `+${r.lines_added} −${r.lines_removed}`],
    ['memory', `${r.memory_gb.toFixed(1)} GB`],
    ['run time', fmtSeconds(r.timings.run_s)],
    // Slurm's wait before the runs started: apart from run time, which alone counts as busy.
    ...(r.timings.queue_s !== undefined
      ? [['queue time (Slurm)', fmtSeconds(r.timings.queue_s)] as [string, string]]
      : []),
    ['cost', fmtCost(r.cost_usd)],
    // The share of the proposal's prompt read from the cache: the ledger's measure of caching.
    ...(hit !== null ? [['prompt cached', `${Math.round(hit * 100)}%`] as [string, string]] : []),
    ['commit', r.commit ? r.commit.slice(0, 7) : '—'],
  ];
}

/** "expected −0.004000, got +0.002100": the model's prediction beside the outcome. */
function predictionWords(r: ExperimentRecord, notes: ProposalNotes): string | null {
  if (notes.expected_delta === undefined) return null;
  return `expected ${fmtDelta(notes.expected_delta)}${r.delta !== null ? `, got ${fmtDelta(r.delta)}` : ''}`;
}

/** The experiment's MIME bundle: its JSON, an HTML fallback and a plain-text fallback. */
export function experimentBundle(record: ExperimentRecord, opts: BundleOptions = {}): ExperimentBundle {
  const data = experimentData(record, opts);
  return {
    [EXPERIMENT_MIME]: data,
    'text/html': experimentHtml(record, data.metric_name, data.log_tail),
    'text/plain': experimentText(record, data.metric_name, data.log_tail),
  };
}

/**
 * The bundle's own MIME data alone, for the panel, whose renderer shows that and never the
 * HTML or text fallback (building them was a tenth of an output's render).
 */
export function experimentData(record: ExperimentRecord, opts: BundleOptions = {}): ExperimentBundleData {
  const metric = opts.metric ?? 'val_bpb';
  const direction = opts.direction ?? 'lower';
  // Only a crash shows its log: for other outcomes the summary already says what happened.
  const logTail = record.status === 'crash' && opts.log ? tailLines(opts.log) : null;
  // proposal_meta is proposer-internal state, not something a reader of the notebook needs.
  const { type: _type, proposal_meta: meta, ...rest } = record;
  return {
    ...rest,
    metric_name: metric,
    direction,
    log_tail: logTail,
    ...shownNotes(proposalNotes(meta)),
  };
}

function experimentHtml(r: ExperimentRecord, metric: string, logTail: string | null): string {
  const e = escapeHtml;
  const cmp = comparison(r);
  const spr = spread(r);
  const header =
    `<p><b>#${r.n}</b> <code>${e(r.status)}</code> <b>${e(metric)} ${e(fmtMetric(r.metric))}</b>${spr ? ` ${e(spr)}` : ''}` +
    `${cmp ? ` ${e(cmp)}` : ''}${r.description ? ` — ${e(r.description)}` : ''}</p>`;
  const parts = [header];
  const notes = proposalNotes(r.proposal_meta);
  if (r.rationale) {
    parts.push(`<p><i>Why:</i> ${e(r.rationale)}</p>`);
  }
  const predicted = predictionWords(r, notes);
  if (predicted) {
    parts.push(`<p><i>Prediction:</i> ${e(predicted)}</p>`);
  }
  if (notes.lesson) {
    parts.push(`<p><i>Lesson on #${notes.lesson.about}:</i> ${e(notes.lesson.text)}</p>`);
  }
  if (r.reason) {
    parts.push(`<p><i>Reason:</i> ${e(r.reason)}</p>`);
  }
  const same = sameAsWords(r);
  if (same) {
    parts.push(`<p><i>Reused:</i> ${e(same)}</p>`);
  }
  const noise = verdictWords(r);
  if (noise) {
    parts.push(`<p><i>Noise:</i> ${e(noise)}</p>`);
  }
  const heading = runsHeading(r);
  if (heading && r.runs) {
    parts.push(
      `<details open><summary>${e(heading)}</summary>`,
      '<table>',
      '<tr><th>run</th><th>seed</th><th>metric</th><th>run time</th></tr>',
      ...r.runs.map(
        run =>
          `<tr><td>${run.k}${run.own === false ? ' (earlier)' : ''}</td><td>${run.seed}</td><td>${e(run.metric === null ? 'crashed' : fmtMetric(run.metric))}</td><td>${e(fmtSeconds(run.run_s))}</td></tr>`,
      ),
      '</table></details>',
    );
  }
  const cells = resourceCells(r);
  parts.push(
    '<table>',
    `<tr>${cells.map(([k]) => `<th>${e(k)}</th>`).join('')}</tr>`,
    `<tr>${cells.map(([, v]) => `<td>${e(v)}</td>`).join('')}</tr>`,
    '</table>',
  );
  if (r.diff) {
    // Kept experiments open their diff: they are the ones that changed the branch.
    parts.push(
      `<details${r.status === 'keep' ? ' open' : ''}><summary>diff (+${r.lines_added} −${r.lines_removed})</summary>`,
      `<pre><code>${e(r.diff.replace(/\n$/, ''))}</code></pre></details>`,
    );
  }
  if (logTail !== null) {
    parts.push(`<details open><summary>log tail</summary>`, `<pre><code>${e(logTail)}</code></pre></details>`);
  }
  if (notes.reasoning) {
    // Collapsed: it is long, and the description and rationale above say what was decided.
    const paragraphs = notes.reasoning.split(/\n\s*\n/).filter(p => p.trim());
    parts.push(
      `<details><summary>the model's reasoning${notes.effort ? ` (effort ${e(notes.effort)})` : ''}</summary>`,
      ...paragraphs.map(p => `<p>${e(p.trim()).replace(/\n/g, '<br>')}</p>`),
      '</details>',
    );
  }
  // The description, rationale and reasoning are a model's text, and a renderer of this fallback
  // (JupyterLab without this extension, nbconvert's page) typesets `$…$` in HTML outputs too: these
  // classes tell MathJax 3 and 4 (mathjax_ignore) and MathJax 2 (tex2jax_ignore) to leave it as text.
  return `<div class="${NO_MATH_CLASSES}">\n${parts.join('\n')}\n</div>`;
}

function experimentText(r: ExperimentRecord, metric: string, logTail: string | null): string {
  const cmp = comparison(r);
  const spr = spread(r);
  const lines = [
    `#${r.n} ${r.status}  ${metric} ${fmtMetric(r.metric)}${spr ? ` ${spr}` : ''}${cmp ? `  ${cmp}` : ''}  ${r.description}`,
  ];
  const notes = proposalNotes(r.proposal_meta);
  if (r.rationale) lines.push(`why: ${r.rationale}`);
  const predicted = predictionWords(r, notes);
  if (predicted) lines.push(`prediction: ${predicted}`);
  if (notes.lesson) lines.push(`lesson on #${notes.lesson.about}: ${notes.lesson.text}`);
  if (r.reason) lines.push(`reason: ${r.reason}`);
  const same = sameAsWords(r);
  if (same) lines.push(`reused: ${same}`);
  const noise = verdictWords(r);
  if (noise) lines.push(`noise: ${noise}`);
  const heading = runsHeading(r);
  if (heading && r.runs) lines.push(`${heading} — ${r.runs.map(run => `k${run.k} ${runWords(run)}`).join(' · ')}`);
  lines.push(
    resourceCells(r)
      .map(([k, v]) => `${k} ${v}`)
      .join(' · '),
  );
  if (r.diff) lines.push('', r.diff.replace(/\n$/, ''));
  if (logTail !== null) lines.push('', 'log tail:', logTail);
  if (notes.reasoning) {
    const one = notes.reasoning.replace(/\s+/g, ' ').trim();
    const shown = one.length > REASONING_PLAIN_CHARS ? `${one.slice(0, REASONING_PLAIN_CHARS - 1)}…` : one;
    lines.push('', `reasoning${notes.effort ? ` (effort ${notes.effort})` : ''}: ${shown}`);
  }
  return lines.join('\n');
}
