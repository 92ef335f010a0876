/** One training run of the transfer study, in its worktree, as the run's measure.ts makes one for an experiment. */
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { RunConfig } from '../../core/journal/journal';
import { memoryGb, parseSummary, readMetric } from '../../core/rule/summary';
import type { StudyKind, StudyRunRecord } from '../../core/study/transfer-journal';
import { setRunningGroup, setRunningKernel } from '../run/engine-lock';
import { isolationOf } from '../executor/guard';
import type { Executor } from '../executor/types';
import { LogCapture } from '../experiment/log-capture';
import { failureOf } from '../experiment/measure';
import { pathWithPython } from '../workspace/python';
import { jobName } from '../../core/config/slurm';

/** What the run is for and how to run it. */
export interface StudyRunContext {
  dir: string;
  worktree: string;
  config: RunConfig;
  executor: Executor;
  python: string;
  signal: AbortSignal;
  /** Budget and deadline of this run: the study's at the larger scale, the run's for an ablation. */
  budgetS: number;
  timeoutS: number;
  /** The larger scale's environment; empty for an ablation. */
  env: Record<string, string>;
  /** The run studied: its tag names the study's Slurm jobs. */
  tag: string;
}

export interface RunTarget {
  kind: StudyKind;
  commit: string;
  reverted: string | null;
  state: string;
  k: number;
  seed: number;
  hashes: Record<string, string>;
}

/** Runs one target once; null when it was interrupted (nothing measured, nothing recorded). */
export async function runStudyOnce(c: StudyRunContext, t: RunTarget, logFile: string): Promise<StudyRunRecord | null> {
  fs.mkdirSync(path.dirname(logFile), { recursive: true });
  const log = new LogCapture(logFile);
  let outcome;
  try {
    outcome = await c.executor.run({
      cwd: c.worktree,
      command: c.config.run,
      timeoutS: c.timeoutS,
      env: {
        ...pathWithPython(c.python),
        AUTORESEARCH_BUDGET_S: String(c.budgetS),
        AUTORESEARCH_SEED: String(t.seed),
        AUTORESEARCH_RUN: String(t.k),
        ...c.env,
      },
      python: c.python,
      isolation: isolationOf(c.config),
      log,
      signal: c.signal,
      // Recorded in engine.json, so a study killed mid-run has its training run killed by the next engine.
      onSpawn: (pgids, cgroups) => setRunningGroup(c.dir, pgids, 1, cgroups),
      onKernel: kernel => setRunningKernel(c.dir, kernel),
      name: jobName(c.tag, `${t.kind}-${t.commit.slice(0, 7)}`, t.k),
      workspace: c.dir,
    });
  } finally {
    log.close();
  }
  if (outcome.interrupted) return null;
  const summary = parseSummary(log.tailText());
  const read = readMetric(summary, c.config.metric);
  const where = {
    dir: c.worktree,
    readonlyHashes: t.hashes,
    timeoutS: c.timeoutS,
    python: c.python,
    executor: c.executor,
  };
  const reason = failureOf(where, outcome, read, log.tailText())?.reason ?? null;
  return {
    type: 'study_run',
    ts: new Date().toISOString(),
    kind: t.kind,
    commit: t.commit,
    reverted: t.reverted,
    state: t.state,
    k: t.k,
    seed: t.seed,
    metric: reason || 'error' in read ? null : read.value,
    reason,
    summary: summary ?? {},
    run_s: outcome.seconds,
    exit_code: outcome.exitCode,
    signal: outcome.signal,
    memory_gb: memoryGb(summary),
    log_path: logFile,
    ...(outcome.sandbox && { sandbox: outcome.sandbox }),
    ...(outcome.queueS !== undefined && { queue_s: outcome.queueS }),
    ...(outcome.job && {
      job: {
        scheduler: outcome.job.scheduler,
        id: outcome.job.id,
        ...(outcome.job.node && { node: outcome.job.node }),
      },
    }),
  };
}
