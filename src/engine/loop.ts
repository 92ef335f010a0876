/**
 * The engine's loop: set up or resume a run, then propose → experiment →
 * keep or reset → journal, until a stop condition. The journal and git are
 * the only state; everything here can be rebuilt from them after a kill -9.
 */
import { EventEmitter } from 'node:events';
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { ExperimentRecord, ExperimentStartRecord, JournalRecord, RunConfig, RunEndRecord } from '../core/journal';
import { experimentsOf } from '../core/journal';
import { ENGINE_VERSION } from './version';
import { locatePython } from './python';
import type { Executor } from './executor/types';
import { runExperiment } from './experiment';
import { ProposalSource } from './pipeline';
import type { Repo } from './git';
import { JournalStore } from './journal-store';
import type { LogCapture } from './log-capture';
import { ProposalAbandoned, type Proposer } from './proposers/types';
import { appendResult, reconcileResults } from './results-file';
import { acquireEngineLock, assertNoOtherEngine, releaseEngineLock, setRunningGroup } from './engine-lock';
import { checkWorkspace, defaultTag, hashFiles, latestTag, loadProgram, runPaths, UserError } from './workspace';

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
}

export interface Best {
  commit: string;
  metric: number;
}

/** Events: 'phase' (n, phase, description), 'run-start' (n, log, startedAt, budgetS), 'experiment' (record), 'note' (text). */
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
    // Checks that only read come before the lock, so a refused run leaves no trace.
    assertNoOtherEngine(dir);
    const records = journal.read();
    const inFlight = this.opts.resume ? findInFlight(records) : null;
    // An experiment left in flight may have left its edit uncommitted: resume resets it.
    const repo = await checkWorkspace(dir, this.config, { allowDirty: inFlight ? this.config.editable : [] });
    acquireEngineLock(dir, this.tag);
    try {
      if (this.opts.resume) {
        await this.resume(repo, records, inFlight, journal);
      } else {
        await this.setUp(repo, records);
      }
      return await this.iterate(repo, journal, program.body, python);
    } finally {
      releaseEngineLock(dir);
    }
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

  private async resume(repo: Repo, records: JournalRecord[], inFlight: ExperimentStartRecord | null, journal: JournalStore): Promise<void> {
    const { dir } = this.opts;
    if (!(await repo.branchExists(this.branch))) {
      throw new UserError(`there is no run to resume: branch ${this.branch} does not exist; start one without --resume`);
    }
    if ((await repo.currentBranch()) !== this.branch) {
      await repo.checkout(this.branch);
    }
    const best = bestOf(experimentsOf(records));
    if (inFlight) {
      // The engine died mid-experiment: if it had committed, HEAD is that commit, one past the best.
      const head = await repo.head();
      const committed = best && head !== best.commit ? head : null;
      const target = best?.commit ?? inFlight.parent_commit;
      await repo.resetHard(target);
      const record = interruptedRecord(inFlight, committed, best, 'the engine stopped (killed or crashed) during this experiment; recorded on --resume');
      journal.append(record);
      appendResult(dir, record);
    } else if (best) {
      await repo.resetHard(best.commit);
    }
    reconcileResults(dir, experimentsOf(journal.read()));
  }

  private async iterate(repo: Repo, journal: JournalStore, programBody: string, python: string): Promise<RunEndRecord> {
    const { dir, proposer, signal } = this.opts;
    const records = journal.read();
    const history = experimentsOf(records);
    const readonlyHashes = hashFiles(dir, this.config.readonly);
    const seed = this.opts.seed ?? 0;
    journal.append({
      type: 'run_start',
      ts: new Date().toISOString(),
      tag: this.tag,
      branch: this.branch,
      resume: Boolean(this.opts.resume),
      base_commit: await repo.head(),
      proposer: proposer.name,
      seed,
      config: this.config,
      readonly_hashes: readonlyHashes,
      engine_version: ENGINE_VERSION,
      pid: process.pid
    });
    let best = bestOf(history);
    let n = history.length ? Math.max(...history.map(r => r.n)) + 1 : 0;
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
      if (best && this.opts.maxExperiments !== undefined && done >= this.opts.maxExperiments) return end('max-experiments');
      if (Date.now() >= deadline) return end('hours');

      const files = Object.fromEntries(this.config.editable.map(f => [f, fs.readFileSync(path.join(dir, f), 'utf8')]));
      const ctx = { workdir: dir, files, history: [...history], program: programBody, metric: this.config.metric, direction: this.config.direction, seed, signal };
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
      journal.append({ type: 'experiment_start', ts: new Date().toISOString(), n, parent_commit: parent, description });
      let runStartedAt: number | null = null;
      this.emit('phase', n, 'apply', description);
      const record = await runExperiment(
        {
          dir, repo, config: this.config, executor: this.opts.executor, python, proposerName: proposer.name,
          readonlyHashes, logFile: runPaths(dir, this.tag).log(n), logHeadBytes: this.opts.logHeadBytes, logTailBytes: this.opts.logTailBytes, signal,
          onPhase: phase => this.emit('phase', n, phase, description),
          onSpawn: pgid => setRunningGroup(dir, pgid),
          onRunStart: (log: LogCapture, startedAt: number, diff: string) => {
            runStartedAt = startedAt;
            this.emit('run-start', n, log, startedAt, this.config.budget_s);
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
      journal.append(record);
      appendResult(dir, record);
      if (record.status === 'keep' && record.commit && record.metric !== null) {
        best = { commit: record.commit, metric: record.metric };
      } else {
        await repo.resetHard(best?.commit ?? record.parent_commit);
      }
      history.push(record);
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

/** The best kept experiment of a history, or null before a baseline succeeded. */
export function bestOf(history: ExperimentRecord[]): Best | null {
  let best: Best | null = null;
  for (const r of history) {
    if (r.status === 'keep' && r.commit && r.metric !== null) {
      best = { commit: r.commit, metric: r.metric };
    }
  }
  return best;
}

/** The last experiment_start with no experiment record after it: one left in flight. */
function findInFlight(records: JournalRecord[]): ExperimentStartRecord | null {
  const last = [...records].reverse().find(r => r.type === 'experiment_start' || r.type === 'experiment');
  return last?.type === 'experiment_start' ? last : null;
}

function interruptedRecord(start: ExperimentStartRecord, commit: string | null, best: Best | null, reason: string): ExperimentRecord {
  return {
    type: 'experiment', ts: new Date().toISOString(), n: start.n, parent_commit: start.parent_commit, commit,
    description: start.description, rationale: '', diff: '', lines_added: 0, lines_removed: 0, summary: {},
    metric: null, best_before: best?.metric ?? null, delta: null, status: 'interrupted', reason, memory_gb: 0,
    timings: { propose_s: 0, run_s: 0, total_s: 0 }, exit_code: null, signal: null, log_path: null, log_truncated: false,
    proposer: 'unknown', usage: { input_tokens: 0, output_tokens: 0, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 }, cost_usd: 0
  };
}

/** A proposal given up before it made an edit worth running: rejected, never committed. */
function abandonedRecord(n: number, best: Best, e: ProposalAbandoned, proposer: string, proposeS: number): ExperimentRecord {
  return {
    type: 'experiment', ts: new Date().toISOString(), n, parent_commit: best.commit, commit: null,
    description: 'proposal abandoned', rationale: '', diff: '', lines_added: 0, lines_removed: 0, summary: {},
    metric: null, best_before: best.metric, delta: null, status: 'rejected', reason: e.message, memory_gb: 0,
    timings: { propose_s: proposeS, run_s: 0, total_s: proposeS }, exit_code: null, signal: null, log_path: null, log_truncated: false,
    proposer, usage: e.usage, cost_usd: e.cost_usd, ...(e.meta !== undefined ? { proposal_meta: e.meta } : {})
  };
}

function stopReason(signal: AbortSignal): RunEndRecord['reason'] {
  return signal.reason === 'stop' ? 'stop' : 'signal';
}
