/**
 * The run's memory as the model reads it: every experiment as one line with its diagnostics
 * (steps, parameters, tokens, seconds, peak memory, final loss), its delta also in σ, the model's
 * prediction and the lesson it drew; the lines in append-only chunks of CHUNK, so that a chunk,
 * once full, reads the same in every later prompt and stays cached. Beside them, what moves: a
 * tally of the directions tried, the latest lessons, how well the predictions did, and the last
 * few experiments in full.
 */
import * as z from 'zod/mini';
import { proposalNotes, type ExperimentRecord } from '../../../core/journal/journal';
import { fmtNoise } from '../../../core/rule/noise';
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
/** Experiments shown in full (diff, rationale, reason). */
export const RECENT_FULL = 6;
/** Lessons repeated in the moving part (all of them are in the lines too). */
const RECENT_LESSONS = 12;
/** Directions listed in the tally, the most tried first. */
const MAX_DIRECTIONS = 40;
const DIFF_CHARS = 3000;

/** The one-line format, said once in the cached prefix. */
export const LINE_LEGEND =
  'Each line: #n status metric (delta vs the best before it, the same in σ; your expected delta) · steps · parameters · tokens seen · training seconds · peak memory · final training loss · description [why it failed] — the lesson you drew then.';

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

/** `(+0.002100, +1.1σ; expected −0.004000)`: the σ is the one the decision was made with, so the line never changes. */
function deltaPart(r: ExperimentRecord): string {
  const expected = proposalNotes(r.proposal_meta).expected_delta;
  const parts: string[] = [];
  if (r.delta !== null) {
    const sigma = r.verdict?.sigma;
    parts.push(
      sigma
        ? `${signed(r.delta)}, ${r.delta >= 0 ? '+' : '−'}${Math.abs(r.delta / sigma).toFixed(1)}σ`
        : signed(r.delta),
    );
  }
  if (expected !== undefined) parts.push(`expected ${signed(expected)}`);
  return parts.length ? ` (${parts.join('; ')})` : '';
}

/** One experiment in one line; it depends on the record alone, so a full chunk never changes. */
export function entryLine(r: ExperimentRecord): string {
  const notes = proposalNotes(r.proposal_meta);
  const runs = r.runs?.filter(x => x.metric !== null).length ?? 1;
  const metric = r.metric !== null ? `${fmt(r.metric)}${runs > 1 ? ` mean of ${runs}` : ''}${deltaPart(r)}` : '—';
  const diag = diagnostics(r);
  const why = r.status !== 'keep' && r.status !== 'discard' && r.reason ? ` [${clip(r.reason, 100)}]` : '';
  const lesson = notes.lesson ? ` — lesson on #${notes.lesson.about}: ${clip(notes.lesson.text, 160)}` : '';
  return `#${r.n} ${r.status} ${metric}${diag ? ` · ${diag}` : ''} · ${clip(r.description, 120)}${why}${lesson}`;
}

/** The history's lines: the full chunks (each CHUNK lines, never changing) and the chunk still filling. */
export function historyChunks(history: ExperimentRecord[]): { full: string[]; filling: string } {
  const lines = history.map(entryLine);
  const whole = Math.floor(lines.length / CHUNK);
  const full = Array.from({ length: whole }, (_, i) => lines.slice(i * CHUNK, (i + 1) * CHUNK).join('\n'));
  return { full, filling: lines.slice(whole * CHUNK).join('\n') };
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

/** The directions tried, most tried first: tries, keeps, crashes, the best and worst delta, the values set. */
export function directionTally(history: ExperimentRecord[], direction: 'lower' | 'higher'): string | null {
  const sign = direction === 'lower' ? 1 : -1;
  const by = new Map<string, Tally>();
  for (const r of history) {
    if (r.n === 0) continue;
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
  if (!by.size) return null;
  const rows = [...by].sort((a, b) => b[1].tries - a[1].tries);
  const shown = rows.slice(0, MAX_DIRECTIONS).map(([key, t]) => {
    const counts = [t.keeps && `${t.keeps} keep`, t.crashes && `${t.crashes} crash`].filter(Boolean).join(', ');
    const range =
      t.best && t.worst
        ? `; best ${signed(t.best.delta as number)} at #${t.best.n}${t.worst !== t.best ? `, worst ${signed(t.worst.delta as number)} at #${t.worst.n}` : ''}`
        : '';
    const values = t.values.length ? `; values ${t.values.slice(-8).join(', ')}` : '';
    return `- ${key}: ${t.tries} tr${t.tries === 1 ? 'y' : 'ies'}${counts ? ` (${counts})` : ''}${range}${values}`;
  });
  const more = rows.length - shown.length;
  return [
    '## Directions tried, by the constant changed (or the idea named), the most tried first',
    ...shown,
    ...(more > 0 ? [`- … and ${more} more direction(s), each tried less often`] : []),
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
    `## Your latest lessons${lessons.length > shown.length ? ` (${shown.length} of ${lessons.length}; all are in the lines above)` : ''}`,
    ...shown,
  ].join('\n');
}

/** How the model's expected deltas compared with the outcomes: direction right, typical miss. */
export function predictionLine(history: ExperimentRecord[]): string | null {
  const pairs = history.flatMap(r => {
    const e = proposalNotes(r.proposal_meta).expected_delta;
    return e !== undefined && r.delta !== null ? [{ e, d: r.delta, sigma: r.verdict?.sigma ?? null }] : [];
  });
  if (!pairs.length) return null;
  const right = pairs.filter(p => Math.sign(p.e) === Math.sign(p.d)).length;
  const misses = pairs.map(p => Math.abs(p.e - p.d)).sort((a, b) => a - b);
  const median = misses[Math.floor(misses.length / 2)];
  const sigma = pairs.at(-1)?.sigma;
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
