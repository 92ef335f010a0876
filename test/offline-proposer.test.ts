import { describe, expect, it } from 'vitest';
import { ExperimentRecord, type ExperimentStatus } from '../src/core/journal/journal';
import { OfflineProposer, priorOf } from '../src/engine/proposers/offline/proposer';
import { changesOf, OfflineMeta } from '../src/engine/proposers/offline/moves';
import { jumpValue, kindOf, mulberry32, stateKey, stepValue } from '../src/engine/proposers/offline/moves';
import { parseConstants } from '../src/engine/proposers/offline/python-constants';
import type { Proposal, ProposalContext } from '../src/engine/proposers/types';

const TRAIN_PY = `"""Tiny GPT."""
import torch

LEARNING_RATE = 0.001  # peak
N_LAYER = 4
DROPOUT = 0.1
BETA2 = 0.95

def main():
    HIDDEN = 3
    print("---")
`;

type Values = Record<string, number>;
const valuesOf = (src: string): Values => Object.fromEntries(parseConstants(src).map(c => [c.name, c.value]));

/** A journal experiment record shaped as the engine writes it (validated by the real schema). */
function makeRecord(
  n: number,
  status: ExperimentStatus,
  metric: number | null,
  bestBefore: number | null,
  proposal?: Proposal,
): ExperimentRecord {
  return ExperimentRecord.parse({
    type: 'experiment',
    ts: new Date(Date.UTC(2026, 2, 1, 0, n)).toISOString(),
    n,
    parent_commit: 'abcdef0',
    commit: status === 'keep' ? 'abcdef1' : null,
    description: proposal?.description ?? 'baseline',
    rationale: proposal?.rationale ?? '',
    diff: '',
    lines_added: 0,
    lines_removed: 0,
    summary: {},
    metric,
    best_before: bestBefore,
    delta: metric === null || bestBefore === null ? null : metric - bestBefore,
    status,
    reason: status === 'crash' ? 'CUDA out of memory' : null,
    memory_gb: 0,
    timings: { propose_s: 0, run_s: 0, total_s: 0 },
    exit_code: status === 'crash' ? 1 : 0,
    signal: null,
    log_path: null,
    log_truncated: false,
    proposer: 'offline',
    usage: { input_tokens: 0, output_tokens: 0, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 },
    cost_usd: 0,
    ...(proposal ? { proposal_meta: proposal.meta } : {}),
  });
}

function ctxOf(files: Record<string, string>, history: ExperimentRecord[], seed = 1): ProposalContext {
  return { workdir: '/tmp/ws', files, history, program: '', metric: 'val_bpb', direction: 'lower', seed };
}

/**
 * Runs the loop as the engine does: propose against the best files, "train"
 * (objective returns the metric, or null for a crash), keep if strictly better.
 */
async function simulate(src: string, objective: (v: Values) => number | null, experiments: number, seed = 1) {
  return simulateFiles({ 'train.py': src }, objective, experiments, seed);
}

/** As simulate, for files whose constants the objective reads all together. */
async function simulateFiles(
  src: Record<string, string>,
  objective: (v: Values) => number | null,
  experiments: number,
  seed = 1,
) {
  const valuesOfAll = (files: Record<string, string>): Values =>
    Object.assign(
      {},
      ...Object.keys(files)
        .sort()
        .map(f => valuesOf(files[f])),
    );
  const proposer = new OfflineProposer();
  let best: Record<string, string> = src;
  let bestMetric = objective(valuesOfAll(src))!;
  const history = [makeRecord(0, 'keep', bestMetric, null)];
  const proposals: Proposal[] = [];
  for (let n = 1; n <= experiments; n++) {
    const proposal = await proposer.propose(ctxOf(best, history, seed));
    if (proposal === null) {
      break;
    }
    proposals.push(proposal);
    const files = { ...best, ...proposal.files };
    const metric = objective(valuesOfAll(files));
    const status = metric === null ? 'crash' : metric < bestMetric ? 'keep' : 'discard';
    history.push(makeRecord(n, status, metric, bestMetric, proposal));
    if (status === 'keep') {
      best = files;
      bestMetric = metric!;
    }
  }
  return { proposals, history, best, bestMetric };
}

/** A single-step proposal as the offline proposer makes it, found among seeds 0–199 (fails if never proposed first). */
async function findProposal(
  files: Record<string, string>,
  history: ExperimentRecord[],
  description: string,
): Promise<Proposal> {
  for (let s = 0; s < 200; s++) {
    const p = (await new OfflineProposer().propose(ctxOf(files, history, s)))!;
    if (p.description === description) return p;
  }
  throw new Error(`no seed proposes "${description}" first`);
}

/** A single-step proposal built by hand, shaped as the offline proposer records it. */
function singleMove(src: string, name: string, to: number, direction: 'up' | 'down'): Proposal {
  const values = valuesOf(src);
  const after = src.replace(new RegExp(`^${name} = [^\\s#]+`, 'm'), `${name} = ${to}`);
  return {
    description: `${name} ${values[name]} → ${to}`,
    rationale: '',
    files: { 'train.py': after },
    meta: {
      kind: 'offline',
      constants: { 'train.py': { ...values, [name]: to } },
      change: { file: 'train.py', name, from: values[name], to, direction, level: 0 },
    },
  };
}

const metaOf = (p: Proposal): OfflineMeta => OfflineMeta.parse(p.meta);
/** The one change of a single move. */
const changeOf = (p: Proposal) => {
  const meta = metaOf(p);
  expect(meta.changes).toBeUndefined();
  return meta.change!;
};

describe('stepValue', () => {
  it('keeps powers of two powers of two and ints at least 1', () => {
    expect(stepValue(8, 'pow2', 'up', 0)?.value).toBe(16);
    expect(stepValue(8, 'pow2', 'down', 0)?.value).toBe(4);
    expect(stepValue(2, 'pow2', 'down', 0)?.value).toBe(1);
    expect(stepValue(1, 'pow2', 'down', 0)).toBeNull();
    expect(stepValue(8, 'pow2', 'up', 1)).toBeNull(); // no finer step that stays a power of two
    expect(stepValue(1, 'count', 'down', 0)).toBeNull();
    expect(stepValue(0, 'count', 'up', 0)?.value).toBe(1);
    expect(stepValue(0, 'count', 'down', 0)).toBeNull();
    expect(stepValue(5, 'count', 'up', 0)).toEqual({ value: 6, label: '+1' });
    expect(stepValue(5, 'count', 'down', 0)).toEqual({ value: 4, label: '−1' });
    expect(stepValue(1000, 'large', 'down', 1)).toEqual({ value: 670, label: '×0.67' });
    // The kind is fixed where tuning began: 3 → 4 keeps stepping by one.
    expect(stepValue(4, kindOf(3, true), 'up', 0)?.value).toBe(5);
    expect(kindOf(64, true)).toBe('pow2');
    expect(kindOf(64, false)).toBe('float');
    expect(kindOf(0.95, false)).toBe('unit');
    expect(kindOf(0, false)).toBe('unit');
  });

  it('walks every int up and down without leaving the integers ≥ 1 or the powers of two', () => {
    for (const start of [1, 2, 3, 7, 16, 19, 20, 64, 768, 5000]) {
      const kind = kindOf(start, true);
      for (const direction of ['up', 'down'] as const) {
        let v = start;
        for (let i = 0; i < 12; i++) {
          const s = stepValue(v, kind, direction, i % 3);
          if (s === null) continue;
          expect(Number.isInteger(s.value) && s.value >= 1).toBe(true);
          expect(s.value).not.toBe(v);
          if (kind === 'pow2') expect(Number.isInteger(Math.log2(s.value))).toBe(true);
          v = s.value;
        }
      }
    }
  });

  it('keeps floats in (0, 1) inside (0, 1), however far they are pushed', () => {
    for (const start of [0.001, 0.1, 0.5, 0.9, 0.95, 0.999]) {
      for (const direction of ['up', 'down'] as const) {
        let v = start;
        for (let i = 0; i < 40; i++) {
          const s = stepValue(v, 'unit', direction, i % 3)!;
          expect(s.value).toBeGreaterThan(0);
          expect(s.value).toBeLessThan(1);
          expect(direction === 'up' ? s.value > v : s.value < v).toBe(true);
          v = s.value;
        }
      }
    }
    expect(stepValue(0.95, 'unit', 'up', 0)?.value).toBe(0.975);
    expect(stepValue(0.95, 'unit', 'down', 0)?.value).toBe(0.9);
    expect(stepValue(0.001, 'unit', 'up', 0)?.value).toBe(0.002);
    expect(stepValue(0, 'unit', 'up', 0)?.value).toBe(0.1);
    expect(stepValue(0, 'unit', 'down', 0)).toBeNull();
    // A float that began at 1 or above may cross 1 freely.
    expect(stepValue(0.5, 'float', 'up', 0)?.value).toBe(1);
    expect(stepValue(-0.5, 'float', 'up', 0)?.value).toBe(-0.25);
  });
  it('takes even finer ×1.1 steps and ×4 jumps that keep the same rules', () => {
    expect(stepValue(1000, 'large', 'up', 3)).toEqual({ value: 1100, label: '×1.1' });
    expect(stepValue(0.001, 'unit', 'down', 3)?.value).toBe(0.000909);
    expect(stepValue(8, 'pow2', 'up', 3)).toBeNull();
    expect(stepValue(5, 'count', 'up', 3)).toBeNull();
    expect(stepValue(1000, 'large', 'up', 4)).toBeNull();
    expect(jumpValue(8, 'pow2', 'up')).toEqual({ value: 32, label: '×4' });
    expect(jumpValue(8, 'pow2', 'down')).toEqual({ value: 2, label: '×0.25' });
    expect(jumpValue(2, 'pow2', 'down')).toBeNull();
    expect(jumpValue(3, 'count', 'down')).toEqual({ value: 1, label: '−2' });
    expect(jumpValue(1, 'count', 'down')).toBeNull();
    expect(jumpValue(0.001, 'unit', 'up')).toEqual({ value: 0.004, label: '×4' });
    expect(jumpValue(0.95, 'unit', 'up')).toEqual({ value: 0.9875, label: 'distance to 1 ×0.25' });
    expect(jumpValue(1000, 'large', 'down')?.value).toBe(250);
    for (const v of [0.3, 0.6, 0.9]) {
      for (const direction of ['up', 'down'] as const) {
        const j = jumpValue(v, 'unit', direction)!;
        expect(j.value > 0 && j.value < 1).toBe(true);
      }
    }
  });
});

describe('OfflineProposer', () => {
  it('changes exactly one constant and describes it as NAME old → new', async () => {
    const baseline = makeRecord(0, 'keep', 1.5, null);
    const p = (await new OfflineProposer().propose(ctxOf({ 'train.py': TRAIN_PY }, [baseline])))!;
    const before = valuesOf(TRAIN_PY);
    const after = valuesOf(p.files['train.py']);
    const changed = Object.keys(before).filter(k => before[k] !== after[k]);
    expect(changed).toHaveLength(1);
    const meta = metaOf(p);
    expect(changeOf(p).name).toBe(changed[0]);
    expect(meta.constants['train.py']).toEqual(after);
    expect(p.description).toMatch(new RegExp(`^${changed[0]} \\S+ → \\S+$`));
    expect(p.rationale).toMatch(/untried direction\.$/);
    // Only the literal changed: the rest of the file is byte-identical.
    const lines = (s: string) => s.split('\n');
    const diff = lines(TRAIN_PY).filter((l, i) => l !== lines(p.files['train.py'])[i]);
    expect(diff).toHaveLength(1);
  });

  it('is deterministic for a seed and breaks ties differently for other seeds', async () => {
    const history = [makeRecord(0, 'keep', 1.5, null)];
    // Constants of equal prior, so the seed alone orders the first moves.
    const files = { 'train.py': 'DROPOUT = 0.1\nBETA2 = 0.95\nWEIGHT_DECAY = 0.2\nGRAD_CLIP = 1.0\n' };
    const a = await new OfflineProposer().propose(ctxOf(files, history, 7));
    const b = await new OfflineProposer().propose(ctxOf(files, history, 7));
    expect(b).toEqual(a);
    const seen = new Set<string>();
    for (let seed = 0; seed < 10; seed++) {
      seen.add((await new OfflineProposer().propose(ctxOf(files, history, seed)))!.description);
    }
    expect(seen.size).toBeGreaterThan(2);
    // The constructor's seed overrides the context's.
    const c = await new OfflineProposer({ seed: 7 }).propose(ctxOf(files, history, 12345));
    expect(c).toEqual(a);
  });

  it('continues a direction that just improved the metric', async () => {
    for (let seed = 0; seed < 5; seed++) {
      const baseline = makeRecord(0, 'keep', 1.5, null);
      const files = { 'train.py': TRAIN_PY };
      // LEARNING_RATE ×2, as some seed proposes it first.
      const first = await findProposal(files, [baseline], 'LEARNING_RATE 0.001 → 0.002');
      const kept = { ...files, ...first.files };
      const history = [baseline, makeRecord(1, 'keep', 1.4679, 1.5, first)];
      const next = (await new OfflineProposer().propose(ctxOf(kept, history, seed)))!;
      expect(next.description).toBe('LEARNING_RATE 0.002 → 0.004');
      expect(next.rationale).toBe('LEARNING_RATE ×2: continuing a direction that improved val_bpb by 0.0321.');
      expect(changeOf(next)).toMatchObject({ direction: 'up', level: 0 });
    }
  });

  it('tries the opposite way right after a step made the metric clearly worse', async () => {
    const baseline = makeRecord(0, 'keep', 1.5, null);
    const files = { 'train.py': TRAIN_PY };
    const down = await findProposal(files, [baseline], 'LEARNING_RATE 0.001 → 5e-4');
    // A slight worsening elsewhere: its opposite ranks below the large one's.
    const layers = singleMove(TRAIN_PY, 'N_LAYER', 8, 'up');
    const history = [baseline, makeRecord(1, 'discard', 1.9, 1.5, down), makeRecord(2, 'discard', 1.51, 1.5, layers)];
    for (let seed = 0; seed < 5; seed++) {
      const next = (await new OfflineProposer().propose(ctxOf(files, history, seed)))!;
      expect(next.description).toBe('LEARNING_RATE 0.001 → 0.002');
      expect(next.rationale).toBe(
        'LEARNING_RATE ×2: the opposite step made val_bpb worse by 0.4000, so trying this way.',
      );
    }
  });

  it('tries the learning rate, then sizes, before other constants (seeds only break ties)', async () => {
    const baseline = makeRecord(0, 'keep', 1.5, null);
    const firsts = new Set<string>();
    for (let seed = 0; seed < 10; seed++) {
      firsts.add(
        changeOf((await new OfflineProposer().propose(ctxOf({ 'train.py': TRAIN_PY }, [baseline], seed)))!).name,
      );
    }
    expect([...firsts]).toEqual(['LEARNING_RATE']);
    expect([priorOf('LEARNING_RATE'), priorOf('MATRIX_LR'), priorOf('LR')]).toEqual([0, 0, 0]);
    expect([priorOf('N_EMBD'), priorOf('BATCH_SIZE'), priorOf('N_LAYER'), priorOf('SEQ_LEN')]).toEqual([1, 1, 1, 1]);
    expect([priorOf('FINAL_LR_FRAC'), priorOf('WARMUP_FRAC'), priorOf('DROPOUT'), priorOf('LR_DECAY_STEPS')]).toEqual([
      2, 2, 2, 2,
    ]);
  });

  it('never repeats a state over 60 experiments and improves a convex objective', async () => {
    // N_LAYER = 3 steps by ±1 (a power of two would only double or halve).
    const src = TRAIN_PY.replace('N_LAYER = 4', 'N_LAYER = 3').replace(
      'BETA2 = 0.95\n',
      'BETA2 = 0.95\nWEIGHT_DECAY = 0.2\nWARMUP_RATIO = 0.0\nBATCH_SIZE = 16\n',
    );
    // Minimised at LEARNING_RATE = 0.004 and N_LAYER = 6, plus a little deterministic
    // "noise" so that, as with real runs, lucky changes get kept and the search goes on.
    const objective = (v: Values) => {
      const noise = Math.sin(Object.values(v).reduce((h, x, i) => h + x * (i + 1) * 1e3, 0)) * 0.002;
      return 1 + Math.log2(v.LEARNING_RATE / 0.004) ** 2 * 0.05 + (v.N_LAYER - 6) ** 2 * 0.01 + noise;
    };
    const run = await simulate(src, objective, 60, 3);
    expect(run.proposals).toHaveLength(60);
    const states = [stateKey({ 'train.py': valuesOf(src) }), ...run.proposals.map(p => stateKey(metaOf(p).constants))];
    expect(new Set(states).size).toBe(61);
    // The states recorded in meta are what the files really hold.
    for (const p of run.proposals) {
      expect(metaOf(p).constants['train.py']).toEqual(valuesOf({ ...run.best, ...p.files }['train.py'] ?? ''));
    }
    const bestValues = valuesOf(run.best['train.py']);
    expect(bestValues.LEARNING_RATE).toBe(0.004);
    expect(bestValues.N_LAYER).toBe(6);
    expect(run.bestMetric).toBeLessThan(objective(valuesOf(src)) - 0.2);
    const metrics = run.history.filter(r => r.status === 'keep').map(r => r.metric!);
    expect(metrics).toEqual([...metrics].sort((a, b) => b - a));
    for (const p of run.proposals) {
      const v = metaOf(p).constants['train.py'];
      expect(v.DROPOUT > 0 && v.DROPOUT < 1 && v.BETA2 > 0 && v.BETA2 < 1).toBe(true);
      expect(v.WEIGHT_DECAY > 0 && v.WEIGHT_DECAY < 1 && v.WARMUP_RATIO >= 0 && v.WARMUP_RATIO < 1).toBe(true);
      expect(Number.isInteger(v.N_LAYER) && v.N_LAYER >= 1).toBe(true);
      expect(Number.isInteger(Math.log2(v.BATCH_SIZE))).toBe(true);
    }
  });

  it('refines: after a coarse step fails it tries a finer one in that direction', async () => {
    // Best near 0.0016: ×2 overshoots into divergence, ×0.5 is worse, ×1.5 helps.
    const objective = (v: Values) => (v.LEARNING_RATE > 0.0018 ? 10 : Math.abs(v.LEARNING_RATE - 0.0016));
    const run = await simulate('LEARNING_RATE = 0.001\n', objective, 4);
    const descriptions = run.proposals.map(p => p.description);
    expect(descriptions.slice(0, 2).sort()).toEqual(['LEARNING_RATE 0.001 → 0.002', 'LEARNING_RATE 0.001 → 5e-4']);
    const finer = run.proposals.find(p => p.description === 'LEARNING_RATE 0.001 → 0.0015');
    expect(finer?.rationale).toBe('LEARNING_RATE ×1.5: the ×2 step did not improve val_bpb, so trying a finer step.');
  });

  it('puts a direction that crashed after everything else, two-constant moves included', async () => {
    const src = 'LEARNING_RATE = 0.001\nSEQ_LEN = 1000\nSEED = 42\n';
    // Any longer sequence runs out of memory; nothing else helps either.
    const run = await simulate(src, v => (v.SEQ_LEN > 1000 ? null : 1), 80);
    const isCrashing = (p: Proposal) => changesOf(metaOf(p)).some(c => c.name === 'SEQ_LEN' && c.direction === 'up');
    const firstCrash = run.proposals.findIndex(isCrashing);
    expect(run.history[firstCrash + 1].status).toBe('crash');
    const retries = run.proposals.map((p, i) => ({ p, i })).filter(({ p, i }) => i > firstCrash && isCrashing(p));
    expect(retries.map(({ p }) => changeOf(p).level)).toEqual([1, 2, 3]);
    const lastOther = Math.max(...run.proposals.map((p, i) => (isCrashing(p) ? -1 : i)));
    expect(retries[0].i).toBeGreaterThan(lastOther);
    // Two-constant moves (never with the crashing step) came before the retries.
    expect(run.proposals.some(p => metaOf(p).changes?.length === 2)).toBe(true);
    // LEARNING_RATE: 4 steps each way; SEQ_LEN: 4 down and 4 up; then 8 × 4 pairs; then nothing.
    expect(run.proposals).toHaveLength(8 + 8 + 32);
    // The seed is never tuned.
    expect(run.proposals.some(p => changesOf(metaOf(p)).some(c => c.name === 'SEED'))).toBe(false);
  });

  it('returns null once every reachable state was tried', async () => {
    const run = await simulate('N_LAYER = 3\n', v => Math.abs(v.N_LAYER - 3), 10);
    expect(run.proposals.map(p => p.description).sort()).toEqual(['N_LAYER 3 → 2', 'N_LAYER 3 → 4']);
    expect(run.history.map(r => r.status)).toEqual(['keep', 'discard', 'discard']);
  });

  it('retries an interrupted experiment, since it never produced a result', async () => {
    const files = { 'train.py': 'N_LAYER = 1\n' }; // only one move: up to 2
    const baseline = makeRecord(0, 'keep', 1, null);
    const first = (await new OfflineProposer().propose(ctxOf(files, [baseline])))!;
    expect(first.description).toBe('N_LAYER 1 → 2');
    const interrupted = makeRecord(1, 'interrupted', null, 1, first);
    const retried = await new OfflineProposer().propose(ctxOf(files, [baseline, interrupted]));
    expect(retried?.description).toBe('N_LAYER 1 → 2');
    const discarded = makeRecord(1, 'discard', 1.1, 1, first);
    expect(await new OfflineProposer().propose(ctxOf(files, [baseline, discarded]))).toBeNull();
  });

  it('tunes constants across several Python files and leaves other files alone', async () => {
    const files = { 'train.py': 'LR = 0.1\n', 'model.py': 'N_HEAD = 3\n', 'notes.md': 'X = 1\n' };
    const run: Proposal[] = [];
    const history = [makeRecord(0, 'keep', 1, null)];
    for (let n = 1; n <= 40; n++) {
      const p = await new OfflineProposer().propose(ctxOf(files, history));
      if (p === null) break;
      run.push(p);
      history.push(makeRecord(n, 'discard', 2, 1, p));
    }
    // LR: 4 steps each way; N_HEAD: ±1; then each LR step with each N_HEAD step.
    expect(run.length).toBe(10 + 16);
    expect(run.every(p => !('notes.md' in p.files))).toBe(true);
    expect(run.slice(0, 10).every(p => Object.keys(p.files).length === 1)).toBe(true);
    expect(run.map(p => p.description)).toContain('N_HEAD 3 → 4 (model.py)');
    expect(metaOf(run[0]).constants).toEqual({ 'model.py': expect.any(Object), 'train.py': expect.any(Object) });
    for (const p of run.slice(10)) {
      expect(Object.keys(p.files).sort()).toEqual(['model.py', 'train.py']);
      expect(p.description).toMatch(/^N_HEAD 3 → \d \(model\.py\), LR 0\.1 → \S+ \(train\.py\)$/);
      const after = { ...valuesOf(p.files['model.py']), ...valuesOf(p.files['train.py']) };
      const meta = metaOf(p);
      expect({ ...meta.constants['model.py'], ...meta.constants['train.py'] }).toEqual(after);
    }
  });

  it('keeps going for 150 experiments on a noisy objective with 8 constants, never repeating a state', async () => {
    const src =
      'LEARNING_RATE = 6e-4\nWEIGHT_DECAY = 0.1\nBETA2 = 0.95\nWARMUP_RATIO = 0.0\n' +
      'N_LAYER = 6\nN_EMBD = 512\nBATCH_SIZE = 32\nMAX_ITERS = 5000\nSEED = 1337\n';
    for (const seed of [1, 2, 3]) {
      const noise = mulberry32(seed * 7919);
      const run = await simulate(src, () => 1 + noise(), 150, seed);
      expect(run.proposals).toHaveLength(150);
      const states = [
        stateKey({ 'train.py': valuesOf(src) }),
        ...run.proposals.map(p => stateKey(metaOf(p).constants)),
      ];
      expect(new Set(states).size).toBe(151);
      const pairs = run.proposals.filter(p => metaOf(p).changes !== undefined);
      expect(pairs.length).toBeGreaterThan(0);
      for (const p of run.proposals) {
        const meta = metaOf(p);
        const v = meta.constants['train.py'];
        expect('SEED' in v).toBe(false);
        expect(p.files['train.py']).toContain('\nSEED = 1337\n');
        expect(v.WEIGHT_DECAY > 0 && v.WEIGHT_DECAY < 1 && v.BETA2 > 0 && v.BETA2 < 1).toBe(true);
        expect(v.WARMUP_RATIO >= 0 && v.WARMUP_RATIO < 1 && v.LEARNING_RATE > 0).toBe(true);
        for (const name of ['N_LAYER', 'MAX_ITERS']) expect(Number.isInteger(v[name]) && v[name] >= 1).toBe(true);
        for (const name of ['N_EMBD', 'BATCH_SIZE']) expect(Number.isInteger(Math.log2(v[name]))).toBe(true);
        const names = changesOf(meta).map(c => c.name);
        expect(p.description.split(', ').map(part => part.split(' ')[0])).toEqual(names);
        expect(p.description).toMatch(/^[A-Z_0-9]+ \S+ → \S+(, [A-Z_0-9]+ \S+ → \S+)?$/);
      }
    }
  });

  it('combines the two nearest misses once every single step from the best was tried', async () => {
    const src = 'LR = 0.01\nN_HEAD = 3\nDROPOUT = 0.1\n';
    // Every change is worse than the baseline: DROPOUT ×1.1 and ÷1.1 come closest, then LR ×1.1.
    const objective = (v: Values) =>
      1 + Math.abs(Math.log2(v.LR / 0.01)) * 0.01 + Math.abs(v.N_HEAD - 3) * 0.003 + Math.abs(v.DROPOUT - 0.1) * 0.1;
    const run = await simulate(src, objective, 200);
    // 8 steps of LR, 2 of N_HEAD, 8 of DROPOUT; then every pair of two of them across constants.
    expect(run.proposals).toHaveLength(18 + (8 * 2 + 8 * 8 + 2 * 8));
    expect(run.proposals.slice(0, 18).every(p => metaOf(p).change !== undefined)).toBe(true);
    const pairs = run.proposals.slice(18);
    expect(pairs.every(p => metaOf(p).changes?.length === 2)).toBe(true);
    const first = pairs[0];
    expect(first.description).toBe('LR 0.01 → 0.011, DROPOUT 0.1 → 0.0909');
    expect(first.rationale).toBe(
      'Combining the near-misses DROPOUT ×0.91 (+0.0009) and LR ×1.1 (+0.0014): the single steps ' +
        'from the current best are used up, and these came closest to it.',
    );
    expect(metaOf(first).changes).toEqual([
      { file: 'train.py', name: 'LR', from: 0.01, to: 0.011, direction: 'up', level: 3 },
      { file: 'train.py', name: 'DROPOUT', from: 0.1, to: 0.0909, direction: 'down', level: 3 },
    ]);
    expect(valuesOf({ ...run.best, ...first.files }['train.py'])).toEqual({ LR: 0.011, N_HEAD: 3, DROPOUT: 0.0909 });
    expect(first.files['train.py']).toBe('LR = 0.011\nN_HEAD = 3\nDROPOUT = 0.0909\n');
    const states = run.proposals.map(p => stateKey(metaOf(p).constants));
    expect(new Set(states).size).toBe(states.length);
  });

  it('jumps ×4 in a direction whose coarse step improved, once the rest is used up', async () => {
    // Best at LR = 0.02: the ×2 step from 0.01 is kept, everything after it is worse.
    const objective = (v: Values) => 1 + Math.abs(Math.log2(v.LR / 0.02)) + Math.abs(v.N_HEAD - 3) * 0.5;
    const run = await simulate('LR = 0.01\nN_HEAD = 3\n', objective, 200);
    expect(valuesOf(run.best['train.py']).LR).toBe(0.02);
    const jumps = run.proposals.map((p, i) => ({ p, i })).filter(({ p }) => metaOf(p).change?.jump);
    expect(jumps).toHaveLength(1);
    const [{ p: jump, i: at }] = jumps;
    expect(jump.description).toBe('LR 0.02 → 0.08');
    expect(jump.rationale).toBe(
      'LR ×4: the ×2 step in this direction improved val_bpb before, so trying a larger jump.',
    );
    expect(changeOf(jump)).toMatchObject({ direction: 'up', level: 0, jump: true });
    // It came after every single step and pair from the same best; after it come only
    // pairs that combine it (a near-miss too) with the other constant's steps, then nothing.
    expect(metaOf(run.proposals[at - 1]).changes).toHaveLength(2);
    const after = run.proposals.slice(at + 1);
    expect(after.map(p => p.description)).toEqual(['LR 0.02 → 0.08, N_HEAD 3 → 4', 'LR 0.02 → 0.08, N_HEAD 3 → 2']);
    expect(run.proposals.length).toBeLessThan(200);
  });

  it('proposes from a 700-experiment history without repeating any of its states', async () => {
    const src =
      'LEARNING_RATE = 6e-4\nWEIGHT_DECAY = 0.1\nBETA2 = 0.95\nWARMUP_RATIO = 0.0\n' +
      'N_LAYER = 6\nN_EMBD = 384\nBATCH_SIZE = 32\nMAX_ITERS = 5000\n';
    const noise = mulberry32(99);
    const run = await simulate(src, () => 1 + noise(), 700);
    expect(run.history).toHaveLength(701);
    const states = run.proposals.map(p => stateKey(metaOf(p).constants));
    expect(new Set(states).size).toBe(700);
    const ctx = ctxOf(run.best, run.history);
    const next = await new OfflineProposer().propose(ctx);
    expect(next).not.toBeNull();
    expect(states).not.toContain(stateKey(metaOf(next!).constants));
    expect(await new OfflineProposer().propose(ctx)).toEqual(next);
  }, 30_000); // 700 proposals, each reading the whole history so far: a few seconds in all

  it('reads single moves in the old meta shape and rejects meta with both or neither', () => {
    const change = { file: 'train.py', name: 'LR', from: 1, to: 2, direction: 'up', level: 0 };
    const constants = { 'train.py': { LR: 2 } };
    expect(OfflineMeta.safeParse({ kind: 'offline', constants, change }).success).toBe(true);
    expect(OfflineMeta.safeParse({ kind: 'offline', constants }).success).toBe(false);
    const both = { kind: 'offline', constants, change, changes: [change, change] };
    expect(OfflineMeta.safeParse(both).success).toBe(false);
    expect(OfflineMeta.safeParse({ kind: 'offline', constants, changes: [change] }).success).toBe(false);
  });

  it('explains what is wrong when there is nothing to tune', async () => {
    const files = { 'train.py': 'import torch\nlr = 0.1\n\ndef f():\n    X = 1\n' };
    await expect(new OfflineProposer().propose(ctxOf(files, []))).rejects.toThrow(
      new Error(
        'no module-level UPPER_CASE numeric constants found in train.py; ' +
          'the offline proposer can only tune such constants — add some, or use --proposer claude',
      ),
    );
    await expect(new OfflineProposer().propose(ctxOf({ 'train.py': 'SEED = 1\n' }, []))).rejects.toThrow(/random-seed/);
  });
});
