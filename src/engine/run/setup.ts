/**
 * The engine's run, set up: a new one (its tag, branch and journal) or a resumed one (what a
 * killed engine left in flight), checked and locked, then handed to the one loop (loop.ts: the
 * method's steps, for one worker or N) until a stop condition. The journal and git are the only state; everything here
 * can be rebuilt from them after a kill -9.
 */
import { EventEmitter } from 'node:events';
import * as fs from 'node:fs';
import * as path from 'node:path';
import type {
  ExperimentStartRecord,
  JournalRecord,
  RunConfig,
  RunEndRecord,
  RunStartRecord,
} from '../../core/journal/journal';
import { settingsFrom, type SettingsChanged, type SettingsFrom } from '../../core/config/security-settings';
import { experimentsOf } from '../../core/journal/journal';
import { defaultTag, RECOVER_PATCH, runBranch } from '../../core/journal/layout';
import { Measurements } from '../../core/rule/measurements';
import { acquireEngineLock, assertNoOtherEngine, releaseEngineLock } from './engine-lock';
import type { Executor } from '../executor/types';
import { repositoryGone, type Repo } from '../git/git';
import { JournalStore } from '../store/journal-store';
import type { LoopEvents } from './loop-events';
import { inFlightStarts } from '../../core/journal/run-state';
import { bestOf, experimentsMade, interruptedRecord } from './loop-records';
import { runLoop } from './loop';
import type { Proposer } from '../proposers/types';
import { locatePython } from '../workspace/python';
import { recoveryPatch } from './recovery';
import { ResultsFile } from '../store/results-file';
import { continuations, pendingContinuations, type Continuation } from './resume';
import { changedSettingsWarning, newRunSettings, resumeSettings } from './settings-guard';
import { readPending, type Asker } from '../step-mode/step-review';
import { ENGINE_VERSION } from '../version';
import {
  checkTag,
  checkWorkspace,
  freeRunTag,
  hashFiles,
  latestTag,
  loadProgram,
  readonlyChangedSince,
  runPaths,
} from '../workspace/workspace';
import { UserError } from '../user-error';
import { checkWorkerFiles, deviceEnvs, removeWorktrees, worktreesRoot } from '../git/worktrees';
import { replaceFile } from '../workspace/workspace-files';

const stderr = (text: string) => void process.stderr.write(text);

export interface LoopOptions {
  dir: string;
  tag?: string;
  resume?: boolean;
  proposer: Proposer;
  executor: Executor;
  python: string;
  seed?: number;
  /** Stop once the run has this many experiments in all, over every resume (as experimentsMade counts them). */
  maxExperiments?: number;
  /** Stop after this many experiments more than the journal has (the baseline not counted). */
  moreExperiments?: number;
  hours?: number;
  /** Stop before a proposal that would take the run's spending (all its experiments) past this many dollars. */
  maxDollars?: number;
  overrides?: Partial<RunConfig>;
  /** Who gave `overrides`, for the journal's record of where each security setting came from; default 'flag'. */
  overridesFrom?: 'flag' | 'panel';
  /** Accept security settings changed since the run's last start (--accept-settings); else a resume refuses them. */
  acceptSettings?: boolean;
  /** Where a new run's changed security settings are shown; default stderr. */
  warn?: (text: string) => void;
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
  /** Step mode's in-process reviewer (the terminal's prompt), raced with decision files. */
  asker?: Asker;
}

/** Emits LoopEvents (src/engine/run/loop-events.ts): phase, run-start, experiment, note. */
export class Loop extends EventEmitter<LoopEvents> {
  tag = '';
  branch = '';
  config!: RunConfig;
  private settingsFrom!: SettingsFrom;
  private settingsChanged: SettingsChanged | undefined;
  private maxExperiments: number | undefined;

  constructor(private readonly opts: LoopOptions) {
    super();
  }

  /** Runs until a stop condition and returns the run_end record. */
  async run(): Promise<RunEndRecord> {
    const { dir } = this.opts;
    const { program, config } = loadProgram(dir, this.opts.overrides);
    this.config = config;
    this.settingsFrom = settingsFrom(program.frontMatter, this.opts.overrides ?? {}, this.opts.overridesFrom ?? 'flag');
    if (this.opts.maxExperiments !== undefined && this.opts.moreExperiments !== undefined) {
      throw new UserError(
        '--max-experiments and --more-experiments exclude each other: give the total or how many more',
      );
    }
    const today = defaultTag();
    this.tag = this.opts.tag ?? (this.opts.resume ? (latestTag(dir) ?? today) : await freeRunTag(dir, today));
    if (!this.opts.tag && !this.opts.resume && this.tag !== today) {
      // Said before anything starts, as the panel says it beside Start (src/core/journal/layout.ts's freeTag).
      this.emit(
        'note',
        `run tag ${this.tag}: ${today} is taken by an earlier run (continue it with --resume --tag ${today}, or name this run with --tag)`,
      );
    }
    checkTag(this.tag);
    this.branch = runBranch(this.tag);
    const paths = runPaths(dir, this.tag);
    // Every append also rewrites state.json, what the server and the panel read of the run.
    const journal = new JournalStore(paths.journal, { file: paths.state, tag: this.tag });
    const python = await locatePython(this.opts.python).catch(e => {
      throw new UserError((e as Error).message);
    });
    const workers = this.opts.workers ?? 1;
    const executors = workers > 1 ? this.executors(workers) : [this.opts.executor];
    const devices = deviceEnvs(executors);
    // Checks that only read come before the lock, so a refused run leaves no trace.
    assertNoOtherEngine(dir);
    const records = journal.read();
    // The security settings against the run's last start (a resume) or the latest other run's (a new
    // run), before any other check: a setting a run changed is named first, whatever else it broke.
    const accept = this.opts.acceptSettings === true;
    this.settingsChanged = this.opts.resume
      ? resumeSettings(this.tag, records, this.config, this.settingsFrom, accept)
      : newRunSettings(dir, this.tag, this.config, this.settingsFrom, accept);
    const inFlight = this.opts.resume ? inFlightStarts(records) : [];
    // An experiment left in flight may have left its edit uncommitted: resume resets it.
    const repo = await checkWorkspace(dir, this.config, { allowDirty: inFlight.length ? this.config.editable : [] });
    if (workers > 1 && this.config.step) {
      // One pending proposal per run keeps the files, the prompt and the class's attention simple.
      throw new UserError('step mode reviews one proposal at a time: run it with one worker (drop --workers)');
    }
    if (workers > 1) {
      await checkWorkerFiles(repo, this.config);
      this.config = { ...this.config, workers };
    }
    // The run's own start: what the read-only files were when its first experiment was measured.
    const started = records.find((r): r is RunStartRecord => r.type === 'run_start');
    if (this.opts.resume && started && (await repo.currentBranch()) === this.branch) {
      // Checked on the tree as the user left it, before anything moves: a changed and committed prepare.py is refused, not reset away.
      const changed = readonlyChangedSince(dir, started, this.config.readonly);
      if (changed) throw new UserError(changed);
    }
    const left = acquireEngineLock(dir, this.tag);
    try {
      // Kernels a killed engine's runs went to are interrupted (the runner ends the training) and, if it started them, shut down.
      await Promise.all(executors.map(e => e.reclaim?.(left, dir)));
      const results = ResultsFile.open(dir, this.tag, records, text => this.emit('note', text));
      let resumable: Continuation[] = [];
      if (this.opts.resume) {
        resumable = await this.resume(repo, records, inFlight, journal, results);
        // And on the tree the run will use (the branch checked out, reset to the best).
        const changed = started && readonlyChangedSince(dir, started, this.config.readonly);
        if (changed) throw new UserError(changed);
      } else {
        await this.setUp(repo, records);
      }
      // Once nothing refuses the run: results.tsv as the journals have it before the first new row.
      results.sync();
      const warning = this.settingsChanged && !this.opts.resume ? changedSettingsWarning(this.settingsChanged) : '';
      if (warning) (this.opts.warn ?? stderr)(warning);
      // The journal as the resume left it: the experiments so far count towards --max-experiments.
      const now = journal.read();
      const made = experimentsMade(now);
      // A resume that names no limit keeps the run's own: its total was set when the run started.
      const starts = now.filter(r => r.type === 'run_start');
      const kept = this.opts.resume ? starts[starts.length - 1]?.max_experiments : undefined;
      this.maxExperiments =
        this.opts.moreExperiments !== undefined ? made + this.opts.moreExperiments : (this.opts.maxExperiments ?? kept);
      now.push(await this.writeRunStart(repo, journal));
      return await runLoop(
        {
          dir,
          tag: this.tag,
          branch: this.branch,
          config: this.config,
          journal,
          python,
          proposer: this.opts.proposer,
          programBody: program.body,
          readonlyHashes: hashFiles(dir, this.config.readonly),
          seed: this.opts.seed ?? 0,
          executors,
          devices,
          signal: this.opts.signal,
          maxExperiments: this.maxExperiments,
          deadline: this.opts.hours ? Date.now() + this.opts.hours * 3600_000 : Infinity,
          maxDollars: this.opts.maxDollars ?? this.config.max_dollars,
          pipeline: this.opts.pipeline !== false,
          resumed: resumable,
          logHeadBytes: this.opts.logHeadBytes,
          logTailBytes: this.opts.logTailBytes,
          results,
          asker: this.opts.asker,
          emit: (event, ...args) => this.emit(event, ...(args as never)),
        },
        now,
      );
    } catch (e) {
      throw repositoryGone(dir) ? this.repositoryLost(e as Error, journal) : e;
    } finally {
      releaseEngineLock(dir);
    }
  }

  /**
   * The workspace's .git is gone (a training run deleted it): the journal and results.tsv are
   * intact; the kept experiments' edits are written as one patch, and the message says how to recover.
   */
  private repositoryLost(e: Error, journal: JournalStore): UserError {
    const { dir } = this.opts;
    const records = journal.read();
    const patch = recoveryPatch(records);
    const rel = (p: string) => path.relative(dir, p);
    let best = '';
    if (patch) {
      const file = path.join(runPaths(dir, this.tag).root, RECOVER_PATCH);
      replaceFile(file, patch.text);
      best = `, and ${rel(file)} holds the kept edits (the best, ${patch.best.slice(0, 7)}, is \`git apply ${rel(file)}\` on commit ${patch.base.slice(0, 7)})`;
    }
    return new UserError(
      `${e.message}. Nothing recorded is lost: the journal (${rel(journal.file)}) and results.tsv are intact${best}. ` +
        'To go on, restore .git from a backup, or clone the repository again and copy .autoresearch/ and results.tsv into the clone, ' +
        "then start a new run with --tag (this run's commits were only in the deleted .git)",
    );
  }

  /** One executor per worker: the one given for worker 1, new ones for the others. */
  private executors(workers: number): Executor[] {
    const make = this.opts.executorFor;
    if (!make) {
      throw new UserError('several workers need an executor each: pass executorFor with workers > 1');
    }
    return [this.opts.executor, ...Array.from({ length: workers - 1 }, (_, i) => make(i + 2))];
  }

  private async writeRunStart(repo: Repo, journal: JournalStore): Promise<RunStartRecord> {
    const record: RunStartRecord = {
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
      pid: process.pid,
      settings_from: this.settingsFrom,
      ...(this.settingsChanged && { settings_changed: this.settingsChanged }),
      ...(this.maxExperiments !== undefined && { max_experiments: this.maxExperiments }),
    };
    journal.append(record);
    return record;
  }

  private async setUp(repo: Repo, records: JournalRecord[]): Promise<void> {
    if (await repo.branchExists(this.branch)) {
      throw new UserError(
        `branch ${this.branch} already exists; continue it with --resume, or start another run with --tag`,
      );
    }
    if (records.length) {
      throw new UserError(
        `a journal for tag "${this.tag}" exists (${runPaths(this.opts.dir, this.tag).journal}); use --resume or another --tag`,
      );
    }
    await repo.createBranch(this.branch);
  }

  private async resume(
    repo: Repo,
    records: JournalRecord[],
    inFlight: ExperimentStartRecord[],
    journal: JournalStore,
    results: ResultsFile,
  ): Promise<Continuation[]> {
    const { dir } = this.opts;
    if (!(await repo.branchExists(this.branch))) {
      throw new UserError(
        `there is no run to resume: branch ${this.branch} does not exist; start one without --resume`,
      );
    }
    if ((await repo.currentBranch()) !== this.branch) {
      await repo.checkout(this.branch);
    }
    const best = bestOf(experimentsOf(records), Measurements.of(records));
    // Killed while measuring a committed experiment: it goes on from the runs it recorded.
    const continued = [
      ...continuations(records, inFlight),
      ...pendingContinuations(records, inFlight, readPending(runPaths(dir, this.tag).root)),
    ];
    inFlight = inFlight.filter(s => !continued.some(c => c.start.n === s.n));
    if (inFlight.length) {
      const head = await repo.head();
      const committed: Array<string | null> = [];
      for (const start of inFlight) {
        if (start.worker === undefined) {
          // The engine died mid-experiment: if it had committed, HEAD is that commit, one past the best.
          // (Not the commit it started from: a plateau's branch starts from a near-miss's, reset to before the edit.)
          committed.push(best && head !== best.commit && head !== start.parent_commit ? head : null);
        } else {
          // A worker commits on its own branch, which starts at the experiment's parent.
          const tip = await repo.revParse(`${this.branch}-w${start.worker}`);
          const ownCommit =
            tip && tip !== start.parent_commit && (await repo.revParse(`${tip}^`)) === start.parent_commit;
          committed.push(ownCommit ? tip : null);
        }
      }
      await repo.resetHard(best?.commit ?? inFlight[0].parent_commit);
      inFlight.forEach((start, i) => {
        const record = interruptedRecord(
          start,
          committed[i],
          best,
          'the engine stopped (killed or crashed) during this experiment; recorded on --resume',
        );
        journal.append(record);
        results.append(record);
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
    return continued;
  }
}
