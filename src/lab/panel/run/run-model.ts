/**
 * What the panel knows about one run: the journal records the event stream replays and then
 * follows (the configuration, the experiments, the live log), the liveness the stream reports,
 * and the engine's own reading of its journal (`run_state`, state.json).
 *
 * Every figure (best, σ, cost, counts, sandbox, in flight, the trust report) is the last
 * run_state's as it is: the engine is the one interpreter of the journal (src/core/journal/run-state.ts),
 * and nothing here works a rule of it out again. Before the first run_state they are empty.
 *
 * It changes only through its methods, each of which emits a typed signal; the toolbar, chart,
 * list, live view and status bar read it and redraw.
 */
import { Signal, type ISignal } from '@lumino/signaling';
import type {
  ExperimentRecord,
  JournalRecord,
  RunEndRecord,
  RunRecord,
  RunStartRecord,
} from '../../../core/journal/journal';
import type { TrustReport } from '../../../core/rule/trust-cost';
import { runActivity } from '../../../core/journal/run-state';
import type { EventMessage, IInFlight, IRunStateFile, IStateMessage } from './run-events';

/** How many lines of the running experiment's log the panel keeps. */
export const LIVE_LOG_LINES = 400;

export type RunState = 'none' | 'starting' | 'running' | 'stopped' | 'died';

/** The counts before a state file came: one object, so readers comparing them see no change. */
const NO_COUNTS: Readonly<Record<string, number>> = Object.freeze({});

/** What a `changed` emission is about. */
export type RunModelChange = 'reset' | 'records' | 'state' | 'run-state' | 'connection' | 'error' | 'action' | 'study';

/** Step mode: the proposal an engine waits on a reviewer for, as state.json names it. */
export interface IPendingSummary {
  n: number;
  description: string;
  since: string;
}

/** The best so far: its estimate (the mean over its runs) and, once σ is known, that estimate's standard error. */
export interface IBest {
  n: number;
  metric: number;
  /** Runs of its code. */
  runs: number;
  stderr: number | null;
}

export interface INewBest {
  n: number;
  metric: number;
  description: string;
}

export interface IExperimentAdded {
  record: ExperimentRecord;
  /** It finished while the panel was watching (not replayed). */
  live: boolean;
}

export class RunModel {
  private _tag: string | null = null;
  private _state: RunState = 'none';
  private _stopping = false;
  private _connected = false;
  private _engineTag: string | null = null;
  private _runStart: RunStartRecord | null = null;
  private _runEnd: RunEndRecord | null = null;
  private readonly _experiments: ExperimentRecord[] = [];
  private readonly _runs: RunRecord[] = [];
  /** The last run_state's experiments in flight, while an engine works on the run. */
  private readonly _inFlight = new Map<number, IInFlight>();
  private _liveLogN: number | null = null;
  private _liveLog: string[] = [];
  private _caughtUp = false;
  private _error: string | null = null;
  private _runState: IRunStateFile | null = null;
  private _study = false;

  private readonly _changed = new Signal<this, RunModelChange>(this);
  private readonly _experimentAdded = new Signal<this, IExperimentAdded>(this);
  private readonly _newBest = new Signal<this, INewBest>(this);
  private readonly _logChanged = new Signal<this, void>(this);

  /** Anything shown changed: state, counts, in-flight experiments, the best. */
  get changed(): ISignal<this, RunModelChange> {
    return this._changed;
  }
  /** One more finished experiment. */
  get experimentAdded(): ISignal<this, IExperimentAdded> {
    return this._experimentAdded;
  }
  /** The best improved while the panel was watching (the baseline is not news). */
  get newBest(): ISignal<this, INewBest> {
    return this._newBest;
  }
  /** The live log's lines or the experiment it follows changed. */
  get logChanged(): ISignal<this, void> {
    return this._logChanged;
  }

  get tag(): string | null {
    return this._tag;
  }
  get state(): RunState {
    return this._state;
  }
  get stopping(): boolean {
    return this._stopping;
  }
  /** Whether the event stream is up. */
  get connected(): boolean {
    return this._connected;
  }
  /** The run the workspace's engine works on, when one does: maybe another than this. */
  get engineTag(): string | null {
    return this._engineTag;
  }
  get runStart(): RunStartRecord | null {
    return this._runStart;
  }
  get runEnd(): RunEndRecord | null {
    return this._runEnd;
  }
  get experiments(): readonly ExperimentRecord[] {
    return this._experiments;
  }
  /** Every training run, as the noise-aware engine journals them (none in older journals). */
  get runs(): readonly RunRecord[] {
    return this._runs;
  }
  /** Experiments started and not finished, by number (one per worker), as the last run_state lists them. */
  get inFlight(): ReadonlyMap<number, IInFlight> {
    return this._inFlight;
  }
  /** The experiment whose log `liveLog` holds. */
  get liveLogN(): number | null {
    return this._liveLogN;
  }
  /** Its last lines. */
  get liveLog(): readonly string[] {
    return this._liveLog;
  }
  /** True once the stream has replayed the journal: later records are news (notifications). */
  get caughtUp(): boolean {
    return this._caughtUp;
  }
  /** A journal line the server could not read. */
  get error(): string | null {
    return this._error;
  }
  /** The engine's state file as the server last sent it; null before one came. */
  get runState(): IRunStateFile | null {
    return this._runState;
  }

  get metric(): string {
    return this._runStart?.config.metric ?? 'val_bpb';
  }
  get direction(): 'lower' | 'higher' {
    return this._runStart?.config.direction ?? 'lower';
  }
  get budgetS(): number | null {
    return this._runStart?.config.budget_s ?? null;
  }
  /** The experiment the stream follows the log of (the newest one in flight). */
  get current(): IInFlight | null {
    let latest: IInFlight | null = null;
    for (const start of this._inFlight.values()) {
      if (latest === null || start.n > latest.n) {
        latest = start;
      }
    }
    return latest;
  }

  /** The best so far, as the engine estimates it. */
  get best(): IBest | null {
    const b = this._runState?.best;
    return b ? { n: b.n, metric: b.metric, runs: b.runs, stderr: b.stderr } : null;
  }
  /** σ's degrees of freedom, 0 before it is measured. */
  get sigmaDf(): number {
    return this._runState?.sigma_df ?? 0;
  }

  /** Pooled σ of one run, or null before any code ran twice (or for a run from before repeats). */
  get sigma(): number | null {
    return this._runState?.sigma ?? null;
  }
  get costUsd(): number {
    return this._runState?.cost_usd ?? 0;
  }
  /** Experiments finished. */
  get experimentCount(): number {
    return this._runState?.experiments ?? 0;
  }
  /** Experiments by status. */
  get counts(): Readonly<Record<string, number>> {
    return this._runState?.counts ?? NO_COUNTS;
  }
  /** Whether the last training run was sandboxed; null before a run says (or for journals from before the run guard). */
  get sandbox(): 'on' | 'off' | null {
    return this._runState?.sandbox ?? null;
  }
  /** What trust cost (runs on measurement and confirmation, per 0.001 gained), or null for a run from before repeats. */
  get trust(): TrustReport | null {
    return this._runState?.trust ?? null;
  }

  /** Step mode now, as the engine last wrote it (a switch from the panel or the CLI shows once the engine takes it). */
  get step(): boolean {
    return this._runState?.step ?? this._runStart?.config.step ?? false;
  }
  /** The proposal an engine waits on a reviewer for; null when none, or no engine works on the run (runActivity says). */
  get pending(): IPendingSummary | null {
    const file = this._runState;
    // The stream's "running" is the server's word that an engine is alive on the run.
    return file && runActivity(file, this._state === 'running') === 'awaiting-review' ? (file.pending ?? null) : null;
  }
  /** A transfer study of this run is going on: the workspace's engine replays the run's commits. */
  get study(): boolean {
    return this._study;
  }

  /** Whether a transfer study of this run goes on, as GET transfer last said. */
  setStudy(running: boolean): void {
    if (running !== this._study) {
      this._study = running;
      this._changed.emit('study');
    }
  }

  /** Forgets everything: the panel is about to follow another run. */
  reset(tag: string | null, state: RunState = 'none'): void {
    this._tag = tag;
    this._state = state;
    this._stopping = false;
    this._engineTag = null;
    this._runStart = null;
    this._runEnd = null;
    this._experiments.length = 0;
    this._runs.length = 0;
    this._inFlight.clear();
    this._liveLogN = null;
    this._liveLog = [];
    this._caughtUp = false;
    this._error = null;
    this._runState = null;
    this._study = false;
    this._changed.emit('reset');
    this._logChanged.emit();
  }

  /** A run was just started or resumed from this panel: 'starting' until the stream says more. */
  markStarting(): void {
    this._state = 'starting';
    this._changed.emit('action');
  }

  /** A stop was just requested from this panel. */
  markStopping(): void {
    this._stopping = true;
    this._changed.emit('action');
  }

  setConnected(connected: boolean): void {
    this._connected = connected;
    this._changed.emit('connection');
  }

  handle(message: EventMessage): void {
    switch (message.type) {
      case 'records':
        message.records.forEach(record => this.addRecord(record));
        if (this._caughtUp) {
          this._changed.emit('records');
        }
        break;
      case 'log':
        this.addLog(message.n, message.reset, message.lines);
        break;
      case 'state':
        this.setState(message);
        break;
      case 'run_state':
        this.setRunState(message.run_state);
        break;
      case 'error':
        this._error = message.message;
        this._changed.emit('error');
        break;
    }
  }

  private addRecord(record: JournalRecord): void {
    switch (record.type) {
      case 'run_start':
        this._runStart = record;
        this._runEnd = null;
        break;
      case 'run':
        // One training run of an experiment still in flight (or a re-measure of the best):
        // the experiment is not finished until its own record comes.
        this._runs.push(record);
        break;
      case 'experiment':
        this.addExperiment(record);
        break;
      case 'run_end':
        this._runEnd = record;
        break;
    }
  }

  private addExperiment(record: ExperimentRecord): void {
    this._experiments.push(record);
    if (this._liveLogN === record.n) {
      this._liveLogN = null;
      this._liveLog = [];
      this._logChanged.emit();
    }
    this._experimentAdded.emit({ record, live: this._caughtUp });
  }

  private addLog(n: number, reset: boolean, lines: string[]): void {
    if (reset || this._liveLogN !== n) {
      this._liveLogN = n;
      this._liveLog = [];
    }
    this._liveLog.push(...lines);
    if (this._liveLog.length > LIVE_LOG_LINES) {
      this._liveLog.splice(0, this._liveLog.length - LIVE_LOG_LINES);
    }
    this._logChanged.emit();
  }

  private setState(message: IStateMessage): void {
    // An engine waiting on a reviewer is running: the pending proposal is state.json's to say.
    this._state = message.state;
    this._stopping = message.stopping;
    this._engineTag = message.engine_tag ?? null;
    const first = !this._caughtUp;
    this._caughtUp = true;
    this.syncInFlight();
    this._changed.emit('state');
    if (first) {
      this._logChanged.emit();
    }
  }

  private setRunState(next: IRunStateFile): void {
    const before = this._runState;
    this._runState = next;
    this.syncInFlight();
    const best = next.best;
    // News only against an earlier state file: the first one (after the replay) sets the scene.
    if (before?.best && best && best.n !== before.best.n && this._caughtUp) {
      const description = this._experiments.find(e => e.n === best.n)?.description ?? '';
      this._newBest.emit({ n: best.n, metric: best.metric, description });
    }
    this._changed.emit('run-state');
    this._logChanged.emit();
  }

  /** The last run_state's experiments in flight; none for a run no engine works on, whatever its last starts said. */
  private syncInFlight(): void {
    const file = this._runState;
    const live = file?.status === 'running' && this._state !== 'stopped' && this._state !== 'died';
    this._inFlight.clear();
    for (const f of live ? file.in_flight : []) {
      this._inFlight.set(f.n, f);
    }
  }
}
