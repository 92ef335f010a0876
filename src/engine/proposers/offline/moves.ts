/**
 * The moves of the offline proposer: how one constant steps (coarse, finer, a
 * larger jump) without leaving the values that make sense for it, how a move is
 * recorded in the journal, the canonical key of a state and the seeded PRNG that
 * breaks ties. No search here; that lives in proposer.ts.
 */
import * as z from 'zod/mini';
import { KnobRulesMeta } from '../../../core/step-mode/knob-notes';
import type { ExperimentRecord } from '../../../core/journal/journal';
import { englishMessages } from '../../../core/journal/zod-english';
import { formatPythonNumber, parseConstants, type PyConstant } from './python-constants';

englishMessages();

export type Direction = 'up' | 'down';
/** file → constant name → value. */
export type ConstantState = Record<string, Record<string, number>>;

// Coarse to fine: a direction whose ×2 failed is retried at ×1.5, then ×1.2, then ×1.1.
export const FACTORS = [2, 1.5, 1.2, 1.1];
/** Levels below this make up the one-step neighbourhood; finer ones come after it. */
export const NEIGHBOURHOOD_LEVELS = 3;
// A float at zero has no scale to multiply; it only steps up, by these amounts.
const ZERO_STEPS = [0.1, 0.05, 0.02, 0.01];
// Ints below this step by ±1; larger ones (step counts, widths) scale like floats.
const SMALL_INT = 20;
const isPowerOfTwo = (x: number): boolean => x >= 2 && Number.isInteger(Math.log2(x));

/**
 * How a constant moves, fixed by its value when tuning began so that an int
 * stepping 3 → 4 does not turn into a power of two that only doubles, and a
 * float halved from 2.0 to 0.5 may still grow past 1. `unit` is a float that
 * began in [0, 1) (a rate, a ratio, a beta): it stays in (0, 1).
 */
export type Kind = 'unit' | 'float' | 'pow2' | 'count' | 'large';

/** The kind of a constant whose starting value is `value`. */
export function kindOf(value: number, isInt: boolean): Kind {
  if (!isInt) {
    return value >= 0 && value < 1 ? 'unit' : 'float';
  }
  return isPowerOfTwo(value) ? 'pow2' : value < SMALL_INT ? 'count' : 'large';
}

/** One step of a value: the new value and how to say it (`×2`, `+1`). */
export interface Step {
  value: number;
  label: string;
}

export const sig = (x: number, digits: number): number => Number(x.toPrecision(digits));
const factorLabel = (x: number): string => `×${sig(x, 2)}`;

/**
 * The value one step from `value` in a direction at a level (0 = coarsest), or
 * null where that step does not exist or would be nonsense. Ints stay ints and
 * never drop below 1 (below 0 if they start at 0); powers of two stay powers of
 * two; `unit` floats stay in (0, 1); other floats keep their sign.
 */
export function stepValue(value: number, kind: Kind, direction: Direction, level: number): Step | null {
  const up = direction === 'up';
  const factor = FACTORS[level];
  if (factor === undefined) {
    return null;
  }
  if (kind === 'pow2') {
    const next = up ? value * 2 : value / 2;
    return level === 0 && next >= 1 ? { value: next, label: up ? '×2' : '×0.5' } : null;
  }
  if (kind === 'count') {
    const next = value + (up ? 1 : -1);
    return level === 0 && next >= Math.min(value, 1) ? { value: next, label: up ? '+1' : '−1' } : null;
  }
  if (kind === 'large') {
    // Two significant digits keep step counts and widths round (5000 → 3300, not 3333).
    const next = Math.round(sig(up ? value * factor : value / factor, 2));
    return next >= 1 && next !== value ? { value: next, label: factorLabel(up ? factor : 1 / factor) } : null;
  }
  if (value === 0) {
    return up ? { value: ZERO_STEPS[level], label: `+${ZERO_STEPS[level]}` } : null;
  }
  if (kind === 'unit' && (up ? value >= 0.5 : value > 0.5)) {
    // Near 1 (a beta, a keep probability) scale the distance to 1 instead, so
    // the value approaches 1 without reaching it.
    const distance = sig(up ? (1 - value) / factor : (1 - value) * factor, 3);
    return { value: sig(1 - distance, 12), label: `distance to 1 ${factorLabel(up ? 1 / factor : factor)}` };
  }
  // A negative value goes up by shrinking towards zero.
  const grow = up === value > 0;
  return { value: sig(grow ? value * factor : value / factor, 3), label: factorLabel(grow ? factor : 1 / factor) };
}

/**
 * A larger jump: the coarse step taken twice (×4 for most values, ±2 for small
 * ints), so it keeps every rule the coarse step keeps. Null where the coarse
 * step does not exist twice over.
 */
export function jumpValue(value: number, kind: Kind, direction: Direction): Step | null {
  const first = stepValue(value, kind, direction, 0);
  const second = first && stepValue(first.value, kind, direction, 0);
  if (!first || !second || second.value === value) {
    return null;
  }
  return { value: second.value, label: doubledLabel(first.label, second.label) };
}

/** `×2` twice is `×4`, `+1` twice is `+2`; steps that changed form read `a then b`. */
function doubledLabel(a: string, b: string): string {
  const m = /^(.*?)([×+−])([\d.]+)$/.exec(a);
  if (a !== b || !m) {
    return `${a} then ${b}`;
  }
  const x = Number(m[3]);
  return `${m[1]}${m[2]}${m[2] === '×' ? sig(x * x, 2) : sig(x * 2, 2)}`;
}

/** A canonical string of a state, the same for equal states whatever their key order. */
export function stateKey(state: ConstantState): string {
  return JSON.stringify(
    Object.keys(state)
      .sort()
      .map(file => [
        file,
        Object.keys(state[file])
          .sort()
          .map(name => [name, state[file][name]]),
      ]),
  );
}

/** A small seeded PRNG (mulberry32), so tie-breaks are reproducible. */
export function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** A metric change as val_bpb reads: four decimals, but a tiny one should not read as 0.0000. */
export function formatDelta(d: number, signed = false): string {
  const a = Math.abs(d);
  const body = a >= 1e-4 || a === 0 ? a.toFixed(4) : a.toPrecision(2);
  return signed ? `${d < 0 ? '-' : '+'}${body}` : body;
}

/** One constant's change; `jump` marks the coarse step taken twice (level 0). */
export const OfflineChange = z.object({
  file: z.string(),
  name: z.string(),
  from: z.number(),
  to: z.number(),
  direction: z.enum(['up', 'down']),
  level: z.int().check(z.nonnegative()),
  jump: z.optional(z.literal(true)),
});
export type OfflineChange = z.infer<typeof OfflineChange>;

/**
 * What the offline proposer stores as each experiment's proposal_meta: the full
 * state after the experiment, and a single move in `change` (as it always was)
 * or a multi-constant move in `changes`.
 */
export const OfflineMeta = z
  .object({
    kind: z.literal('offline'),
    constants: z.record(z.string(), z.record(z.string(), z.number())),
    change: z.optional(OfflineChange),
    changes: z.optional(z.array(OfflineChange).check(z.minLength(2))),
    /** The knobs it left alone because a reviewer's note named them (src/core/step-mode/knob-notes.ts), and whose note. */
    leave_alone: z.optional(KnobRulesMeta),
  })
  .check(
    z.refine(m => (m.change === undefined) !== (m.changes === undefined), {
      message: 'exactly one of change and changes',
    }),
  );
export type OfflineMeta = z.infer<typeof OfflineMeta>;

/** The changes an experiment made, one or several. */
export function changesOf(meta: OfflineMeta): OfflineChange[] {
  return meta.changes ?? (meta.change ? [meta.change] : []);
}

/** The experiments the offline proposer made, with their validated meta. */
export function offlineRecords(history: ExperimentRecord[]): { record: ExperimentRecord; meta: OfflineMeta }[] {
  const out: { record: ExperimentRecord; meta: OfflineMeta }[] = [];
  for (const record of history) {
    const parsed = OfflineMeta.safeParse(record.proposal_meta);
    if (parsed.success) {
      out.push({ record, meta: parsed.data });
    }
  }
  return out;
}

/** The state an experiment was made from: its own with its changes undone. */
export function parentState(meta: OfflineMeta): ConstantState {
  let out: ConstantState = meta.constants;
  for (const { file, name, from } of changesOf(meta)) {
    out = { ...out, [file]: { ...out[file], [name]: from } };
  }
  return out;
}

// Tuning the random seed ratchets noise, not progress; such names are never touched.
const SEED_NAME = /SEED/;

/** The tunable constants of each editable Python file; throws when there are none at all. */
export function tunableConstants(files: Record<string, string>): Map<string, PyConstant[]> {
  const parsed = new Map<string, PyConstant[]>();
  let seeds: string[] = [];
  for (const file of Object.keys(files).sort()) {
    if (!file.endsWith('.py')) {
      continue; // only Python sources have constants this parser understands
    }
    const all = parseConstants(files[file]);
    seeds = seeds.concat(all.filter(c => SEED_NAME.test(c.name)).map(c => c.name));
    const tunable = all.filter(c => !SEED_NAME.test(c.name));
    if (tunable.length > 0) {
      parsed.set(file, tunable);
    }
  }
  if (parsed.size === 0) {
    const names = Object.keys(files).join(', ') || 'the editable files';
    const found =
      seeds.length > 0
        ? `only random-seed constants (${seeds.join(', ')}) found in ${names}; a lucky seed is noise, not progress`
        : `no module-level UPPER_CASE numeric constants found in ${names}`;
    throw new Error(`${found}; the offline proposer can only tune such constants — add some, or use --proposer claude`);
  }
  return parsed;
}

/** A constant the proposer may tune, with how it moves. */
export interface Tunable {
  file: string;
  constant: PyConstant;
  kind: Kind;
  /** Position in the fixed file/constant order, so descriptions and draws are stable. */
  order: number;
}

/** One constant moved to one new value, `literal` as written into the file. */
export interface Move {
  t: Tunable;
  direction: Direction;
  level: number;
  jump: boolean;
  step: Step;
  literal: string;
}

/** A move of `t` to `step`, or null where Python would read the literal back as the old value. */
export function toMove(t: Tunable, direction: Direction, level: number, jump: boolean, step: Step | null): Move | null {
  if (step === null) {
    return null;
  }
  const literal = formatPythonNumber(step.value, t.constant.isInt, t.constant.literal);
  // Record what Python will read back from the literal, which is what a later parse sees.
  const value = Number(literal.replace(/_/g, ''));
  return value === t.constant.value ? null : { t, direction, level, jump, step: { ...step, value }, literal };
}

/** Every one-constant step from the current values, in a fixed order (so PRNG draws are reproducible). */
export function singleMoves(tunables: Tunable[]): Move[] {
  const out: Move[] = [];
  for (const t of tunables) {
    for (const direction of ['up', 'down'] as const) {
      for (let level = 0; level < FACTORS.length; level++) {
        const m = toMove(t, direction, level, false, stepValue(t.constant.value, t.kind, direction, level));
        if (m) {
          out.push(m);
        }
      }
    }
  }
  return out;
}

/** The state with the moves applied. */
export function withMoves(state: ConstantState, moves: Move[]): ConstantState {
  let out = state;
  for (const { t, step } of moves) {
    out = { ...out, [t.file]: { ...out[t.file], [t.constant.name]: step.value } };
  }
  return out;
}
