/**
 * What the panel knows about one run, built from the journal records the event stream replays
 * and then follows: the configuration, the experiments, what is in flight, the live log and the
 * state. The toolbar, chart, list and status bar all read it and redraw on `changed`.
 */
import { Signal, type ISignal } from '@lumino/signaling';
import type {
  ExperimentRecord,
  ExperimentStartRecord,
  JournalRecord,
  RunEndRecord,
  RunRecord,
  RunStartRecord,
} from '../../core/journal';
import { hasRepeats, noiseSummary, type NoiseSummary } from '../../core/noise-words';
import type { EventMessage, IStateMessage } from './run-events';

/** How many lines of the running experiment's log the panel keeps. */
export const LIVE_LOG_LINES = 400;

export type RunState = 'none' | 'starting' | 'running' | 'stopped' | 'died';

export class RunModel {
  tag: string | null = null;
  state: RunState = 'none';
  stopping = false;
  connected = false;
  /** The run the workspace's engine works on, when one does: maybe another than this. */
  engineTag: string | null = null;
  runStart: RunStartRecord | null = null;
  runEnd: RunEndRecord | null = null;
  readonly experiments: ExperimentRecord[] = [];
  /** Every training run, as the noise-aware engine journals them (none in older journals). */
  readonly runs: RunRecord[] = [];
  /** Experiments started and not finished, by number (one per worker). */
  readonly inFlight = new Map<number, ExperimentStartRecord>();
  /** The experiment whose log `liveLog` holds, and its last lines. */
  liveLogN: number | null = null;
  liveLog: string[] = [];
  /** True once the stream has replayed the journal: later records are news (notifications). */
  caughtUp = false;
  best: ExperimentRecord | null = null;
  costUsd = 0;
  error: string | null = null;

  /** Runs and experiments in journal order: what σ, the best's mean and the trust report come from. */
  private readonly measured: Array<RunRecord | ExperimentRecord> = [];
  private noiseCache: { size: number; summary: NoiseSummary | null } | null = null;

  private readonly _changed = new Signal<this, void>(this);
  private readonly _experimentAdded = new Signal<this, { record: ExperimentRecord; live: boolean }>(this);
  private readonly _newBest = new Signal<this, ExperimentRecord>(this);
  private readonly _logChanged = new Signal<this, void>(this);

  /** Anything changed: state, counts, in-flight experiments. */
  get changed(): ISignal<this, void> {
    return this._changed;
  }
  /** One more finished experiment (live: it finished while the panel was watching). */
  get experimentAdded(): ISignal<this, { record: ExperimentRecord; live: boolean }> {
    return this._experimentAdded;
  }
  /** A kept experiment improved the best while the panel was watching. */
  get newBest(): ISignal<this, ExperimentRecord> {
    return this._newBest;
  }
  get logChanged(): ISignal<this, void> {
    return this._logChanged;
  }

  get metric(): string {
    return this.runStart?.config.metric ?? 'val_bpb';
  }
  get direction(): 'lower' | 'higher' {
    return this.runStart?.config.direction ?? 'lower';
  }
  get budgetS(): number | null {
    return this.runStart?.config.budget_s ?? null;
  }
  /** The experiment the stream follows the log of (the newest one in flight). */
  get current(): ExperimentStartRecord | null {
    let latest: ExperimentStartRecord | null = null;
    for (const start of this.inFlight.values()) {
      if (latest === null || start.n > latest.n) {
        latest = start;
      }
    }
    return latest;
  }

  /**
   * σ, the best as mean ± se and what trust cost, or null for a run from before repeats (the
   * panel then shows what it always did). Recomputed only when a run or experiment arrived.
   */
  get noise(): NoiseSummary | null {
    if (this.noiseCache?.size !== this.measured.length) {
      const summary = hasRepeats(this.measured) ? noiseSummary(this.measured, this.direction) : null;
      this.noiseCache = { size: this.measured.length, summary };
    }
    return this.noiseCache.summary;
  }

  /** Forgets everything: the panel is about to follow another run. */
  reset(tag: string | null, state: RunState = 'none'): void {
    this.tag = tag;
    this.state = state;
    this.stopping = false;
    this.engineTag = null;
    this.runStart = null;
    this.runEnd = null;
    this.experiments.length = 0;
    this.runs.length = 0;
    this.measured.length = 0;
    this.noiseCache = null;
    this.inFlight.clear();
    this.liveLogN = null;
    this.liveLog = [];
    this.caughtUp = false;
    this.best = null;
    this.costUsd = 0;
    this.error = null;
    this._changed.emit();
    this._logChanged.emit();
  }

  setConnected(connected: boolean): void {
    this.connected = connected;
    this._changed.emit();
  }

  handle(message: EventMessage): void {
    switch (message.type) {
      case 'records':
        message.records.forEach(record => this.addRecord(record));
        break;
      case 'log':
        this.addLog(message.n, message.reset, message.lines);
        break;
      case 'state':
        this.setState(message);
        break;
      case 'error':
        this.error = message.message;
        this._changed.emit();
        break;
    }
  }

  private addRecord(record: JournalRecord): void {
    switch (record.type) {
      case 'run_start':
        this.runStart = record;
        this.runEnd = null;
        break;
      case 'experiment_start':
        this.inFlight.set(record.n, record);
        break;
      case 'run':
        // One training run of an experiment still in flight (or a re-measure of the best):
        // the experiment is not finished until its own record comes.
        this.runs.push(record);
        this.measured.push(record);
        break;
      case 'experiment':
        this.measured.push(record);
        this.addExperiment(record);
        break;
      case 'run_end':
        this.runEnd = record;
        // A run that ended has nothing in flight, whatever its last starts said.
        this.inFlight.clear();
        break;
    }
    if (this.caughtUp) {
      this._changed.emit();
    }
  }

  private addExperiment(record: ExperimentRecord): void {
    this.inFlight.delete(record.n);
    this.experiments.push(record);
    this.costUsd += record.cost_usd;
    const improved = record.status === 'keep' && record.metric !== null;
    if (improved) {
      // The engine's rule: the best is the last kept result.
      this.best = record;
    }
    if (this.liveLogN === record.n) {
      this.liveLogN = null;
      this.liveLog = [];
      this._logChanged.emit();
    }
    this._experimentAdded.emit({ record, live: this.caughtUp });
    if (improved && this.caughtUp) {
      this._newBest.emit(record);
    }
  }

  private addLog(n: number, reset: boolean, lines: string[]): void {
    if (reset || this.liveLogN !== n) {
      this.liveLogN = n;
      this.liveLog = [];
    }
    this.liveLog.push(...lines);
    if (this.liveLog.length > LIVE_LOG_LINES) {
      this.liveLog.splice(0, this.liveLog.length - LIVE_LOG_LINES);
    }
    this._logChanged.emit();
  }

  private setState(message: IStateMessage): void {
    this.state = message.state;
    this.stopping = message.stopping;
    this.engineTag = message.engine_tag ?? null;
    const first = !this.caughtUp;
    this.caughtUp = true;
    if (message.state !== 'running') {
      this.inFlight.clear();
    }
    this._changed.emit();
    if (first) {
      this._logChanged.emit();
    }
  }
}
