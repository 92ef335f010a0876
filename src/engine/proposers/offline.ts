/**
 * The offline proposer: no network, no key. It tunes the module-level
 * UPPER_CASE numeric constants of the editable Python files, one constant and
 * one step at a time, never proposing a state (the full assignment of all
 * constants) that was already tried, and preferring directions that helped.
 * All of its memory lives in the journal: each proposal's meta holds the full
 * state after the change, so a resumed engine rebuilds everything from history.
 */
import { z } from 'zod';
import type { ExperimentRecord } from '../../core/journal';
import type { Proposal, ProposalContext, Proposer } from './types';
import { formatPythonNumber, parseConstants, rewriteConstant, type PyConstant } from './python-constants';

export type Direction = 'up' | 'down';
/** file → constant name → value. */
export type ConstantState = Record<string, Record<string, number>>;

/** What the offline proposer stores as each experiment's proposal_meta. */
export const OfflineMeta = z.object({
  kind: z.literal('offline'),
  constants: z.record(z.string(), z.record(z.string(), z.number())),
  change: z.object({
    file: z.string(),
    name: z.string(),
    from: z.number(),
    to: z.number(),
    direction: z.enum(['up', 'down']),
    level: z.number().int().nonnegative()
  })
});
export type OfflineMeta = z.infer<typeof OfflineMeta>;

// Coarse to fine: a direction whose ×2 failed is retried at ×1.5, then ×1.2.
const FACTORS = [2, 1.5, 1.2];
// A float at zero has no scale to multiply; it only steps up, by these amounts.
const ZERO_STEPS = [0.1, 0.05, 0.02];
// Ints below this step by ±1; larger ones (step counts, widths) scale like floats.
const SMALL_INT = 20;
const isPowerOfTwo = (x: number): boolean => x >= 2 && Number.isInteger(Math.log2(x));
// Tuning the random seed ratchets noise, not progress; such names are never touched.
const SEED_NAME = /SEED/;

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

const sig = (x: number, digits: number): number => Number(x.toPrecision(digits));
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

/** A canonical string of a state, the same for equal states whatever their key order. */
export function stateKey(state: ConstantState): string {
  return JSON.stringify(
    Object.keys(state)
      .sort()
      .map((file) => [file, Object.keys(state[file]).sort().map((name) => [name, state[file][name]])])
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

/** What history says about one (constant, direction) pair. */
interface PairStats {
  lastStatus: 'keep' | 'fail';
  lastLevel: number;
  lastIndex: number;
  lastDelta: number | null;
  lastFrom: number;
  failures: number;
  crashesSinceKeep: number;
}

/** Sort keys of a candidate (all ascending) and the reason given for it. */
interface Rank {
  crashed: number;
  tier: number;
  order: number;
  why: string;
}

interface Candidate {
  file: string;
  constant: PyConstant;
  kind: Kind;
  direction: Direction;
  level: number;
  step: Step;
  literal: string;
  state: ConstantState;
}

const pairKey = (file: string, name: string, direction: Direction): string => `${file}\0${name}\0${direction}`;

/** The state an experiment was made from: its own with the change undone. */
function parentState(meta: OfflineMeta): ConstantState {
  const { file, name, from } = meta.change;
  return { ...meta.constants, [file]: { ...meta.constants[file], [name]: from } };
}

/** The experiments this proposer made, with their validated meta. */
function offlineRecords(history: ExperimentRecord[]): { record: ExperimentRecord; meta: OfflineMeta }[] {
  const out: { record: ExperimentRecord; meta: OfflineMeta }[] = [];
  for (const record of history) {
    const parsed = OfflineMeta.safeParse(record.proposal_meta);
    if (parsed.success) {
      out.push({ record, meta: parsed.data });
    }
  }
  return out;
}

export class OfflineProposer implements Proposer {
  readonly name = 'offline';
  private readonly seed?: number;

  /** `seed` overrides ctx.seed when given. */
  constructor(options: { seed?: number } = {}) {
    this.seed = options.seed;
  }

  /** The next single-constant change, or null when every reachable state was tried. */
  async propose(ctx: ProposalContext): Promise<Proposal | null> {
    const parsed = this.parseFiles(ctx.files);
    const current: ConstantState = {};
    for (const [file, constants] of parsed) {
      current[file] = Object.fromEntries(constants.map((c) => [c.name, c.value]));
    }

    const all = offlineRecords(ctx.history);
    // Where tuning began (the baseline, normally) fixes how each constant moves.
    const origin = all.length > 0 ? parentState(all[0].meta) : current;
    // An interrupted experiment never produced a result, so its state may be tried again.
    const records = all.filter((r) => r.record.status !== 'interrupted');
    const tried = new Set<string>([stateKey(current)]);
    const stats = new Map<string, PairStats>();
    records.forEach(({ record, meta }, index) => {
      const { file, name, from, direction, level } = meta.change;
      tried.add(stateKey(meta.constants));
      // The state it was made from was the best then, so it was tried too (the
      // baseline among them: it has no meta of its own).
      tried.add(stateKey(parentState(meta)));
      const key = pairKey(file, name, direction);
      const prev = stats.get(key);
      const kept = record.status === 'keep';
      stats.set(key, {
        lastStatus: kept ? 'keep' : 'fail',
        lastLevel: level,
        lastIndex: index,
        lastDelta: record.delta,
        lastFrom: from,
        failures: (prev?.failures ?? 0) + (kept ? 0 : 1),
        crashesSinceKeep: kept ? 0 : (prev?.crashesSinceKeep ?? 0) + (record.status === 'crash' ? 1 : 0)
      });
    });

    const candidates = this.candidates(parsed, current, origin).filter((c) => !tried.has(stateKey(c.state)));
    if (candidates.length === 0) {
      return null;
    }
    const rng = mulberry32((this.seed ?? ctx.seed) ^ Math.imul(ctx.history.length + 1, 0x9e3779b1));
    const ranked = candidates.map((c) => ({ c, tie: rng(), ...this.rank(c, stats, ctx.metric) }));
    ranked.sort((a, b) => a.crashed - b.crashed || a.tier - b.tier || a.order - b.order || a.tie - b.tie);
    const { c, why } = ranked[0];

    const where = parsed.size > 1 ? ` (${c.file})` : '';
    const meta: OfflineMeta = {
      kind: 'offline',
      constants: c.state,
      change: {
        file: c.file,
        name: c.constant.name,
        from: c.constant.value,
        to: c.step.value,
        direction: c.direction,
        level: c.level
      }
    };
    return {
      description: `${c.constant.name} ${c.constant.literal} → ${c.literal}${where}`,
      rationale: `${c.constant.name} ${c.step.label}: ${why}.`,
      files: { [c.file]: rewriteConstant(ctx.files[c.file], c.constant, c.literal) },
      meta
    };
  }

  /** The tunable constants of each editable Python file; throws when there are none at all. */
  private parseFiles(files: Record<string, string>): Map<string, PyConstant[]> {
    const parsed = new Map<string, PyConstant[]>();
    let seeds: string[] = [];
    for (const file of Object.keys(files).sort()) {
      if (!file.endsWith('.py')) {
        continue; // only Python sources have constants this parser understands
      }
      const all = parseConstants(files[file]);
      seeds = seeds.concat(all.filter((c) => SEED_NAME.test(c.name)).map((c) => c.name));
      const tunable = all.filter((c) => !SEED_NAME.test(c.name));
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

  /** Every one-constant step from the current state, in a fixed order (so the PRNG draws are reproducible). */
  private candidates(parsed: Map<string, PyConstant[]>, current: ConstantState, origin: ConstantState): Candidate[] {
    const out: Candidate[] = [];
    for (const [file, constants] of parsed) {
      for (const constant of constants) {
        const kind = kindOf(origin[file]?.[constant.name] ?? constant.value, constant.isInt);
        for (const direction of ['up', 'down'] as const) {
          for (let level = 0; level < FACTORS.length; level++) {
            const step = stepValue(constant.value, kind, direction, level);
            if (step === null) {
              continue;
            }
            const literal = formatPythonNumber(step.value, constant.isInt, constant.literal);
            // Record what Python will read back from the literal, which is what a later parse sees.
            const value = Number(literal.replace(/_/g, ''));
            if (value === constant.value) {
              continue;
            }
            const state = { ...current, [file]: { ...current[file], [constant.name]: value } };
            out.push({ file, constant, kind, direction, level, step: { ...step, value }, literal, state });
          }
        }
      }
    }
    return out;
  }

  /**
   * Where a candidate stands: first a step continuing a direction whose last
   * try was kept (latest first), then untried directions, then a finer step
   * after a failed coarse one, then anything else still untried. A direction
   * that crashed since its last keep goes after all of these.
   */
  private rank(c: Candidate, stats: Map<string, PairStats>, metric: string): Rank {
    const s = stats.get(pairKey(c.file, c.constant.name, c.direction));
    const crashed = s && s.crashesSinceKeep > 0 ? 1 : 0;
    if (!s) {
      return { crashed, tier: c.level === 0 ? 1 : 3, order: c.level, why: 'untried direction' };
    }
    if (s.lastStatus === 'keep' && c.level === s.lastLevel) {
      const d = s.lastDelta === null ? null : Math.abs(s.lastDelta);
      // Four decimals suit val_bpb, but a tiny gain should not read as "by 0.0000".
      const by = d === null ? '' : ` by ${d >= 1e-4 || d === 0 ? d.toFixed(4) : d.toPrecision(2)}`;
      return { crashed, tier: 0, order: -s.lastIndex, why: `continuing a direction that improved ${metric}${by}` };
    }
    if (s.lastStatus === 'fail' && c.level === s.lastLevel + 1) {
      const what = crashed ? 'crashed' : `did not improve ${metric}`;
      const coarse = stepValue(s.lastFrom, c.kind, c.direction, s.lastLevel)?.label ?? 'previous';
      return { crashed, tier: 2, order: s.failures, why: `the ${coarse} step ${what}, so trying a finer step` };
    }
    return {
      crashed,
      tier: 3,
      order: s.failures * FACTORS.length + c.level,
      why: 'earlier steps in this direction did not help, retrying from the current best'
    };
  }
}
