/**
 * The run's facts for a proposal's context: the budget and files from the resolved config, the
 * limits left from the loop's counters, and what the engine can see of the machine a subprocess
 * trains on. A kernel's machine may be another one (a remote GPU), so nothing is said of it here;
 * the run's own log says what it trained on.
 */
import { execFileSync } from 'node:child_process';
import * as os from 'node:os';
import type { RunConfig } from '../../core/journal/journal';
import type { RunFacts } from './types';

export interface RunFactsInput {
  config: RunConfig;
  /** The executor's name ('subprocess' or 'kernel'). */
  executor: string;
  workers: number;
  /** --max-experiments and the experiments the run has made so far (every session of it). */
  maxExperiments?: number;
  proposed: number;
  /** Epoch ms, Infinity when --hours is not set. */
  deadline: number;
  maxDollars?: number;
  spentUsd: number;
  /** The training runs' extra environment (a worker's CUDA_VISIBLE_DEVICES). */
  env?: Record<string, string>;
}

/** The facts the loop hands a proposer with each proposal. */
export function runFacts(o: RunFactsInput): RunFacts {
  return {
    budgetS: o.config.budget_s,
    timeoutS: o.config.timeout_s,
    editable: [...o.config.editable],
    readonly: [...o.config.readonly],
    executor: o.executor,
    machine: o.executor === 'subprocess' ? machineWords(o.env) : null,
    workers: o.workers,
    experimentsLeft: o.maxExperiments === undefined ? null : Math.max(0, o.maxExperiments - o.proposed),
    deadline: Number.isFinite(o.deadline) ? o.deadline : null,
    maxDollars: o.maxDollars ?? null,
    spentUsd: o.spentUsd,
    ...(o.config.log_pattern !== undefined ? { logPattern: o.config.log_pattern } : {}),
  };
}

let gpus: string[] | null | undefined;

/** The GPUs nvidia-smi lists ("NVIDIA H100 80GB HBM3, 81559 MiB"), asked once; null without nvidia-smi. */
function gpuList(): string[] | null {
  if (gpus !== undefined) return gpus;
  try {
    const out = execFileSync('nvidia-smi', ['--query-gpu=name,memory.total', '--format=csv,noheader'], {
      encoding: 'utf8',
      timeout: 5000,
      stdio: ['ignore', 'pipe', 'ignore'],
    });
    gpus = out
      .split('\n')
      .map(l => l.trim())
      .filter(Boolean);
  } catch {
    gpus = null;
  }
  return gpus;
}

/** "16 CPU cores, 125 GB of memory; GPUs: NVIDIA H100 80GB HBM3 (81559 MiB), CUDA_VISIBLE_DEVICES=0". */
export function machineWords(env: Record<string, string> = {}, listGpus: () => string[] | null = gpuList): string {
  const cores = os.availableParallelism?.() ?? os.cpus().length;
  const parts = [`${cores} CPU cores, ${Math.round(os.totalmem() / 2 ** 30)} GB of memory`];
  const list = listGpus();
  const visible = env.CUDA_VISIBLE_DEVICES ?? process.env.CUDA_VISIBLE_DEVICES;
  if (list && list.length) {
    const shown = list.map(g => g.replace(/,\s*(\d+ MiB)$/, ' ($1)'));
    parts.push(`GPUs: ${shown.join('; ')}${visible !== undefined ? `, CUDA_VISIBLE_DEVICES=${visible}` : ''}`);
  } else {
    parts.push('no NVIDIA GPU found (nvidia-smi lists none)');
  }
  return parts.join('; ');
}
