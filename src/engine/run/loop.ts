/**
 * The loop, for one worker or N, as the method's steps: propose (propose.ts) → edit → commit →
 * run → measure → judge (experiment/: runExperiment, measure.ts, the judge of
 * src/core/rule/judge.ts) → judge again against the best as it is now → record (the journal,
 * results.tsv) → keep or reset (git), on each lane (lanes.ts) until a stop condition.
 *
 * One global best: the branch `autoresearch/<tag>`, checked out in the workspace folder. Every
 * proposal starts from it as it is at that moment, and a result is kept only if it beats it as
 * it is when the result lands. With several workers the kept commit itself becomes the tip of
 * the branch: a fast-forward when the best did not move meanwhile, else a sideways move to the
 * new keep, which beat the one that landed in between — re-applying it would make a commit
 * nobody measured. Numbers are allocated as proposals arrive, so they are unique and in order.
 */
import * as fs from 'node:fs';
import { budgetWarning } from '../../core/rule/budget-check';
import type { ExperimentRecord, JournalRecord, RunEndRecord, RunPurpose } from '../../core/journal/journal';
import { noiseRuleOf } from '../../core/rule/noise';
import { sandboxOf } from '../../core/config/sandbox';
import { jobName } from '../../core/config/slurm';
import { setRunningGroup, setRunningKernel } from './engine-lock';
import { rejudge, runExperiment } from '../experiment/experiment';
import { MISSING_MODULE } from '../experiment/measure';
import type { LogCapture } from '../experiment/log-capture';
import type { Phase } from './loop-events';
import { interruptedRecord, type Best } from './loop-records';
import { closeLanes, openLanes, type Lane } from './lanes';
import type { Job, LoopInput } from './loop-state';
import { Proposing } from './propose';
import { filesAt } from './rebase-proposal';
import { ReviewPostponed } from '../step-mode/step-review';
import { runPaths } from '../workspace/workspace';
import { UserError } from '../user-error';
import { openAppend } from '../workspace/workspace-files';

/** Runs the loop until a stop condition; writes and returns the run_end record. */
export async function runLoop(o: LoopInput, records: JournalRecord[]): Promise<RunEndRecord> {
  return new RunLoop(o, records).run();
}

class RunLoop extends Proposing {
  /** Runs the baseline, then every lane until a stop condition; journals and returns the run_end record. */
  async run(): Promise<RunEndRecord> {
    const { dir, tag, branch, executors } = this.o;
    const at = { dir, tag, branch, workers: executors.length };
    const lanes = await openLanes(
      this.main,
      at,
      async () => this.best?.commit ?? (await this.main.head()),
      this.gitLock,
    );
    try {
      await this.guard(lanes[0], () => this.baseline(lanes[0]));
      await Promise.all(lanes.map(l => this.guard(l, () => this.work(l))));
    } finally {
      // A draft the run ends without using was paid for: its cost goes in the journal before run_end.
      await this.recordDiscardedDraft(lanes[0]).catch(() => undefined);
      // No mode switch is journaled after the run's end.
      this.review?.close();
      await closeLanes(this.main, at).catch(() => undefined);
    }
    const reason = this.endReason();
    const record: RunEndRecord = {
      type: 'run_end',
      ts: new Date().toISOString(),
      reason,
      message: this.fatal ?? this.stopped?.message ?? null,
      best_commit: this.best?.commit ?? null,
      best_metric: this.best?.metric ?? null,
    };
    this.o.journal.append(record);
    if (this.fatal) {
      throw new UserError(this.fatal);
    }
    return record;
  }

  /** Git or the proposer's plumbing failing outside an experiment stops every worker cleanly. */
  private async guard(lane: Lane, work: () => Promise<void>): Promise<void> {
    try {
      await work();
    } catch (e) {
      this.fail(this.several ? `worker ${lane.k} failed: ${(e as Error).message}` : (e as Error).message);
    }
  }

  /** The baseline, first: measured from scratch, or on from where a killed engine left it. */
  private async baseline(lane: Lane): Promise<void> {
    const resumed = this.resumed.findIndex(c => c.baseline);
    if (this.best || this.halted()) {
      if (resumed >= 0) this.resumed.splice(resumed, 1);
      return;
    }
    const parent = await this.main.head();
    const files = await filesAt(this.main, parent, this.o.config.editable);
    let job: Job;
    if (resumed >= 0) {
      const c = this.resumed.splice(resumed, 1)[0];
      job = { n: c.start.n, proposal: null, from: c.commit, parent: null, files, proposeSeconds: 0, resume: c };
    } else {
      const n = this.next++;
      this.start(n, lane, parent, 'baseline', undefined, 0);
      job = { n, proposal: null, from: parent, parent: null, files, proposeSeconds: 0 };
    }
    const record = await this.experiment(lane, job);
    if (!this.best && record?.status === 'crash') {
      // A module the environment lacks is the environment's to fix, not the code's.
      const fix = MISSING_MODULE.test(record.reason ?? '') ? 'install it' : `fix ${this.o.config.editable[0]}`;
      this.fail(
        `the baseline crashed (${record.reason}); ${fix} — the log is ${record.log_path} — then run again with --resume`,
      );
    }
  }

  /** One lane: take a job (one lane at a time proposes), then run it through the steps; until a stop condition. */
  private async work(lane: Lane): Promise<void> {
    for (;;) {
      const seen = this.finished.count;
      const job = await this.proposals.run(() => this.take(lane));
      if (job === 'stop') return;
      if (job === 'retry') continue;
      if (job === 'wait') {
        await this.finished.after(seen, () => this.signal.aborted || this.fatal !== null);
        continue;
      }
      await this.experiment(lane, job);
    }
  }

  /**
   * The method's steps for one job: edit, commit, run, measure and judge (experiment/), judged
   * again against the best as it is when the result lands (another worker may have moved it),
   * recorded (journal first: a kill after it loses nothing), then keep or reset (git/).
   */
  private async experiment(lane: Lane, job: Job): Promise<ExperimentRecord | null> {
    const record = await this.measured(lane, job);
    if (!record) return null;
    this.warnIfBudgetIgnored(lane, job.n);
    this.noteSandbox(lane, job.n);
    // No await from the judge to the journal, so no other result can land in between.
    this.judgeAgain(job, record);
    const before = this.best;
    this.record(record);
    this.best = this.currentBest();
    await this.keepOrReset(lane, job, record, before);
    return record;
  }

  /** A result judged again (judge.ts, through rejudge) against the best as it is now. */
  private judgeAgain(job: Job, record: ExperimentRecord): void {
    if (job.parent && (record.status === 'keep' || record.status === 'discard')) {
      Object.assign(record, rejudge(record, this.currentBest(), this.ledger, noiseRuleOf(this.o.config)));
    }
  }

  /**
   * Keep: with several workers the branch moves to the kept commit (one worker's folder is on it
   * already). Reset: one worker's folder goes back to the best (a worker's tree is reset when it
   * takes its next job).
   */
  private async keepOrReset(lane: Lane, job: Job, record: ExperimentRecord, before: Best | null): Promise<void> {
    const { o } = this;
    const kept = record.status === 'keep' && record.commit !== null && this.best?.commit === record.commit;
    if (kept && this.several) {
      if (before && job.parent && before.commit !== job.parent.commit) {
        o.emit('note', `#${record.n} beat the best that landed while it ran; ${o.branch} moves to it`);
      }
      // Queued behind any earlier keep's move, so the branch ends at the latest best.
      await this.main.resetHard(record.commit as string);
    } else if (!kept && !this.several) {
      await lane.repo.resetHard(this.best?.commit ?? record.parent_commit);
    }
  }

  /**
   * Edit → commit → run → measure → judge, in the lane (experiment/runExperiment): the job's
   * record, or null when it was stopped awaiting review (nothing recorded; a resume offers it again).
   */
  private async measured(lane: Lane, job: Job): Promise<ExperimentRecord | null> {
    const { o } = this;
    const { n } = job;
    const description = job.resume?.start.description ?? job.proposal?.description ?? 'baseline';
    const worker = this.several ? lane.k : undefined;
    let record: ExperimentRecord;
    let runStartedAt: number | null = null;
    try {
      // One worker's folder is already at the best (reset after every result that was not kept),
      // unless the experiment is a plateau's branch: then it starts from the near-miss's commit.
      if (!job.resume && (this.several || job.proposal?.move?.kind === 'branch')) await lane.repo.resetHard(job.from);
      this.emitFor(lane, 'phase', n, 'apply', description);
      record = await runExperiment(
        {
          dir: lane.dir,
          repo: lane.repo,
          config: o.config,
          executor: o.executors[lane.k - 1],
          python: o.python,
          proposerName: o.proposer.name,
          readonlyHashes: o.readonlyHashes,
          runLog: i => runPaths(o.dir, o.tag).runLog(n, i),
          logHeadBytes: o.logHeadBytes,
          logTailBytes: o.logTailBytes,
          signal: this.signal,
          runEnv: o.devices[lane.k - 1],
          review: job.proposal ? (this.review ?? undefined) : undefined,
          ledger: this.ledger,
          currentBest: () => this.currentBest(),
          worker,
          onPhase: phase => {
            this.emitFor(lane, 'phase', n, phase, description);
            this.notePhase(n, phase);
          },
          onSpawn: (pgids, cgroups) => setRunningGroup(o.dir, pgids, worker, cgroups),
          onKernel: kernel => setRunningKernel(o.dir, kernel, lane.k),
          runName: i => jobName(o.tag, n, i),
          workspace: o.dir,
          onQueued: (job, purpose, i) => {
            this.o.journal.setPhase(n, { name: 'queue', since: new Date().toISOString(), job });
            this.emitFor(lane, 'note', `#${n}: run ${i} (${purpose}) queued as Slurm job ${job.id}`);
          },
          onRunStart: (log, startedAt, diff, purpose) => {
            const mine = this.inFlight.get(n);
            if (mine) mine.diff = diff;
            this.noteRunStart(n, log, startedAt, purpose);
            this.emitFor(lane, 'run-start', n, log, startedAt, o.config.budget_s);
            if (runStartedAt === null) this.draft(lane, job, description, diff);
            runStartedAt ??= startedAt;
          },
        },
        {
          n,
          best: job.parent,
          proposal: job.proposal,
          proposeSeconds: job.proposeSeconds,
          resumeCommit: job.resume?.commit,
          baseline: job.resume?.baseline,
        },
      );
    } catch (e) {
      if (e instanceof ReviewPostponed) {
        // Stopped while awaiting review: nothing recorded, so a resume offers it again; the tree goes back to the best.
        this.inFlight.delete(n);
        await lane.repo.resetHard(this.several ? job.from : (this.best?.commit ?? job.from));
        return null;
      }
      // A failure of git or of the executor itself, not of the experiment: the run cannot go on.
      // One worker: the executor's own message, which names the fix (a kernel that cannot start).
      const message = this.several
        ? `worker ${lane.k} failed during experiment #${n}: ${(e as Error).message}`
        : (e as Error).message;
      const start = {
        type: 'experiment_start' as const,
        ts: '',
        n,
        parent_commit: job.from,
        description,
        ...(worker ? { worker } : {}),
      };
      record = interruptedRecord(start, null, this.best, message);
      this.fail(message);
    }
    // How it searched (Proposal.move; the engine's 'branch' on a plateau), for the journal and the tree view.
    const move = job.proposal?.move ?? job.resume?.proposal?.move;
    if (move) record.move = move;
    if (runStartedAt !== null) {
      // Time a scheduler held the first run is not the accelerator's idle time: it was not ours yet.
      const queued = this.ledger.runsFor(n)[0]?.queue_s ?? 0;
      record.timings.idle_s = Math.max(0, (runStartedAt - lane.lastRunEnd) / 1000 - queued);
      lane.lastRunEnd = Date.now();
    }
    return record;
  }

  /**
   * What experiment n does now, for state.json (LivePhase): the steps before and after its runs.
   * A run's own phases come from noteRunStart, when it has started, not when it is about to.
   */
  private notePhase(n: number, phase: Phase): void {
    if (phase === 'apply' || phase === 'review' || phase === 'commit' || phase === 'judge' || phase === 'check') {
      this.o.journal.setPhase(n, { name: phase, since: new Date().toISOString() });
    }
  }

  /** A training run of experiment n started: `train`, counted down from now, then `evaluate` once it says so. */
  private noteRunStart(n: number, log: LogCapture, startedAt: number, purpose: RunPurpose): void {
    const run = {
      // Its runs journaled so far, this one not yet: the same count runOnce numbers its log by.
      i: this.ledger.runsFor(n).length + 1,
      purpose,
      started: new Date(startedAt).toISOString(),
      budget_s: this.o.config.budget_s,
    };
    this.o.journal.setPhase(n, { name: 'train', since: run.started, run });
    log.onEvaluating = () => this.o.journal.setPhase(n, { name: 'evaluate', since: new Date().toISOString(), run });
  }

  /**
   * One line, on the terminal and at the end of the run's log, when experiment n's runs trained
   * for another budget than AUTORESEARCH_BUDGET_S (src/core/rule/budget-check.ts has the rule): the
   * budget counted down was not the one trained. The best's re-measures were checked as its own.
   */
  private warnIfBudgetIgnored(lane: Lane, n: number): void {
    const ignored = budgetWarning(
      this.o.config.budget_s,
      this.ledger.runsFor(n).filter(r => r.purpose !== 'best'),
    );
    if (!ignored) return;
    this.emitFor(lane, 'note', `#${n}: ${ignored.message}`);
    for (const log of ignored.logPaths) {
      try {
        const fd = openAppend(log);
        try {
          fs.writeSync(fd, `autoresearch: ${ignored.message}\n`);
        } finally {
          fs.closeSync(fd);
        }
      } catch {
        // A log that is gone keeps no warning; the terminal has it.
      }
    }
  }

  /** Whether the runs so far were sandboxed, as of the last note: one line when that first shows, or changes. */
  private sandboxNoted: 'on' | 'off' | undefined;

  /** Whether the sandbox's missing part was said already (once a run is enough). */
  private missingNoted = false;

  private noteSandbox(lane: Lane, n: number): void {
    const run = this.ledger.runsFor(n).at(-1);
    if (run?.sandbox === 'on' && run.sandbox_missing?.length && !this.missingNoted) {
      this.missingNoted = true;
      this.emitFor(lane, 'note', `training runs are sandboxed without: ${run.sandbox_missing.join('; ')}`);
    }
    const last = run?.sandbox;
    if (last === undefined || last === this.sandboxNoted) return;
    const before = this.sandboxNoted;
    this.sandboxNoted = last;
    // Sandboxed runs are the rule (status says so); the exception gets its line, once.
    if (last === 'off' && sandboxOf(this.o.config.sandbox).mode !== 'off') {
      this.emitFor(
        lane,
        'note',
        `training runs are not sandboxed${before === 'on' ? ' any more' : ''}: the first line of each run's log says why`,
      );
    }
  }
}
