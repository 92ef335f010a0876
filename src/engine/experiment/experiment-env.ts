/**
 * What one experiment runs with: the workspace, its executor, where its logs go and whom it tells
 * as it goes. Its own module so that step mode's review, which experiment.ts awaits, can take it
 * without importing experiment.ts.
 */
import type { RunConfig, RunPurpose } from '../../core/journal/journal';
import type { Executor, RunJob, RunKernel } from '../executor/types';
import type { Repo } from '../git/git';
import type { Ledger } from './ledger';
import type { LogCapture } from './log-capture';
import type { Phase } from '../run/loop-events';
import type { Best } from '../run/loop-records';
import type { StepReview } from '../step-mode/step-review';

export interface ExperimentEnv {
  dir: string;
  repo: Repo;
  config: RunConfig;
  executor: Executor;
  python: string;
  proposerName: string;
  readonlyHashes: Record<string, string>;
  /** Where experiment n's runs go: the i-th run's log file. */
  runLog: (i: number) => string;
  logHeadBytes?: number;
  logTailBytes?: number;
  signal: AbortSignal;
  ledger: Ledger;
  /** The best as it is now (several workers may move it while this experiment is measured). */
  currentBest: () => Best | null;
  worker?: number;
  /** Called with the live log capture as each run starts (for the terminal's live line). */
  onRunStart?: (log: LogCapture, startedAt: number, diff: string, purpose: RunPurpose) => void;
  onPhase?: (phase: Phase) => void;
  onSpawn?: (pgids: number[] | null, cgroups?: string[]) => void;
  onKernel?: (kernel: RunKernel) => void;
  /** A queued executor's i-th run waits as this job (Slurm). */
  onQueued?: (job: RunJob, purpose: RunPurpose, i: number) => void;
  /** What a scheduler lists the i-th run as (autoresearch-<tag>-<n>-<i>). */
  runName?: (i: number) => string;
  /** The workspace the runs belong to (the folder itself, not a worker's worktree). */
  workspace?: string;
  /** Extra environment for the run (a worker's CUDA_VISIBLE_DEVICES). */
  runEnv?: Record<string, string>;
  /** Step mode: a checked proposal waits for its reviewer before it is committed, when the reviewer wants it (absent: it does not). */
  review?: StepReview;
}
