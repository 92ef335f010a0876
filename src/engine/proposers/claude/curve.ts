/**
 * What a run's log shows of its training: a few points of the loss curve and the step time, so
 * the model can tell a slower step from a worse idea, and a diverging run from a slow one. A log
 * may be flooded (a run prints what it likes): only a head and a tail window are read, never the
 * whole file, each line cut short before it is matched (src/core/config/log-pattern.ts). A
 * finished log does not change, so each is read once per pattern.
 */
import * as fs from 'node:fs';
import type { ExperimentRecord } from '../../../core/journal/journal';
import {
  compileLogPattern,
  DEFAULT_LOG_PATTERN,
  type LineFacts,
  type LogPattern,
} from '../../../core/config/log-pattern';
import { openStateFile } from '../../workspace/workspace-files';

/** Bytes read from each end of a log. */
export const WINDOW_BYTES = 64 * 1024;
/** Points of the curve shown. */
export const CURVE_POINTS = 7;

export interface CurvePoint {
  /** The step it printed, or the line's order among the loss lines when it printed none. */
  step: number;
  loss: number;
}

/** A run's training as its log shows it. */
export interface RunCurve {
  /** Evenly spaced over the steps, the first and the last included; at most CURVE_POINTS. */
  points: CurvePoint[];
  /** Median milliseconds per step, from the log (or the summary); null when neither says. */
  msPerStep: number | null;
  /** Whether the middle of the log was not read (a log larger than both windows). */
  cut: boolean;
}

const cache = new Map<string, RunCurve | null>();
let active: LogPattern = DEFAULT_LOG_PATTERN;

/** Reads logs with program.md's `log_pattern` from now on (null: the defaults); a bad template falls back to them. */
export function useLogPattern(template: string | null | undefined): void {
  if ((template ?? null) === (active === DEFAULT_LOG_PATTERN ? null : active.template)) return;
  try {
    active = template ? compileLogPattern(template) : DEFAULT_LOG_PATTERN;
  } catch {
    // program.md's check refuses a bad template before the run starts; a log is still read with the defaults.
    active = DEFAULT_LOG_PATTERN;
  }
}

/** The lines of a log's head and tail windows before its `---` summary, and whether its middle was left out. */
export function logWindows(file: string, window = WINDOW_BYTES): { lines: string[]; cut: boolean } {
  const fd = openStateFile(file);
  try {
    const size = fs.fstatSync(fd).size;
    const read = (at: number, n: number) => {
      const buf = Buffer.alloc(n);
      const got = fs.readSync(fd, buf, 0, n, at);
      return buf.subarray(0, got).toString('utf8');
    };
    const cut = size > 2 * window;
    let lines: string[];
    if (!cut) lines = read(0, size).split(/\r\n|\r|\n/);
    else {
      // A window's line cut at its edge is left out: half a number would read as another one.
      const head = read(0, window)
        .split(/\r\n|\r|\n/)
        .slice(0, -1);
      const tail = read(size - window, window)
        .split(/\r\n|\r|\n/)
        .slice(1);
      lines = [...head, ...tail];
    }
    const summary = lines.lastIndexOf('---');
    return { lines: summary >= 0 ? lines.slice(0, summary) : lines, cut };
  } finally {
    fs.closeSync(fd);
  }
}

const median = (xs: number[]): number | null => {
  if (!xs.length) return null;
  const s = [...xs].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 ? s[mid] : (s[mid - 1] + s[mid]) / 2;
};

/** The curve and step time of the loss lines a pattern read (pure; runCurve reads the file). */
export function curveFrom(facts: LineFacts[], cut = false): RunCurve | null {
  const rows = facts.filter(f => f.loss !== undefined);
  if (!rows.length) return null;
  const all: CurvePoint[] = rows.map((f, i) => ({ step: f.step ?? i + 1, loss: f.loss as number }));
  return { points: spread(all), msPerStep: stepMs(rows), cut };
}

/** At most CURVE_POINTS of the points, nearest to evenly spaced steps from the first to the last. */
export function spread(all: CurvePoint[], k = CURVE_POINTS): CurvePoint[] {
  if (all.length <= k) return all;
  const first = all[0].step;
  const last = all[all.length - 1].step;
  const picked = new Set<number>();
  let j = 0;
  for (let i = 0; i < k; i++) {
    const target = first + ((last - first) * i) / (k - 1);
    while (j + 1 < all.length && Math.abs(all[j + 1].step - target) <= Math.abs(all[j].step - target)) j++;
    picked.add(j);
  }
  // Steps that did not rise (a restart, no step printed) leave the picks short: fill evenly by order.
  if (picked.size < Math.min(k, 3))
    return Array.from({ length: k }, (_, i) => all[Math.round((i * (all.length - 1)) / (k - 1))]);
  return [...picked].sort((a, b) => a - b).map(i => all[i]);
}

/** Milliseconds per step: printed (ms, or s), else from the seconds elapsed between the first and last step. */
function stepMs(rows: LineFacts[]): number | null {
  // The first line's time often holds compilation and warm-up: left out when there are others.
  const later = rows.length > 2 ? rows.slice(1) : rows;
  const ms = median(later.flatMap(f => (f.ms !== undefined && f.ms > 0 ? [f.ms] : [])));
  if (ms !== null) return ms;
  const s = median(later.flatMap(f => (f.s !== undefined && f.s > 0 ? [f.s * 1000] : [])));
  if (s !== null) return s;
  const timed = rows.filter(f => f.elapsed !== undefined && f.step !== undefined);
  if (timed.length >= 2) {
    const a = timed[0];
    const b = timed[timed.length - 1];
    const steps = (b.step as number) - (a.step as number);
    const secs = (b.elapsed as number) - (a.elapsed as number);
    if (steps > 0 && secs > 0) return (secs * 1000) / steps;
  }
  return null;
}

/** The curve of one log, read with the active pattern, once; null when unreadable or it printed no loss. */
export function runCurve(file: string | null): RunCurve | null {
  if (!file) return null;
  const key = `${active.template}\u0000${file}`;
  if (cache.has(key)) return cache.get(key) ?? null;
  let curve: RunCurve | null;
  try {
    const { lines, cut } = logWindows(file);
    const facts: LineFacts[] = [];
    for (const line of lines) {
      const f = active.read(line);
      if (f) facts.push(f);
    }
    curve = curveFrom(facts, cut);
  } catch {
    // Unreadable (gone, a link, a FIFO): nothing to show, and nothing cached, so a later read may succeed.
    return null;
  }
  cache.set(key, curve);
  return curve;
}

/** An experiment's curve (its first run's log), its step time falling back on the summary's seconds and steps. */
export function curveOf(r: ExperimentRecord): RunCurve | null {
  const curve = runCurve(r.log_path);
  if (curve?.msPerStep != null) return curve;
  const steps = r.summary.num_steps;
  const secs = r.summary.training_seconds;
  const ms =
    typeof steps === 'number' && typeof secs === 'number' && steps > 0 && secs > 0 ? (secs * 1000) / steps : null;
  if (ms === null) return curve;
  return curve ? { ...curve, msPerStep: ms } : { points: [], msPerStep: ms, cut: false };
}

/** `41.2 ms/step` (3 significant digits). */
export function fmtStep(ms: number): string {
  return `${Number(ms.toPrecision(3))} ms/step`;
}

/** `step 1: 5.545 · 120: 3.210 · …`, the loss to 4 significant digits. */
export function fmtCurve(c: RunCurve): string {
  const pts = c.points.map(p => `${p.step}: ${Number(p.loss.toPrecision(4))}`).join(' · ');
  return `${pts}${c.cut ? ' (a flooded log: its middle was not read)' : ''}`;
}
