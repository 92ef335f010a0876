/**
 * A synthetic but realistic research history, for tests and bench/claude-replay.mjs: what a
 * long run's journal holds once the claude proposer records predictions and lessons. Each
 * experiment changes one constant of tiny-cpu's train.py (or names an idea), most are discarded,
 * some kept, a few crash or are abandoned; each has the summary block the template prints, the
 * verdict of the noise-aware rule, and, with `logDir`, a log whose last lines hold the loss.
 * Deterministic for a seed.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { ExperimentRecord } from '../../src/core/journal/journal';

const CONSTANTS: Array<[string, number[]]> = [
  ['LEARNING_RATE', [0.0001, 0.0002, 0.0004, 0.0008, 0.0016, 0.003]],
  ['N_LAYER', [2, 4, 6, 8, 10, 12]],
  ['N_EMBD', [64, 96, 128, 192, 256]],
  ['BATCH_SIZE', [8, 16, 32, 64]],
  ['SEQ_LEN', [64, 128, 256]],
  ['HEAD_DIM', [16, 32, 64]],
  ['MLP_RATIO', [2, 3, 4, 6]],
  ['WEIGHT_DECAY', [0, 0.01, 0.05, 0.1, 0.2]],
  ['WARMUP_FRAC', [0, 0.02, 0.05, 0.1, 0.2]],
  ['FINAL_LR_FRAC', [0, 0.05, 0.1, 0.3]],
  ['GRAD_CLIP', [0.5, 1, 2, 0]],
  ['DROPOUT', [0, 0.05, 0.1]],
];
const IDEAS = ['rotary embeddings', 'tied embeddings', 'swiglu mlp', 'qk layer norm', 'cosine schedule', 'z-loss'];
const WHY = [
  'the loss still falls steeply at the end of the budget, so the model is undertrained, not overfit',
  'the last keep gained steps per second; spending them on width may buy more than on depth',
  'a shallower net gets more steps in 60 s, which mattered more than capacity so far',
  'warmup eats a larger share of a one-minute budget than of the original five',
];

/** A seeded generator (mulberry32). */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export interface ResearchHistoryOptions {
  seed?: number;
  /** Seconds between experiments (their ts), default 95: tiny-cpu's 60 s budget and what surrounds it. */
  gapS?: number;
  /** Where to write each experiment's log (the loss line and the device line); none by default. */
  logDir?: string;
  /** Proposer of the records after the baseline (default claude). */
  proposer?: string;
  /**
   * Research notes as a run writes them (src/engine/proposers/claude/notes.ts): every 25
   * experiments, each with the 13th of a chunk (after the 12th), so that a history cut anywhere
   * has notes that are not due yet. None by default.
   */
  notes?: boolean;
}

/** Notes of a realistic length (~1,400 characters) written after experiment `through`. */
function plantedNotes(through: number): { text: string; through: number } {
  const findings = CONSTANTS.slice(0, 6).map(
    ([k, v], i) => `- ${k} ${v[1]} beats ${v[0]} (#${through - 20 + i}, 2.${i}σ)`,
  );
  const dead = IDEAS.slice(0, 4).map((idea, i) => `- ${idea}: no gain in ${i + 2} tries; slower steps`);
  const open = WHY.map(w => `- ${w}`);
  return {
    text: `## Findings\n${findings.join('\n')}\n\n## Dead ends\n${dead.join('\n')}\n\n## Open hypotheses\n${open.join('\n')}`,
    through,
  };
}

/** `count` experiments, #0 the baseline; the noise σ is 0.004 per run. */
export function researchHistory(count: number, o: ResearchHistoryOptions = {}): ExperimentRecord[] {
  const rand = rng(o.seed ?? 1);
  const sigma = 0.004;
  const out: ExperimentRecord[] = [];
  let best = 2.1;
  const start = Date.parse('2026-11-30T22:00:00Z');
  for (let n = 0; n < count; n++) {
    const roll = rand();
    const status: ExperimentRecord['status'] =
      n === 0 ? 'keep' : roll < 0.08 ? 'keep' : roll < 0.12 ? 'crash' : roll < 0.13 ? 'rejected' : 'discard';
    const [name, values] = CONSTANTS[Math.floor(rand() * CONSTANTS.length)];
    const from = values[Math.floor(rand() * values.length)];
    const others = values.filter(v => v !== from);
    const to = others[Math.floor(rand() * others.length)];
    const idea = rand() < 0.15 ? IDEAS[Math.floor(rand() * IDEAS.length)] : null;
    const gain = status === 'keep' ? 0.005 + rand() * 0.02 : -(rand() * 0.03) + 0.004;
    const metric = status === 'crash' || status === 'rejected' ? null : n === 0 ? best : best - gain;
    const delta = metric === null || n === 0 ? null : metric - best;
    const steps = 3000 + Math.floor(rand() * 2500);
    const log = o.logDir && metric !== null ? path.join(o.logDir, `${String(n).padStart(4, '0')}.log`) : null;
    if (log) {
      const loss = (metric as number) * 0.69 + rand() * 0.02;
      fs.writeFileSync(
        log,
        `device cpu | params 1.21M | layers 6 | width 128 | heads 4 | batch 16x128 | budget 60s\n` +
          `step 1 | loss 5.5451 | lr 2.00e-05 | elapsed 0.0s\nstep ${steps} | loss ${loss.toFixed(4)} | lr 2.00e-05 | elapsed 60.0s\n` +
          `---\nval_bpb:          ${(metric as number).toFixed(6)}\n`,
      );
    }
    const description =
      n === 0
        ? 'baseline'
        : idea
          ? `try ${idea} in the attention blocks, keeping the parameter count the same`
          : `change ${name} from ${from} to ${to}: ${WHY[n % WHY.length].split(',')[0]}`;
    out.push({
      type: 'experiment',
      ts: new Date(start + n * (o.gapS ?? 95) * 1000).toISOString(),
      n,
      parent_commit: 'a'.repeat(40),
      commit: status === 'rejected' ? null : (n + 1).toString(16).padStart(40, 'c'),
      description,
      rationale: n === 0 ? '' : `${WHY[n % WHY.length]}; one change, so one run can judge it.`,
      diff:
        n === 0 || status === 'rejected'
          ? ''
          : idea
            ? `--- a/train.py\n+++ b/train.py\n@@ -90,3 +90,4 @@\n         q, k = self.rotary(q), self.rotary(k)\n+        # ${idea}\n`
            : `--- a/train.py\n+++ b/train.py\n@@ -30,1 +30,1 @@\n-${name} = ${from}\n+${name} = ${to}\n`,
      lines_added: n === 0 ? 0 : 1,
      lines_removed: n === 0 || idea ? 0 : 1,
      summary:
        metric === null
          ? {}
          : {
              val_bpb: Number(metric.toFixed(6)),
              training_seconds: 60.1,
              total_seconds: 68.4,
              peak_vram_mb: Math.round(400 + rand() * 500),
              mfu_percent: 0,
              total_tokens_M: Number(((steps * 2048) / 1e6).toFixed(1)),
              num_steps: steps,
              num_params_M: Number((0.8 + rand() * 2).toFixed(1)),
              depth: 6,
            },
      metric: metric === null ? null : Number(metric.toFixed(6)),
      best_before: n === 0 ? null : best,
      delta: delta === null ? null : Number(delta.toFixed(6)),
      status,
      reason:
        status === 'crash'
          ? 'exited with code 1: RuntimeError: shape mismatch in attention'
          : status === 'rejected'
            ? 'proposal abandoned: 3 failed edits; the last: old_str was not found in train.py'
            : null,
      memory_gb: 0.6,
      timings: { propose_s: 14, run_s: 68.4, total_s: 82.4 },
      exit_code: status === 'crash' ? 1 : 0,
      signal: null,
      log_path: log,
      log_truncated: false,
      proposer: n === 0 ? 'baseline' : (o.proposer ?? 'claude'),
      usage: { input_tokens: 0, output_tokens: 0, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 },
      cost_usd: 0,
      ...(metric !== null && n > 0
        ? {
            verdict: {
              sigma,
              se: sigma,
              floor: 2 * sigma * Math.SQRT1_2 * Math.SQRT2,
              keep_sigma: 2,
              best_runs: 3,
              strict: false,
              confirmed: status === 'keep',
              spent: { measure: 1, noise: 0, confirm: status === 'keep' ? 1 : 0, best: 0 },
            },
          }
        : {}),
      ...(n > 0
        ? {
            proposal_meta: {
              model: 'claude-sonnet-5-5',
              effort: 'high',
              thinking: 'adaptive, effort high',
              turns: 2,
              failed_edits: 0,
              expected_delta: Number((-(0.002 + rand() * 0.01)).toFixed(4)),
              ...(n > 2
                ? { lesson: { about: n - 2, text: `#${n - 2} says ${WHY[(n + 1) % WHY.length].split(',')[0]}` } }
                : {}),
              ...(idea ? { direction: idea } : {}),
              ...(o.notes && n % 25 === 13 && n > 25 ? { notes: plantedNotes(n - 1) } : {}),
            },
          }
        : {}),
    });
    if (status === 'keep' && metric !== null) best = Number(metric.toFixed(6));
  }
  return out;
}
