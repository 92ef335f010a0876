/**
 * The offline proposer: no network, no key. It tunes the module-level
 * UPPER_CASE numeric constants of the editable Python files, never proposing a
 * state (the full assignment of all constants) that was already tried, and
 * preferring directions that helped. From the current best it tries, in order:
 * one-constant steps (coarse, then finer), even finer steps, two-constant moves
 * combining the single steps that came closest to the best, and larger jumps in
 * directions whose coarse step improved; a direction that crashed waits until
 * all of those are used up. All of its memory lives in the journal: each
 * proposal's meta holds the full state after the change, so a resumed engine
 * rebuilds everything from history.
 */
import type { ExperimentRecord } from '../../../core/journal/journal';
import { knobRules } from '../../../core/step-mode/knob-notes';
import type { MoveCandidate, Proposal, ProposalContext, Proposer } from '../types';
import { rewriteConstant, type PyConstant } from './python-constants';
import {
  changesOf,
  FACTORS,
  formatDelta,
  jumpValue,
  kindOf,
  mulberry32,
  NEIGHBOURHOOD_LEVELS,
  offlineRecords,
  OfflineMeta,
  parentState,
  singleMoves,
  stateKey,
  stepValue,
  toMove,
  tunableConstants,
  withMoves,
  type ConstantState,
  type Direction,
  type Move,
  type OfflineChange,
  type Tunable,
} from './moves';

/** What history says about one (constant, direction) pair. */
interface PairStats {
  lastStatus: 'keep' | 'fail';
  lastLevel: number;
  lastIndex: number;
  lastDelta: number | null;
  lastFrom: number;
  failures: number;
  crashesSinceKeep: number;
  everKept: boolean;
  /** Index of the latest kept coarse step (or jump) in this direction; -1 if none. */
  coarseKeptIndex: number;
}

/** A single move with its sort keys (all ascending) and the rationale for it. */
interface Ranked {
  move: Move;
  state: ConstantState;
  crashed: number;
  /** 0 the one-step neighbourhood, 1 finer steps, 3 jumps (2, the pairs, are searched apart). */
  phase: number;
  tier: number;
  order: number;
  /** Which hyperparameters usually matter most (see priorOf); breaks ties before the seed does. */
  prior: number;
  tie: number;
  why: string;
}

/** A discarded single move from the current best: one half of a two-constant move. */
interface Part {
  move: Move;
  delta: number;
  badness: number;
  keptDirection: boolean;
  crashed: boolean;
  tie: number;
}

const pairKey = (file: string, name: string, direction: Direction): string => `${file}\0${name}\0${direction}`;

/** Folds one experiment into the per-direction statistics. */
function learn(stats: Map<string, PairStats>, record: ExperimentRecord, meta: OfflineMeta, index: number): void {
  const kept = record.status === 'keep';
  // A reviewer's rejection rules the direction out as a crash does: it goes after every other move.
  const crash = record.status === 'crash' || record.review?.action === 'reject' ? 1 : 0;
  const single = meta.change !== undefined && meta.change.jump === undefined;
  for (const { file, name, from, direction, level, jump } of changesOf(meta)) {
    const key = pairKey(file, name, direction);
    const prev = stats.get(key);
    const at = jump ? 0 : level;
    if (!kept && !single && prev) {
      // A failed jump or combination says little about one step alone, except
      // that the direction may crash (a pair's crash marks both of its directions).
      stats.set(key, { ...prev, crashesSinceKeep: prev.crashesSinceKeep + crash });
      continue;
    }
    stats.set(key, {
      lastStatus: kept ? 'keep' : 'fail',
      lastLevel: at,
      lastIndex: index,
      lastDelta: record.delta,
      lastFrom: from,
      failures: (prev?.failures ?? 0) + (kept ? 0 : 1),
      crashesSinceKeep: kept ? 0 : (prev?.crashesSinceKeep ?? 0) + crash,
      everKept: (prev?.everKept ?? false) || kept,
      coarseKeptIndex: kept && at === 0 ? index : (prev?.coarseKeptIndex ?? -1),
    });
  }
}

export class OfflineProposer implements Proposer {
  readonly name = 'offline';
  private readonly seed?: number;

  /** `seed` overrides ctx.seed when given. */
  constructor(options: { seed?: number } = {}) {
    this.seed = options.seed;
  }

  /** The next change, or null when every move this proposer knows from the current best was tried. */
  async propose(ctx: ProposalContext): Promise<Proposal | null> {
    const parsed = tunableConstants(ctx.files);
    const current: ConstantState = {};
    for (const [file, constants] of parsed) {
      current[file] = Object.fromEntries(constants.map(c => [c.name, c.value]));
    }
    const currentKey = stateKey(current);
    const all = offlineRecords(ctx.history);
    // Where tuning began (the baseline, normally) fixes how each constant moves.
    const origin = all.length > 0 ? parentState(all[0].meta) : current;
    // A knob a reviewer's note named stays as it is for the rest of the run (src/core/step-mode/knob-notes.ts).
    const names = [...parsed.values()].flatMap(constants => constants.map(c => c.name));
    const rules = knobRules(ctx.reviewNotes ?? [], names);
    const frozen = new Set(rules.map(r => r.name));
    const tunables: Tunable[] = [];
    for (const [file, constants] of parsed) {
      for (const constant of constants.filter(c => !frozen.has(c.name))) {
        const kind = kindOf(origin[file]?.[constant.name] ?? constant.value, constant.isInt);
        tunables.push({ file, constant, kind, order: tunables.length });
      }
    }

    // One pass over history, so a long one stays cheap: every tried state, the
    // statistics per direction, and the discarded single moves from the current best.
    const tried = new Set<string>([currentKey]);
    const stats = new Map<string, PairStats>();
    const nearMisses: { change: OfflineChange; delta: number }[] = [];
    // An interrupted experiment never produced a result, so its state may be tried again.
    all
      .filter(r => r.record.status !== 'interrupted')
      .forEach(({ record, meta }, index) => {
        tried.add(stateKey(meta.constants));
        // The state it was made from was the best then, so it was tried too (the
        // baseline among them: it has no meta of its own).
        const parentKey = stateKey(parentState(meta));
        tried.add(parentKey);
        learn(stats, record, meta, index);
        if (meta.change && record.status === 'discard' && record.delta !== null && parentKey === currentKey) {
          nearMisses.push({ change: meta.change, delta: record.delta });
        }
      });

    // Other workers' experiments in flight: their states are taken, though they have no result yet.
    for (const pending of ctx.inFlight ?? []) {
      const meta = OfflineMeta.safeParse(pending.meta);
      if (meta.success) {
        tried.add(stateKey(meta.data.constants));
      }
    }

    const rng = mulberry32((this.seed ?? ctx.seed) ^ Math.imul(ctx.history.length + 1, 0x9e3779b1));
    const ranked: Ranked[] = [];
    for (const move of [...singleMoves(tunables), ...this.jumps(tunables, stats)]) {
      const state = withMoves(current, [move]);
      if (!tried.has(stateKey(state))) {
        ranked.push({
          move,
          state,
          prior: priorOf(move.t.constant.name),
          tie: rng(),
          ...this.rank(move, stats, ctx.metric, ctx.direction),
        });
      }
    }
    ranked.sort(
      (a, b) =>
        a.crashed - b.crashed ||
        a.phase - b.phase ||
        a.tier - b.tier ||
        a.order - b.order ||
        a.prior - b.prior ||
        a.tie - b.tie,
    );
    const first = ranked[0] as Ranked | undefined;
    const manyFiles = parsed.size > 1;
    const single = (r: Ranked): Proposal =>
      this.proposal(ctx, manyFiles, [r.move], r.state, `${r.move.t.constant.name} ${r.move.step.label}: ${r.why}.`);
    const pair = (): Proposal | null => this.pair(ctx, manyFiles, tunables, current, tried, stats, nearMisses, rng);
    // Tree search: a move the engine prepared (ctx.moves, absent in greedy search) comes first when
    // it re-tests or combines near-misses — each nearly cleared the floor, so together (or on a best
    // that moved) they are the likeliest keep; an ablation once the promising single steps are used up.
    const promising = first !== undefined && !first.crashed && first.phase === 0 && first.tier <= 1;
    const prepared = (): Proposal | null =>
      this.prepared(ctx, current, tried, frozen, promising ? ['retest', 'combine'] : ['retest', 'combine', 'ablate']);
    const chosen =
      prepared() ??
      (first && !first.crashed && first.phase < 2 ? single(first) : (pair() ?? (first ? single(first) : null)));
    if (chosen && rules.length > 0) {
      chosen.meta = { ...(chosen.meta as OfflineMeta), leave_alone: rules.map(({ name, n }) => ({ name, n })) };
    }
    return chosen;
  }

  /**
   * The first move of these kinds the engine prepared (src/engine/search/moves.ts) that changes
   * constants this proposer tracks, none a reviewer's note froze, into a state it has not tried.
   */
  private prepared(
    ctx: ProposalContext,
    current: ConstantState,
    tried: Set<string>,
    frozen: Set<string>,
    kinds: MoveCandidate['kind'][],
  ): Proposal | null {
    for (const m of (ctx.moves ?? []).filter(c => kinds.includes(c.kind))) {
      const files = { ...ctx.files, ...m.files };
      let parsed: Map<string, PyConstant[]>;
      try {
        parsed = tunableConstants(files);
      } catch {
        continue; // no constants left to read: not a move this proposer can record
      }
      const state: ConstantState = {};
      const changes: OfflineChange[] = [];
      for (const [file, constants] of parsed) {
        state[file] = Object.fromEntries(constants.map(c => [c.name, c.value]));
        for (const c of constants) {
          const from = current[file]?.[c.name];
          if (from === undefined || from === c.value) continue;
          changes.push({ file, name: c.name, from, to: c.value, direction: c.value > from ? 'up' : 'down', level: 0 });
        }
      }
      if (changes.length === 0 || changes.some(c => frozen.has(c.name)) || tried.has(stateKey(state))) continue;
      const meta: OfflineMeta =
        changes.length === 1
          ? { kind: 'offline', constants: state, change: changes[0] }
          : { kind: 'offline', constants: state, changes };
      const what = changes.map(c => `${c.name} ${c.from} → ${c.to}`).join(', ');
      const changed = Object.fromEntries(Object.entries(m.files).filter(([f, text]) => text !== ctx.files[f]));
      return {
        description: `${m.description}: ${what}`,
        rationale: `${m.why}.`,
        files: changed,
        meta,
        move: { kind: m.kind, of: m.of },
      };
    }
    return null;
  }

  /** A jump (the coarse step twice) in each direction whose coarse step ever improved the metric. */
  private jumps(tunables: Tunable[], stats: Map<string, PairStats>): Move[] {
    return tunables.flatMap(t =>
      (['up', 'down'] as const).flatMap(direction => {
        const s = stats.get(pairKey(t.file, t.constant.name, direction));
        const jump = s && s.coarseKeptIndex >= 0 ? jumpValue(t.constant.value, t.kind, direction) : null;
        const m = toMove(t, direction, 0, true, jump);
        return m ? [m] : [];
      }),
    );
  }

  /**
   * Where a single move stands. In the one-step neighbourhood: first a step
   * continuing a direction whose last try was kept (latest first, at any level),
   * then untried directions, then a finer step after a failed coarse one, then
   * anything else still untried. Then the finest steps, and (after the pairs)
   * the jumps. A direction that crashed since its last keep goes after all of these.
   */
  private rank(
    m: Move,
    stats: Map<string, PairStats>,
    metric: string,
    better: 'lower' | 'higher',
  ): Omit<Ranked, 'move' | 'state' | 'tie' | 'prior'> {
    const { t, direction, level } = m;
    const s = stats.get(pairKey(t.file, t.constant.name, direction));
    const crashed = s && s.crashesSinceKeep > 0 ? 1 : 0;
    const phase = level >= NEIGHBOURHOOD_LEVELS ? 1 : 0;
    if (m.jump) {
      const coarse = stepValue(t.constant.value, t.kind, direction, 0)?.label ?? 'coarse';
      const why = `the ${coarse} step in this direction improved ${metric} before, so trying a larger jump`;
      return { crashed, phase: 3, tier: 0, order: -(s?.coarseKeptIndex ?? 0), why };
    }
    if (!s) {
      // The other way made things clearly worse: the slope says this way is the one to try.
      const other = stats.get(pairKey(t.file, t.constant.name, direction === 'up' ? 'down' : 'up'));
      const worse =
        other?.lastStatus === 'fail' && other.lastDelta !== null
          ? better === 'lower'
            ? other.lastDelta
            : -other.lastDelta
          : 0;
      if (level === 0 && worse > 0) {
        return {
          crashed,
          phase,
          tier: 1,
          order: -worse,
          why: `the opposite step made ${metric} worse by ${formatDelta(Math.abs(worse))}, so trying this way`,
        };
      }
      return { crashed, phase, tier: level === 0 ? 1 : 3, order: level, why: 'untried direction' };
    }
    if (s.lastStatus === 'keep' && level === s.lastLevel) {
      const by = s.lastDelta === null ? '' : ` by ${formatDelta(s.lastDelta)}`;
      const why = `continuing a direction that improved ${metric}${by}`;
      return { crashed, phase: 0, tier: 0, order: -s.lastIndex, why };
    }
    if (s.lastStatus === 'fail' && level === s.lastLevel + 1) {
      const what = crashed ? 'crashed' : `did not improve ${metric}`;
      const coarse = stepValue(s.lastFrom, t.kind, direction, s.lastLevel)?.label ?? 'previous';
      return { crashed, phase, tier: 2, order: s.failures, why: `the ${coarse} step ${what}, so trying a finer step` };
    }
    const why = 'earlier steps in this direction did not help, retrying from the current best';
    return { crashed, phase, tier: 3, order: s.failures * FACTORS.length + level, why };
  }

  /**
   * The best untried two-constant move from the current best: its discarded
   * single moves, ranked by how close they came to the best (those in a
   * direction that improved before first, any in one that crashed since last),
   * combined in order of rank sum, so the two nearest misses come first.
   */
  private pair(
    ctx: ProposalContext,
    manyFiles: boolean,
    tunables: Tunable[],
    current: ConstantState,
    tried: Set<string>,
    stats: Map<string, PairStats>,
    nearMisses: { change: OfflineChange; delta: number }[],
    rng: () => number,
  ): Proposal | null {
    const byName = new Map(tunables.map(t => [`${t.file}\0${t.constant.name}`, t]));
    const seen = new Set<string>();
    const parts: Part[] = [];
    for (const { change: c, delta } of nearMisses) {
      const t = byName.get(`${c.file}\0${c.name}`);
      const id = `${c.file}\0${c.name}\0${c.to}`;
      if (!t || seen.has(id)) {
        continue;
      }
      const step = c.jump ? jumpValue(c.from, t.kind, c.direction) : stepValue(c.from, t.kind, c.direction, c.level);
      const move = toMove(t, c.direction, c.level, c.jump === true, { value: c.to, label: step?.label ?? '' });
      if (move) {
        seen.add(id);
        const s = stats.get(pairKey(c.file, c.name, c.direction));
        const [keptDirection, crashed] = [s?.everKept ?? false, (s?.crashesSinceKeep ?? 0) > 0];
        const badness = ctx.direction === 'lower' ? delta : -delta;
        parts.push({ move, delta, badness, keptDirection, crashed, tie: rng() });
      }
    }
    // A step in a direction that has since crashed is combined last.
    const key = (p: Part): number => (p.crashed ? 2 : 0) + (p.keptDirection ? 0 : 1);
    parts.sort((a, b) => key(a) - key(b) || a.badness - b.badness || a.tie - b.tie);
    const say = (p: Part): string =>
      `${p.move.t.constant.name} ${p.move.step.label || `→ ${p.move.literal}`} (${formatDelta(p.delta, true)}` +
      `${p.keptDirection ? ', in a direction that improved before' : ''})`;
    const n = parts.length;
    for (let sum = 1; sum <= 2 * n - 3; sum++) {
      for (let i = Math.max(0, sum - (n - 1)); 2 * i < sum; i++) {
        const [a, b] = [parts[i], parts[sum - i]];
        const state = a.move.t === b.move.t ? null : withMoves(current, [a.move, b.move]);
        if (state && !tried.has(stateKey(state))) {
          const rationale =
            `Combining the near-misses ${say(a)} and ${say(b)}: the single steps from the current best ` +
            `are used up, and these came closest to it.`;
          const moves = [a.move, b.move].sort((x, y) => x.t.order - y.t.order);
          return this.proposal(ctx, manyFiles, moves, state, rationale);
        }
      }
    }
    return null;
  }

  /** The proposal that applies `moves` to the best files, with its meta. */
  private proposal(
    ctx: ProposalContext,
    manyFiles: boolean,
    moves: Move[],
    state: ConstantState,
    rationale: string,
  ): Proposal {
    const files: Record<string, string> = {};
    // Later literals first, so the offsets of earlier ones in the same file stay valid.
    for (const m of [...moves].sort((x, y) => y.t.constant.start - x.t.constant.start)) {
      files[m.t.file] = rewriteConstant(files[m.t.file] ?? ctx.files[m.t.file], m.t.constant, m.literal);
    }
    const changes: OfflineChange[] = moves.map(({ t, direction, level, jump, step }) => ({
      file: t.file,
      name: t.constant.name,
      from: t.constant.value,
      to: step.value,
      direction,
      level,
      ...(jump ? { jump: true as const } : {}),
    }));
    const meta: OfflineMeta =
      changes.length === 1
        ? { kind: 'offline', constants: state, change: changes[0] }
        : { kind: 'offline', constants: state, changes };
    const where = (t: Tunable): string => (manyFiles ? ` (${t.file})` : '');
    const description = moves
      .map(({ t, literal }) => `${t.constant.name} ${t.constant.literal} → ${literal}${where(t)}`)
      .join(', ');
    return { description, rationale, files, meta };
  }
}

/**
 * A prior over constant names, from what usually matters most when training a
 * network on a fixed budget: the learning rate first, then the model's and the
 * batch's size, then everything else. Among equally ranked moves (at the start,
 * every direction is untried) it decides what is tried first; the seed only
 * breaks the remaining ties.
 */
export function priorOf(name: string): number {
  // MATRIX_LR and LEARNING_RATE, not FINAL_LR_FRAC (a schedule shape, not the rate).
  if (/(^|_)(LEARNING_RATE|LR)$/.test(name)) return 0;
  if (
    /(^|_)(BATCH|BATCH_SIZE|N_EMBD|EMBD|WIDTH|D_MODEL|HIDDEN|DIM|N_LAYER|N_LAYERS|LAYERS|DEPTH|SEQ_LEN|CONTEXT|BLOCK_SIZE)(_|$)/.test(
      name,
    )
  )
    return 1;
  return 2;
}
