/**
 * The run's figures read off its journal records: the trust report (which the engine's state
 * file does not carry) and, for a server from before `run_state`, the best, σ, cost, counts and
 * sandbox the panel then works out as it always did (the best is the last kept result).
 */
import type { ExperimentRecord, RunRecord } from '../../core/journal';
import { hasRepeats, noiseSummary, type NoiseSummary } from '../../core/noise-words';
import { trustReport, type TrustReport } from '../../core/trust';
import type { IBest, ISigma } from './run-model';

export class RecordFigures {
  private lastKeep: ExperimentRecord | null = null;
  private cost = 0;
  private readonly tally: Record<string, number> = {};
  private sandboxWord: 'on' | 'off' | null = null;
  /** Runs and experiments in journal order: what σ, the best's mean and the trust report come from. */
  private readonly measured: Array<RunRecord | ExperimentRecord> = [];
  private noiseCache: { size: number; summary: NoiseSummary | null } | null = null;
  private trustCache: { size: number; report: TrustReport | null } | null = null;

  constructor(private readonly direction: () => 'lower' | 'higher') {}

  addRun(record: RunRecord): void {
    this.measured.push(record);
    if (record.sandbox !== undefined) {
      this.sandboxWord = record.sandbox === 'on' ? 'on' : 'off';
    }
  }

  /** Counts a finished experiment in; true when it is the new best (a kept result with a metric). */
  addExperiment(record: ExperimentRecord): boolean {
    this.measured.push(record);
    this.cost += record.cost_usd;
    this.tally[record.status] = (this.tally[record.status] ?? 0) + 1;
    const improved = record.status === 'keep' && record.metric !== null;
    if (improved) {
      this.lastKeep = record;
    }
    return improved;
  }

  /** The best: its mean ± se once runs repeat, else the last kept result. */
  get best(): IBest | null {
    const noise = this.noise?.best;
    if (noise) {
      return { n: noise.n, metric: noise.metric, runs: noise.runs, stderr: noise.se };
    }
    const keep = this.lastKeep;
    return keep?.metric != null ? { n: keep.n, metric: keep.metric, runs: null, stderr: null } : null;
  }

  get sigma(): ISigma | null {
    const noise = this.noise;
    return noise && { sigma: noise.sigma, df: noise.df };
  }

  get costUsd(): number {
    return this.cost;
  }

  get counts(): Readonly<Record<string, number>> {
    return this.tally;
  }

  get sandbox(): 'on' | 'off' | null {
    return this.sandboxWord;
  }

  /** What trust cost, or null for a run from before repeats; recomputed only when a record arrived. */
  get trust(): TrustReport | null {
    if (this.trustCache?.size !== this.measured.length) {
      const report = hasRepeats(this.measured) ? trustReport(this.measured, this.direction()) : null;
      this.trustCache = { size: this.measured.length, report };
    }
    return this.trustCache.report;
  }

  private get noise(): NoiseSummary | null {
    if (this.noiseCache?.size !== this.measured.length) {
      const summary = hasRepeats(this.measured) ? noiseSummary(this.measured, this.direction()) : null;
      this.noiseCache = { size: this.measured.length, summary };
    }
    return this.noiseCache.summary;
  }
}
