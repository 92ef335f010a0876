/**
 * The run's memory as the model reads it. Every experiment as one line with its diagnostics
 * (steps, parameters, tokens, seconds, peak memory, final loss), its delta and runs (each run's
 * metric), the model's prediction and the lesson it drew; the lines in append-only chunks of
 * CHUNK, so that a chunk, once full, reads the same in every later prompt and stays cached. Past
 * WINDOW lines the oldest fold, FOLD at a time, into per-direction summaries, each a pure function
 * of its FOLD records: a 1,400-experiment prompt stays near 40k tokens and the folded blocks stay
 * cached until the next fold. A cached line never carries a σ (σ moves as repeats are measured):
 * σ-multiples are in the moving part only, with today's σ — the keeps, the near-misses, the
 * predictions. Beside them, what moves: a tally of the directions tried, the latest lessons, and
 * the last few experiments in full.
 */
import * as z from 'zod/mini';
import { proposalNotes, type ExperimentRecord } from '../../../core/journal/journal';
import { nearMisses, runsOf } from '../../../core/rule/near-miss';
import { differenceError, fmtNoise, type Direction } from '../../../core/rule/noise';
import { englishMessages } from '../../../core/journal/zod-english';
import { curveOf, fmtCurve, fmtStep } from './curve';
import { clip, lossOf } from './facts';

englishMessages();

const FixMeta = z.looseObject({ fix_of: z.optional(z.int()) });

/** The fix_of recorded in a record's proposal meta, if any. */
export function fixOf(r: ExperimentRecord): number | undefined {
  const m = FixMeta.safeParse(r.proposal_meta);
  return m.success ? m.data.fix_of : undefined;
}

/** Lines per chunk of the history: the chunk still filling is re-sent each proposal, the full ones are read from the cache. */
export const CHUNK = 25;
/** Experiments folded at once into one summary block; a multiple of CHUNK, so chunks stay aligned. */
export const FOLD = 200;
/** Lines always kept one per experiment; the window holds WINDOW to WINDOW + FOLD − 1 of them. */
export const WINDOW = 300;
/** Near-misses listed in the moving part. */
const NEAR_MISSES = 6;
/** Values listed per direction of a folded block. */
const FOLD_VALUES = 12;
/** Experiments shown in full (diff, rationale, reason). */
export const RECENT_FULL = 6;
/** Lessons repeated in the moving part (all of them are in the lines too). */
const RECENT_LESSONS = 12;
/** Directions listed in the tally, the most tried first. */
const MAX_DIRECTIONS = 40;
const DIFF_CHARS = 3000;

/** The one-line format, said once in the cached prefix. */
export const LINE_LEGEND =
  "Each line: #n status metric (delta vs the best before it in the metric's units; your expected delta) · steps · parameters · tokens seen · training seconds · peak memory · final training loss · ms per step · each run's metric when it ran more than once · description [why it failed] — the lesson you drew then. The lines carry no σ, which moves as repeats are measured: σ-multiples are given with today's σ, in the keeps, the near-misses and where the run stands. The oldest experiments are folded by direction, 200 at a time.";

const num = (v: unknown): number | null => (typeof v === 'number' && Number.isFinite(v) ? v : null);
const fmt = (v: number | null) => (v === null ? '—' : v.toFixed(6));
const signed = (v: number) => (v >= 0 ? '+' : '−') + Math.abs(v).toFixed(6);

/** `steps 4120 · 0.41M params · 1.3M tok · 60.1 s · peak 1.2 GB · loss 1.92 · 14.6 ms/step · runs 4.85 / 6.46 / 4.87`, from what the run reported and its log. */
export function diagnostics(r: ExperimentRecord): string {
  const s = r.summary;
  const parts: string[] = [];
  const steps = num(s.num_steps);
  if (steps !== null) parts.push(`steps ${steps}`);
  const params = num(s.num_params_M);
  if (params !== null) parts.push(`${params}M params`);
  const tokens = num(s.total_tokens_M);
  if (tokens !== null) parts.push(`${tokens}M tok`);
  const secs = num(s.training_seconds);
  if (secs !== null) parts.push(`${secs} s`);
  const peak = num(s.peak_vram_mb);
  if (peak !== null && peak > 0) parts.push(`peak ${(peak / 1024).toFixed(1)} GB`);
  const mfu = num(s.mfu_percent);
  if (mfu !== null && mfu > 0) parts.push(`mfu ${mfu}%`);
  const loss = lossOf(r);
  if (loss !== null) parts.push(`loss ${loss}`);
  const ms = curveOf(r)?.msPerStep;
  if (ms != null) parts.push(fmtStep(ms));
  // Each run's own metric: a mean ± se hides a run that went wrong (4.85 / 6.46 / 4.87).
  const runs = r.runs?.filter(x => x.metric !== null) ?? [];
  if (runs.length > 1) parts.push(`runs ${runs.map(x => fmtRun(x.metric as number)).join(' / ')}`);
  return parts.join(' · ');
}

/** A run's metric to 6 significant digits, as the summary block prints it. */
const fmtRun = (v: number) => String(Number(v.toPrecision(6)));

/** `(−0.002100; expected −0.004000)`: what the record holds, no σ, so the line never changes (each run's metric is in the diagnostics). */
function deltaPart(r: ExperimentRecord): string {
  const expected = proposalNotes(r.proposal_meta).expected_delta;
  const parts: string[] = [];
  if (r.delta !== null) parts.push(signed(r.delta));
  if (expected !== undefined) parts.push(`expected ${signed(expected)}`);
  return parts.length ? ` (${parts.join('; ')})` : '';
}

/** One experiment in one line; it depends on the record alone, so a full chunk never changes. */
export function entryLine(r: ExperimentRecord): string {
  const notes = proposalNotes(r.proposal_meta);
  const runs = runsOf(r);
  const metric = r.metric !== null ? `${fmt(r.metric)}${runs > 1 ? ` mean of ${runs}` : ''}${deltaPart(r)}` : '—';
  const diag = diagnostics(r);
  const why = r.status !== 'keep' && r.status !== 'discard' && r.reason ? ` [${clip(r.reason, 100)}]` : '';
  const lesson = notes.lesson ? ` — lesson on #${notes.lesson.about}: ${clip(notes.lesson.text, 160)}` : '';
  return `#${r.n} ${r.status} ${metric}${diag ? ` · ${diag}` : ''} · ${clip(r.description, 120)}${why}${lesson}`;
}

/** How many of the oldest experiments are folded: whole FOLDs, leaving at least WINDOW lines. */
export function foldedCount(length: number): number {
  return Math.max(0, Math.floor((length - WINDOW) / FOLD)) * FOLD;
}

/** The history as cached blocks: the folded summaries, the full chunks of lines after them, and the chunk still filling. */
export function historyChunks(
  history: ExperimentRecord[],
  direction: Direction = 'lower',
): { folds: string[]; full: string[]; filling: string } {
  const folded = foldedCount(history.length);
  const folds = Array.from({ length: folded / FOLD }, (_, i) =>
    foldBlock(history.slice(i * FOLD, (i + 1) * FOLD), direction),
  );
  const lines = history.slice(folded).map(entryLine);
  const whole = Math.floor(lines.length / CHUNK);
  const full = Array.from({ length: whole }, (_, i) => lines.slice(i * CHUNK, (i + 1) * CHUNK).join('\n'));
  return { folds, full, filling: lines.slice(whole * CHUNK).join('\n') };
}

/** Whether an experiment ran: kept, discarded or crashed, not a duplicate rejected before running nor an abandoned proposal. */
export function ran(r: ExperimentRecord): boolean {
  return (r.status === 'keep' || r.status === 'discard' || r.status === 'crash') && r.same_as === undefined;
}

/** FOLD experiments in one block: what ran, by direction; a pure function of them, so it never changes. */
export function foldBlock(records: ExperimentRecord[], direction: Direction): string {
  const count = (s: string) => records.filter(r => ran(r) && r.status === s).length;
  const did = records.filter(ran).length;
  const rows = tallyRows(records, direction, FOLD_VALUES);
  return [
    `## #${records[0].n}–#${records[records.length - 1].n} folded: ${records.length} experiments, ${did} ran (${count('keep')} keep, ${count('discard')} discard, ${count('crash')} crash)` +
      (did < records.length ? `, ${records.length - did} did not run` : ''),
    ...rows,
  ].join('\n');
}

/** The constants an experiment's diff changed, with the value it set (`LEARNING_RATE` → `0.0004`). */
export function changedConstants(diff: string): Array<{ name: string; to: string | null }> {
  const from = new Map<string, string>();
  const to = new Map<string, string>();
  for (const line of diff.split('\n')) {
    const m = /^([-+])([A-Z][A-Z0-9_]*)\s*(?::[^=]+)?=(?!=)\s*(.*?)\s*(?:#.*)?$/.exec(line);
    if (!m || line.startsWith('---') || line.startsWith('+++')) continue;
    (m[1] === '-' ? from : to).set(m[2], m[3]);
  }
  const names = [...new Set([...from.keys(), ...to.keys()])];
  return names.filter(n => from.get(n) !== to.get(n)).map(n => ({ name: n, to: to.get(n) ?? null }));
}

/** What an experiment explored: the constants it changed, else the idea its proposal named. */
export function directionsOf(r: ExperimentRecord): Array<{ key: string; value: string | null }> {
  const consts = changedConstants(r.diff);
  if (consts.length) return consts.map(c => ({ key: c.name, value: c.to }));
  const idea = proposalNotes(r.proposal_meta).direction;
  return idea ? [{ key: clip(idea.toLowerCase(), 48), value: null }] : [];
}

interface Tally {
  tries: number;
  keeps: number;
  crashes: number;
  best: ExperimentRecord | null;
  worst: ExperimentRecord | null;
  values: string[];
}

/** One row per direction, the most tried first: tries, keeps, crashes, the best and worst delta, the last `values` values set. Only what ran counts. */
function tallyRows(history: readonly ExperimentRecord[], direction: Direction, values: number): string[] {
  const sign = direction === 'lower' ? 1 : -1;
  const by = new Map<string, Tally>();
  for (const r of history) {
    if (r.n === 0 || !ran(r)) continue;
    for (const d of directionsOf(r)) {
      const t = by.get(d.key) ?? { tries: 0, keeps: 0, crashes: 0, best: null, worst: null, values: [] };
      t.tries++;
      if (r.status === 'keep') t.keeps++;
      if (r.status === 'crash') t.crashes++;
      if (r.delta !== null) {
        if (!t.best || sign * r.delta < sign * (t.best.delta as number)) t.best = r;
        if (!t.worst || sign * r.delta > sign * (t.worst.delta as number)) t.worst = r;
      }
      if (d.value !== null && !t.values.includes(d.value)) t.values.push(d.value);
      by.set(d.key, t);
    }
  }
  return [...by]
    .sort((a, b) => b[1].tries - a[1].tries)
    .map(([key, t]) => {
      const counts = [t.keeps && `${t.keeps} keep`, t.crashes && `${t.crashes} crash`].filter(Boolean).join(', ');
      const range =
        t.best && t.worst
          ? `; best ${signed(t.best.delta as number)} at #${t.best.n}${t.worst !== t.best ? `, worst ${signed(t.worst.delta as number)} at #${t.worst.n}` : ''}`
          : '';
      const vals = t.values.length ? `; values ${t.values.slice(-values).join(', ')}` : '';
      return `- ${key}: ${t.tries} tr${t.tries === 1 ? 'y' : 'ies'}${counts ? ` (${counts})` : ''}${range}${vals}`;
    });
}

/** The directions tried over the whole run, most tried first; only experiments that ran count as tries. */
export function directionTally(history: ExperimentRecord[], direction: Direction): string | null {
  const rows = tallyRows(history, direction, 8);
  if (!rows.length) return null;
  const shown = rows.slice(0, MAX_DIRECTIONS);
  const more = rows.length - shown.length;
  return [
    '## Directions tried (experiments that ran), by the constant changed (or the idea named), the most tried first',
    ...shown,
    ...(more > 0 ? [`- … and ${more} more direction(s), each tried less often`] : []),
  ].join('\n');
}

/**
 * Every keep, the oldest first: its delta and runs, its description and the rationale that proved
 * right. It changes only on a keep (as the editable files do), so it is cached with them; its
 * σ-multiples, which move with σ, are keepSigmas' line in the moving part.
 */
export function keepsBlock(history: ExperimentRecord[]): string | null {
  const keeps = history.filter(r => r.status === 'keep' && r.n !== 0 && r.delta !== null);
  if (!keeps.length) return null;
  const lines = keeps.map(r => {
    const runs = runsOf(r);
    const why = r.rationale ? ` — ${clip(r.rationale, 120)}` : '';
    return `- #${r.n} ${signed(r.delta as number)} (${runs} run${runs === 1 ? '' : 's'} vs ${r.verdict?.best_runs ?? 1}): ${clip(r.description, 100)}${why}`;
  });
  return [
    "# Every keep, the oldest first: delta vs the best before it, runs vs the best's, what it changed — why it was tried",
    ...lines,
  ].join('\n');
}

/** Each keep's delta ± the standard error of the difference and its σ-multiple, with today's σ (the σ it was judged with has moved since). */
export function keepSigmas(history: ExperimentRecord[], sigma: number | null, keepSigma: number): string | null {
  const keeps = history.filter(r => r.status === 'keep' && r.n !== 0 && r.delta !== null);
  if (!keeps.length || !sigma) return null;
  const items = keeps.map(r => {
    const se = differenceError(sigma, runsOf(r), Math.max(1, r.verdict?.best_runs ?? 1));
    const z = Math.abs(r.delta as number) / se;
    return `#${r.n} ±${fmtNoise(se)} ${z.toFixed(1)}σ${z <= keepSigma ? ' weak' : ''}`;
  });
  const weak = items.filter(i => i.endsWith(' weak')).length;
  return [
    `## The keeps in today's σ (${fmtNoise(sigma)}): the standard error of each delta above, its σ-multiple; ${weak} of ${keeps.length} would not clear ${keepSigma}σ today (weak: worth a re-test or an ablation)`,
    items.join(' · '),
  ].join('\n');
}

/** The best near-misses (better than the best before them, within noise), ranked in today's σ. */
export function nearMissBlock(history: ExperimentRecord[], direction: Direction, sigma: number | null): string | null {
  const misses = nearMisses(history, direction, sigma).slice(0, NEAR_MISSES);
  if (!misses.length) return null;
  const lines = misses.map(({ record: r, z }) => {
    const runs = runsOf(r);
    return `- #${r.n} ${signed(r.delta as number)} (${runs} run${runs === 1 ? '' : 's'} vs ${r.verdict?.best_runs ?? 1}${z !== null ? `, ${z.toFixed(1)}σ today` : ''}): ${clip(r.description, 100)}`;
  });
  return [
    '## Near-misses: better than the best before them, but within noise; the most promising first (a re-test or a combination may pay)',
    ...lines,
  ].join('\n');
}

/** The latest lessons, the newest last. */
export function recentLessons(history: ExperimentRecord[]): string | null {
  const lessons = history.flatMap(r => {
    const l = proposalNotes(r.proposal_meta).lesson;
    return l ? [`- on #${l.about} (written with #${r.n}): ${clip(l.text, 300)}`] : [];
  });
  if (!lessons.length) return null;
  const shown = lessons.slice(-RECENT_LESSONS);
  return [
    `## Your latest lessons${lessons.length > shown.length ? ` (${shown.length} of ${lessons.length}; the others are in the lines above, or folded)` : ''}`,
    ...shown,
  ].join('\n');
}

/** How the model's expected deltas compared with the outcomes: direction right, typical miss (in today's σ). */
export function predictionLine(history: ExperimentRecord[], sigma: number | null = null): string | null {
  const pairs = history.flatMap(r => {
    const e = proposalNotes(r.proposal_meta).expected_delta;
    return e !== undefined && r.delta !== null ? [{ e, d: r.delta }] : [];
  });
  if (!pairs.length) return null;
  const right = pairs.filter(p => Math.sign(p.e) === Math.sign(p.d)).length;
  const misses = pairs.map(p => Math.abs(p.e - p.d)).sort((a, b) => a - b);
  const median = misses[Math.floor(misses.length / 2)];
  return `Your predictions: ${right} of ${pairs.length} had the sign right; the median miss is ${median.toFixed(6)}${sigma ? ` (${(median / sigma).toFixed(1)}σ)` : ''}.`;
}

/** One experiment in full: its line's facts, description, rationale, reason and diff. */
export function fullEntry(r: ExperimentRecord): string {
  const notes = proposalNotes(r.proposal_meta);
  const fix = fixOf(r);
  const metric =
    r.metric !== null
      ? `${fmt(r.metric)}${r.verdict?.se ? ` ±${fmtNoise(r.verdict.se)}` : ''}${r.delta !== null ? ` (${signed(r.delta)} vs best ${fmt(r.best_before)})` : ''}`
      : '—';
  const lines = [`### #${r.n} ${r.status}${fix !== undefined ? ` (fix attempt for #${fix})` : ''}: ${metric}`];
  const diag = diagnostics(r);
  if (diag) lines.push(`Diagnostics: ${diag}`);
  const curve = curveOf(r);
  if (curve?.points.length) lines.push(`Training loss by step: ${fmtCurve(curve)}`);
  lines.push(`Description: ${r.description}`);
  if (notes.expected_delta !== undefined) lines.push(`Expected delta: ${signed(notes.expected_delta)}`);
  if (r.rationale) lines.push(`Rationale: ${clip(r.rationale, 500)}`);
  if (r.reason) lines.push(`Reason: ${clip(r.reason, 300)}`);
  if (r.diff.trim()) {
    const diff =
      r.diff.length > DIFF_CHARS
        ? `${r.diff.slice(0, DIFF_CHARS)}\n… (diff cut at ${DIFF_CHARS} of ${r.diff.length} characters)`
        : r.diff;
    lines.push('```diff\n' + diff.trimEnd() + '\n```');
  }
  return lines.join('\n');
}
