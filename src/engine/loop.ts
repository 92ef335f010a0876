/**
 * The engine's loop: set up or resume a run, then propose → experiment →
 * keep or reset → journal, until a stop condition. The journal and git are
 * the only state; everything here can be rebuilt from them after a kill -9.
 */
import { EventEmitter } from 'node:events';
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { ExperimentStartRecord, JournalRecord, RunConfig, RunEndRecord } from '../core/journal';
import { experimentsOf } from '../core/journal';
import { ENGINE_VERSION } from './version';
import { locatePython } from './python';
import type { Executor } from './executor/types';
import { runExperiment, type ExperimentEnv } from './experiment';
import { Ledger, noiseFacts } from './ledger';
import { Measurements } from '../core/measurements';
import { continuations, proposalFacts, type Continuation } from './resume';
import { ProposalSource } from './pipeline';
import type { Repo } from './git';
import { JournalStore } from './journal-store';
import type { LogCapture } from './log-capture';
import { ProposalAbandoned, type Proposer } from './proposers/types';
import { abandonedRecord, bestOf, findInFlight, interruptedRecord, stopReason, type Best } from './loop-records';
import { checkWorkerFiles, deviceEnvs, runWorkers } from './workers';
import { removeWorktrees, worktreesRoot } from './worktrees';

export { bestOf, type Best } from './loop-records';
import { appendResult, reconcileResults } from './results-file';
import { acquireEngineLock, assertNoOtherEngine, releaseEngineLock, setRunningGroup, setRunningKernel } from './engine-lock';
import { checkWorkspace, currentProgramBody, defaultTag, hashFiles, latestTag, loadProgram, runPaths, UserError } from './workspace';

export interface LoopOptions {
  dir: string;
  tag?: string;
  resume?: boolean;
  proposer: Proposer;
  executor: Executor;
  python: string;
  seed?: number;
  /** Stop after this many experiments in this invocation (the baseline not counted). */
  maxExperiments?: number;
  hours?: number;
  /** Stop before a proposal that would take the run's spending (all its experiments) past this many dollars. */
  maxDollars?: number;
  overrides?: Partial<RunConfig>;
  /** Draft the next proposal while an experiment trains (for pipelined proposers); default true. */
  pipeline?: boolean;
  /** Aborted to stop the run cleanly (signals, `autoresearch stop`). */
  signal: AbortSignal;
  logHeadBytes?: number;
  logTailBytes?: number;
  /** Experiments at once, each in its own git worktree with its own executor; default 1. */
  workers?: number;
  /** A new executor for another worker (workers 2..N; worker 1 uses `executor`). */
  executorFor?: (worker: number) => Executor;
}

/**
 * Events: 'phase' (n, phase, description[, worker]), 'run-start' (n, log, startedAt, budgetS[, worker]),
 * 'experiment' (record), 'note' (text). The worker argument comes with several workers only.
 */
export class Loop extends EventEmitter {
  tag = '';
  branch = '';
  config!: RunConfig;

  constructor(private readonly opts: LoopOptions) {
    super();
  }

  /** Runs until a stop condition and returns the run_end record. */
  async run(): Promise<RunEndRecord> {
    const { dir } = this.opts;
    const { program, config } = loadProgram(dir, this.opts.overrides);
    this.config = config;
    this.tag = this.opts.tag ?? (this.opts.resume ? latestTag(dir) ?? defaultTag() : defaultTag());
    if (!/^[\w.-]+$/.test(this.tag)) {
      throw new UserError(`tag "${this.tag}" may only use letters, digits, ".", "_" and "-"`);
    }
    this.branch = `autoresearch/${this.tag}`;
    const paths = runPaths(dir, this.tag);
    const journal = new JournalStore(paths.journal);
    const python = await locatePython(this.opts.python).catch(e => {
      throw new UserError((e as Error).message);
    });
    const workers = this.opts.workers ?? 1;
    const executors = workers > 1 ? this.executors(workers) : [this.opts.executor];
    const devices = deviceEnvs(executors);
    // Checks that only read come before the lock, so a refused run leaves no trace.
    assertNoOtherEngine(dir);
    const records = journal.read();
    const inFlight = this.opts.resume ? findInFlight(records) : [];
    // An experiment left in flight may have left its edit uncommitted: resume resets it.
    const repo = await checkWorkspace(dir, this.config, { allowDirty: inFlight.length ? this.config.editable : [] });
    if (workers > 1) {
      await checkWorkerFiles(repo, this.config);
      this.config = { ...this.config, workers };
    }
    const left = acquireEngineLock(dir, this.tag);
    try {
      // Kernels a killed engine's runs went to are interrupted (the runner ends the training) and, if it started them, shut down.
      await Promise.all(executors.map(e => e.reclaim?.(left)));
      let resumable: Continuation[] = [];
      if (this.opts.resume) {
        resumable = await this.resume(repo, records, inFlight, journal);
      } else {
        await this.setUp(repo, records);
      }
      if (workers > 1) {
        await this.writeRunStart(repo, journal);
        return await runWorkers({
          dir, tag: this.tag, branch: this.branch, config: this.config, journal, python, proposer: this.opts.proposer,
          programBody: program.body, readonlyHashes: hashFiles(dir, this.config.readonly), seed: this.opts.seed ?? 0,
          executors, devices, signal: this.opts.signal, maxExperiments: this.opts.maxExperiments,
          deadline: this.opts.hours ? Date.now() + this.opts.hours * 3600_000 : Infinity,
          maxDollars: this.opts.maxDollars ?? this.config.max_dollars,
          logHeadBytes: this.opts.logHeadBytes, logTailBytes: this.opts.logTailBytes,
          emit: (event, ...args) => this.emit(event, ...args)
        }, journal.read());
      }
      return await this.iterate(repo, journal, program.body, python, resumable[0] ?? null);
    } finally {
      releaseEngineLock(dir);
    }
  }

  /** One executor per worker: the one given for worker 1, new ones for the others. */
  private executors(workers: number): Executor[] {
    const make = this.opts.executorFor;
    if (!make) {
      throw new UserError('several workers need an executor each: pass executorFor with workers > 1');
    }
    return [this.opts.executor, ...Array.from({ length: workers - 1 }, (_, i) => make(i + 2))];
  }

  private async writeRunStart(repo: Repo, journal: JournalStore): Promise<void> {
    journal.append({
      type: 'run_start',
      ts: new Date().toISOString(),
      tag: this.tag,
      branch: this.branch,
      resume: Boolean(this.opts.resume),
      base_commit: await repo.head(),
      proposer: this.opts.proposer.name,
      seed: this.opts.seed ?? 0,
      config: this.config,
      readonly_hashes: hashFiles(this.opts.dir, this.config.readonly),
      engine_version: ENGINE_VERSION,
      pid: process.pid
    });
  }

  private async setUp(repo: Repo, records: JournalRecord[]): Promise<void> {
    if (await repo.branchExists(this.branch)) {
      throw new UserError(`branch ${this.branch} already exists; continue it with --resume, or start another run with --tag`);
    }
    if (records.length) {
      throw new UserError(`a journal for tag "${this.tag}" exists (${runPaths(this.opts.dir, this.tag).journal}); use --resume or another --tag`);
    }
    await repo.createBranch(this.branch);
  }

  private async resume(repo: Repo, records: JournalRecord[], inFlight: ExperimentStartRecord[], journal: JournalStore): Promise<Continuation[]> {
    const { dir } = this.opts;
    if (!(await repo.branchExists(this.branch))) {
      throw new UserError(`there is no run to resume: branch ${this.branch} does not exist; start one without --resume`);
    }
    if ((await repo.currentBranch()) !== this.branch) {
      await repo.checkout(this.branch);
    }
    const best = bestOf(experimentsOf(records), Measurements.of(records));
    // One worker, killed while measuring a committed experiment: it goes on from the runs it recorded.
    const continued = (this.opts.workers ?? 1) === 1 ? continuations(records, inFlight) : [];
    inFlight = inFlight.filter(s => !continued.some(c => c.start.n === s.n));
    if (inFlight.length) {
      const head = await repo.head();
      const committed: Array<string | null> = [];
      for (const start of inFlight) {
        if (start.worker === undefined) {
          // The engine died mid-experiment: if it had committed, HEAD is that commit, one past the best.
          committed.push(best && head !== best.commit ? head : null);
        } else {
          // A worker commits on its own branch, which starts at the experiment's parent.
          const tip = await repo.revParse(`${this.branch}-w${start.worker}`);
          const ownCommit = tip && tip !== start.parent_commit && (await repo.revParse(`${tip}^`)) === start.parent_commit;
          committed.push(ownCommit ? tip : null);
        }
      }
      await repo.resetHard(best?.commit ?? inFlight[0].parent_commit);
      inFlight.forEach((start, i) => {
        const record = interruptedRecord(start, committed[i], best, 'the engine stopped (killed or crashed) during this experiment; recorded on --resume');
        journal.append(record);
        appendResult(dir, record);
      });
    } else if (best) {
      await repo.resetHard(best.commit);
    }
    if (!best && continued.length && !continued[0].baseline) {
      continued.length = 0;
    }
    // A killed run with several workers leaves its worktrees; one worker works in the folder itself.
    const trees = worktreesRoot(dir, this.tag);
    if ((this.opts.workers ?? 1) === 1 && fs.existsSync(trees)) await removeWorktrees(repo, trees);
    reconcileResults(dir, experimentsOf(journal.read()));
    return continued;
  }

  /** What every experiment of this loop shares; n names its logs and its live events. */
  private experimentEnv(repo: Repo, ledger: Ledger, python: string, readonlyHashes: Record<string, string>, n: number, currentBest: () => Best | null): ExperimentEnv {
    const { dir } = this.opts;
    const paths = runPaths(dir, this.tag);
    return {
      dir, repo, config: this.config, executor: this.opts.executor, python, proposerName: this.opts.proposer.name, readonlyHashes,
      runLog: i => paths.runLog(n, i), logHeadBytes: this.opts.logHeadBytes, logTailBytes: this.opts.logTailBytes, signal: this.opts.signal,
      ledger, currentBest,
      onPhase: phase => this.emit('phase', n, phase, ''),
      onSpawn: pgid => setRunningGroup(dir, pgid),
      onKernel: kernel => setRunningKernel(dir, kernel),
      onRunStart: (log, startedAt) => this.emit('run-start', n, log, startedAt, this.config.budget_s)
    };
  }

  private async iterate(repo: Repo, journal: JournalStore, programBody: string, python: string, resumed: Continuation | null): Promise<RunEndRecord> {
    const { dir, proposer, signal } = this.opts;
    const records = journal.read();
    const history = experimentsOf(records);
    const ledger = new Ledger(journal, records);
    const readonlyHashes = hashFiles(dir, this.config.readonly);
    const seed = this.opts.seed ?? 0;
    await this.writeRunStart(repo, journal);
    const bestNow = () => bestOf(history, ledger.measurements);
    let best = bestNow();
    let n = Math.max(-1, ...records.filter(r => r.type === 'experiment' || r.type === 'experiment_start').map(r => r.n)) + 1;
    const deadline = this.opts.hours ? Date.now() + this.opts.hours * 3600_000 : Infinity;
    let done = 0;
    const source = new ProposalSource(proposer, this.opts.pipeline !== false);
    const maxDollars = this.opts.maxDollars ?? this.config.max_dollars;
    let lastRunEnd = Date.now();
    const end = (reason: RunEndRecord['reason'], message: string | null = null): RunEndRecord => {
      source.discard();
      const record: RunEndRecord = { type: 'run_end', ts: new Date().toISOString(), reason, message, best_commit: best?.commit ?? null, best_metric: best?.metric ?? null };
      journal.append(record);
      return record;
    };
    const spent = () => history.reduce((s, r) => s + r.cost_usd, 0);

    for (;;) {
      if (signal.aborted) return end(stopReason(signal));
      if (resumed) {
        // Measured on where the killed engine left it, before anything new is proposed.
        const c = resumed;
        resumed = null;
        const record = await runExperiment(this.experimentEnv(repo, ledger, python, readonlyHashes, c.start.n, bestNow), {
          n: c.start.n, best, proposal: c.proposal, proposeSeconds: c.proposal ? c.start.proposal?.propose_s ?? 0 : 0,
          resumeCommit: c.commit, baseline: c.baseline
        });
        ledger.settle(record);
        appendResult(dir, record);
        history.push(record);
        best = bestNow();
        if (record.status !== 'keep') await repo.resetHard(best?.commit ?? record.parent_commit);
        this.emit('experiment', record);
        if (c.proposal) done++;
        if (!best && record.status === 'crash') {
          const message = `the baseline crashed (${record.reason}); fix ${this.config.editable[0]} — the log is ${record.log_path} — then run again with --resume`;
          end('error', message);
          throw new UserError(message);
        }
        continue;
      }
      if (best && this.opts.maxExperiments !== undefined && done >= this.opts.maxExperiments) return end('max-experiments');
      if (Date.now() >= deadline) return end('hours');

      const files = Object.fromEntries(this.config.editable.map(f => [f, fs.readFileSync(path.join(dir, f), 'utf8')]));
      // program.md is read afresh: the researcher may have edited it since the last proposal.
      const ctx = {
        workdir: dir, files, history: [...history], program: currentProgramBody(dir, programBody), metric: this.config.metric, direction: this.config.direction, seed, signal,
        noise: noiseFacts(this.config, ledger.measurements, best)
      };
      if (best && maxDollars !== undefined) {
        const next = proposer.estimateNextCost?.(ctx) ?? 0;
        if (spent() + next > maxDollars) {
          return end('budget', `spent $${spent().toFixed(4)} of --max-dollars ${maxDollars}; the next proposal would cost about $${next.toFixed(4)}`);
        }
      }
      this.emit('phase', n, 'propose', '');
      const proposeStart = Date.now();
      let proposal = null;
      try {
        proposal = best ? (await source.next(ctx, best.commit)).proposal : null;
      } catch (e) {
        if (signal.aborted) return end(stopReason(signal));
        if (e instanceof ProposalAbandoned && best) {
          // The model gave up (too many turns or failed edits): record what it cost and try again.
          const record = abandonedRecord(n, best, e, proposer.name, (Date.now() - proposeStart) / 1000);
          journal.append(record);
          history.push(record);
          this.emit('experiment', record);
          n++;
          done++;
          continue;
        }
        const message = `the ${proposer.name} proposer failed: ${(e as Error).message}`;
        end('error', message);
        throw new UserError(message);
      }
      if (best && proposal === null) return end('exhausted', `the ${proposer.name} proposer has nothing left to try`);
      if (signal.aborted) return end(stopReason(signal));
      const proposeSeconds = (Date.now() - proposeStart) / 1000;
      const description = proposal?.description ?? 'baseline';

      const parent = await repo.head();
      journal.append({ type: 'experiment_start', ts: new Date().toISOString(), n, parent_commit: parent, description, ...(proposal ? { proposal: proposalFacts(proposal, proposer.name, proposeSeconds) } : {}) });
      let runStartedAt: number | null = null;
      let drafted = false;
      this.emit('phase', n, 'apply', description);
      const env = this.experimentEnv(repo, ledger, python, readonlyHashes, n, bestNow);
      const record = await runExperiment(
        {
          ...env,
          onPhase: phase => this.emit('phase', n, phase, description),
          onRunStart: (log: LogCapture, startedAt: number, diff: string) => {
            runStartedAt ??= startedAt;
            this.emit('run-start', n, log, startedAt, this.config.budget_s);
            if (drafted) return;
            drafted = true;
            // Draft the next proposal now, against the best as it stands (during the baseline: the
            // code it runs), unless this run is the last.
            const more = this.opts.maxExperiments === undefined || done + (proposal ? 1 : 0) < this.opts.maxExperiments;
            const affordable = maxDollars === undefined || spent() + (proposer.estimateNextCost?.(ctx) ?? 0) * 2 <= maxDollars;
            if (more && affordable && Date.now() < deadline) {
              source.startDraft({ ...ctx, history: [...history], running: { n, description, diff } }, best?.commit ?? parent);
            }
          }
        },
        { n, best, proposal, proposeSeconds }
      );
      if (runStartedAt !== null) {
        record.timings.idle_s = Math.max(0, (runStartedAt - lastRunEnd) / 1000);
        lastRunEnd = Date.now();
      }
      // Journal first: a kill after this line loses nothing, as --resume resets to the best anyway.
      ledger.settle(record);
      appendResult(dir, record);
      history.push(record);
      best = bestNow();
      if (record.status !== 'keep') {
        await repo.resetHard(best?.commit ?? record.parent_commit);
      }
      this.emit('experiment', record);
      n++;
      if (proposal) done++;
      if (!best && record.status === 'crash') {
        const message = `the baseline crashed (${record.reason}); fix ${this.config.editable[0]} — the log is ${record.log_path} — then run again with --resume`;
        end('error', message);
        throw new UserError(message);
      }
    }
  }
}
