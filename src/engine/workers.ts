/**
 * Several workers: N experiments at once, each in its own worktree with its own
 * executor. One global best (the branch `autoresearch/<tag>`, checked out in
 * the workspace folder); every proposal starts from it as it is at that moment,
 * and a result is kept only if it beats it as it is when the result comes in.
 *
 * Advancing the best: the kept commit itself becomes the tip of
 * `autoresearch/<tag>` (`git reset --hard` in the workspace folder): a
 * fast-forward when the best did not move during the run, else a sideways move
 * to the new keep, which beat the one that landed meanwhile. Re-applying it on
 * that newer best would make a commit nobody measured; this way the tip's code
 * is exactly what measured the best metric, and git, the journal and
 * results.tsv name the same commit. A superseded keep stays in the journal.
 *
 * Proposals are made one at a time, each seeing every finished experiment and
 * every one in flight, so two workers never get the same idea from a
 * deterministic proposer; while one worker waits for a proposal the others
 * train, which is what pipelining gives a single worker, so it is off here. A
 * slow proposal that saw the best move is re-applied on the new best (see
 * rebase-proposal.ts). Numbers are allocated as proposals arrive, so they are
 * unique and in order.
 */
import type { ExperimentRecord, JournalRecord, RunConfig, RunEndRecord } from '../core/journal';
import { experimentsOf } from '../core/journal';
import { noiseRuleOf } from '../core/noise';
import { setRunningGroup, setRunningKernel } from './engine-lock';
import type { Executor } from './executor/types';
import { rejudge, runExperiment } from './experiment';
import { Ledger, noiseFacts } from './ledger';
import { proposalFacts } from './resume';
import { Repo } from './git';
import type { JournalStore } from './journal-store';
import { abandonedRecord, bestOf, interruptedRecord, stopReason, type Best } from './loop-records';
import { EventCount, Mutex } from './mutex';
import { ProposalAbandoned, type InFlight, type Proposal, type Proposer } from './proposers/types';
import { filesAt, rebaseProposal } from './rebase-proposal';
import { appendResult } from './results-file';
import { currentProgramBody, runPaths, UserError } from './workspace';
import { createWorktrees, removeWorktrees, worktreesRoot, type Worktree } from './worktrees';

export { checkWorkerFiles, deviceEnvs } from './worktrees';

export interface PoolOptions {
  dir: string;
  tag: string;
  branch: string;
  config: RunConfig;
  journal: JournalStore;
  python: string;
  proposer: Proposer;
  programBody: string;
  readonlyHashes: Record<string, string>;
  seed: number;
  /** One per worker, worker K's at K-1; likewise its extra environment. */
  executors: Executor[];
  devices: Array<Record<string, string>>;
  signal: AbortSignal;
  maxExperiments?: number;
  /** Epoch ms after which no experiment starts. */
  deadline: number;
  maxDollars?: number;
  logHeadBytes?: number;
  logTailBytes?: number;
  emit: (event: string, ...args: unknown[]) => void;
}

interface Job {
  n: number;
  proposal: Proposal;
  parent: Best;
  proposeSeconds: number;
}

/** Runs the workers until a stop condition; writes and returns the run_end record. */
export async function runWorkers(o: PoolOptions, records: JournalRecord[]): Promise<RunEndRecord> {
  return new WorkerPool(o, records).run();
}

class WorkerPool {
  private best: Best | null;
  private next: number;
  private proposed = 0;
  /** Experiments finished: a worker whose proposer had nothing waits for the next one. */
  private readonly finished = new EventCount();
  private readonly inFlight = new Map<number, InFlight & { cost: number }>();
  private stopped: { reason: RunEndRecord['reason']; message: string | null } | null = null;
  private fatal: string | null = null;
  private readonly proposals = new Mutex();
  private readonly gitLock = new Mutex();
  private readonly main: Repo;
  /** Aborted by the user's signal, or by a fatal error in one worker so the others stop too. */
  private readonly internal = new AbortController();
  private readonly signal: AbortSignal;

  private readonly history: ExperimentRecord[];
  private readonly ledger: Ledger;

  constructor(
    private readonly o: PoolOptions,
    records: JournalRecord[]
  ) {
    this.history = experimentsOf(records);
    this.ledger = new Ledger(o.journal, records);
    this.best = bestOf(this.history, this.ledger.measurements);
    this.next = Math.max(-1, ...records.filter(r => r.type === 'experiment' || r.type === 'experiment_start').map(r => r.n)) + 1;
    this.main = new Repo(o.dir, this.gitLock);
    this.signal = AbortSignal.any([o.signal, this.internal.signal]);
    this.signal.addEventListener('abort', () => this.finished.wakeAll(), { once: true });
  }

  async run(): Promise<RunEndRecord> {
    const root = worktreesRoot(this.o.dir, this.o.tag);
    const start = this.best?.commit ?? (await this.main.head());
    const trees = await createWorktrees(this.main, root, this.o.branch, this.o.executors.length, start, this.gitLock);
    try {
      if (!this.best && !this.halted()) {
        await this.baseline(trees[0]);
      }
      await Promise.all(trees.map(t => this.work(t)));
    } finally {
      await removeWorktrees(this.main, root).catch(() => undefined);
    }
    const reason = this.fatal ? 'error' : (this.stopped?.reason ?? stopReason(this.o.signal));
    const record: RunEndRecord = {
      type: 'run_end', ts: new Date().toISOString(), reason, message: this.fatal ?? this.stopped?.message ?? null,
      best_commit: this.best?.commit ?? null, best_metric: this.best?.metric ?? null
    };
    this.o.journal.append(record);
    if (this.fatal) {
      throw new UserError(this.fatal);
    }
    return record;
  }

  /** True once no new experiment may start; records why the first time. */
  private halted(): boolean {
    if (this.fatal || this.stopped) return true;
    const stop = (reason: RunEndRecord['reason'], message: string | null = null) => ((this.stopped = { reason, message }), true);
    if (this.o.signal.aborted) return stop(stopReason(this.o.signal));
    if (this.best && this.o.maxExperiments !== undefined && this.proposed >= this.o.maxExperiments) return stop('max-experiments');
    if (Date.now() >= this.o.deadline) return stop('hours');
    return false;
  }

  private fail(message: string): void {
    this.fatal ??= message;
    this.internal.abort('error');
  }

  private async baseline(t: Worktree): Promise<void> {
    const parent = await this.main.head();
    const n = this.next++;
    this.start(n, t, parent, 'baseline', undefined, 0);
    const record = await this.experiment(t, n, null, parent, null, 0);
    if (!this.best && record.status === 'crash') {
      this.fail(`the baseline crashed (${record.reason}); fix ${this.o.config.editable[0]} — the log is ${record.log_path} — then run again with --resume`);
    }
  }

  /** One worker: propose (one worker at a time), run, record; until the run stops. */
  private async work(t: Worktree): Promise<void> {
    try {
      await this.loop(t);
    } catch (e) {
      // Git or the proposer's plumbing failed outside an experiment: stop every worker cleanly.
      this.fail(`worker ${t.k} failed: ${(e as Error).message}`);
    }
  }

  private async loop(t: Worktree): Promise<void> {
    for (;;) {
      const seen = this.finished.count;
      const job = await this.proposals.run(() => this.propose(t));
      if (job === 'stop') return;
      if (job === 'retry') continue;
      if (job === 'wait') {
        await this.finished.after(seen, () => this.signal.aborted || this.fatal !== null);
        continue;
      }
      await this.experiment(t, job.n, job.proposal, job.parent.commit, job.parent, job.proposeSeconds);
    }
  }

  private async propose(t: Worktree): Promise<Job | 'stop' | 'wait' | 'retry'> {
    if (this.halted() || !this.best) return 'stop';
    const { proposer, config } = this.o;
    // The worker's branch sits on the proposal's parent before its start is journaled, so a
    // resume after kill -9 knows a commit on top of it as this experiment's. A result that
    // lands meanwhile moves the best: then again, so the proposer sees the best as it is.
    let best: Best;
    let files: Record<string, string>;
    do {
      best = this.best;
      await t.repo.resetHard(best.commit);
      files = await filesAt(this.main, best.commit, config.editable);
    } while (this.best !== null && this.best.commit !== best.commit);
    const inFlight = [...this.inFlight.values()].map(({ cost: _cost, ...e }) => e);
    const ctx = {
      // program.md as the researcher has it now in the workspace folder (edits reach the next proposal).
      workdir: t.dir, files, history: [...this.history], program: currentProgramBody(this.o.dir, this.o.programBody), metric: config.metric,
      direction: config.direction, seed: this.o.seed, signal: this.signal, inFlight, bestCommit: best.commit,
      noise: noiseFacts(config, this.ledger.measurements, best)
    };
    if (this.o.maxDollars !== undefined) {
      const spent = this.history.reduce((s, r) => s + r.cost_usd, 0) + [...this.inFlight.values()].reduce((s, e) => s + e.cost, 0);
      const estimate = proposer.estimateNextCost?.(ctx) ?? 0;
      if (spent + estimate > this.o.maxDollars) {
        this.stopped = { reason: 'budget', message: `spent $${spent.toFixed(4)} of --max-dollars ${this.o.maxDollars}; the next proposal would cost about $${estimate.toFixed(4)}` };
        return 'stop';
      }
    }
    this.o.emit('phase', this.next, 'propose', '', t.k);
    const started = Date.now();
    let proposal: Proposal | null;
    try {
      proposal = await proposer.propose(ctx);
    } catch (e) {
      if (this.signal.aborted) return 'stop';
      if (e instanceof ProposalAbandoned) {
        // The model gave up (too many turns or failed edits): record what it cost and try again.
        const record = { ...abandonedRecord(this.next++, best, e, proposer.name, (Date.now() - started) / 1000), worker: t.k };
        this.proposed++;
        this.record(record);
        return 'retry';
      }
      this.fail(`the ${proposer.name} proposer failed: ${(e as Error).message}`);
      return 'stop';
    }
    if (this.signal.aborted) return 'stop';
    if (proposal === null) {
      if (this.inFlight.size === 0) {
        this.stopped = { reason: 'exhausted', message: `the ${proposer.name} proposer has nothing left to try` };
        return 'stop';
      }
      // What is in flight may change the best, or free its ideas: ask again when one finishes.
      return 'wait';
    }
    // A slow proposal may have seen the best move: re-applied on the new one; on a conflict it runs
    // from the best it was made on (and is judged, like every result, against the best when it lands).
    let parent = best;
    for (let tries = 0; this.best !== null && this.best.commit !== parent.commit && tries < 3; tries++) {
      const now: Best = this.best;
      const onto = await filesAt(this.main, now.commit, config.editable);
      const rebased = await rebaseProposal(proposal, files, onto);
      if (!rebased) break;
      [proposal, files, parent] = [rebased, onto, now];
    }
    const n = this.next++;
    this.proposed++;
    const proposeSeconds = (Date.now() - started) / 1000;
    this.start(n, t, parent.commit, proposal.description, proposal.meta, proposal.cost_usd ?? 0, proposal, proposeSeconds);
    return { n, proposal, parent, proposeSeconds };
  }

  private start(n: number, t: Worktree, parent: string, description: string, meta: unknown, cost: number, proposal?: Proposal, proposeS = 0): void {
    const facts = proposal ? { proposal: proposalFacts(proposal, this.o.proposer.name, proposeS) } : {};
    this.o.journal.append({ type: 'experiment_start', ts: new Date().toISOString(), n, parent_commit: parent, description, worker: t.k, ...facts });
    this.inFlight.set(n, { n, worker: t.k, description, diff: '', meta, cost });
  }

  /** Runs experiment n in worker t's worktree from `from`, the best `parent` then (null for the baseline). */
  private async experiment(t: Worktree, n: number, proposal: Proposal | null, from: string, parent: Best | null, proposeSeconds: number): Promise<ExperimentRecord> {
    const { o } = this;
    const description = proposal?.description ?? 'baseline';
    let record: ExperimentRecord;
    try {
      await t.repo.resetHard(from);
      record = await runExperiment(
        {
          dir: t.dir, repo: t.repo, config: o.config, executor: o.executors[t.k - 1], python: o.python, proposerName: o.proposer.name,
          readonlyHashes: o.readonlyHashes, runLog: i => runPaths(o.dir, o.tag).runLog(n, i), logHeadBytes: o.logHeadBytes, logTailBytes: o.logTailBytes,
          signal: this.signal, runEnv: o.devices[t.k - 1], ledger: this.ledger, currentBest: () => this.currentBest(), worker: t.k,
          onPhase: phase => o.emit('phase', n, phase, description, t.k),
          onSpawn: pgid => setRunningGroup(o.dir, pgid, t.k),
          onKernel: kernel => setRunningKernel(o.dir, kernel, t.k),
          onRunStart: (log, startedAt, diff) => {
            const mine = this.inFlight.get(n);
            if (mine) mine.diff = diff;
            o.emit('run-start', n, log, startedAt, o.config.budget_s, t.k);
          }
        },
        { n, best: parent, proposal, proposeSeconds }
      );
    } catch (e) {
      // A failure of git or of the executor itself, not of the experiment: the run cannot go on.
      const message = `worker ${t.k} failed during experiment #${n}: ${(e as Error).message}`;
      const start = { type: 'experiment_start' as const, ts: '', n, parent_commit: from, description, worker: t.k };
      record = interruptedRecord(start, null, this.best, message);
      this.fail(message);
    }
    record.worker = t.k;
    // Judged again against the best as it is now: another worker may have moved it. No await
    // from here to the journal, so no other result can land in between.
    if (parent && record.status === 'keep') {
      Object.assign(record, rejudge(record, this.currentBest(), this.ledger, noiseRuleOf(o.config)));
    }
    const kept = record.status === 'keep' && record.commit !== null && record.metric !== null;
    const before = this.best;
    this.record(record);
    this.best = this.currentBest();
    if (kept) {
      if (before && parent && before.commit !== parent.commit) {
        o.emit('note', `#${n} beat the best that landed while it ran; ${o.branch} moves to it`);
      }
      // Queued behind any earlier keep's move, so the branch ends at the latest best.
      await this.main.resetHard(record.commit as string);
    }
    return record;
  }

  /** The best as it stands: the last keep to land, its metric the mean of all its runs. */
  private currentBest(): Best | null {
    return bestOf(this.history, this.ledger.measurements);
  }

  /** Journal first (a kill after it loses nothing), then results.tsv, the history and the listeners. */
  private record(record: ExperimentRecord): void {
    this.inFlight.delete(record.n);
    this.ledger.settle(record);
    appendResult(this.o.dir, record);
    this.history.push(record);
    this.o.emit('experiment', record);
    this.finished.add();
  }
}
