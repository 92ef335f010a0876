/**
 * What trust costs: runs spent on measuring the noise, confirming candidates and
 * re-measuring the best, and what each confirmed gain cost in accelerator time and dollars.
 */
import type { ExperimentRecord, JournalRecord, RunPurpose } from '../journal/journal';

export interface TrustCost {
  experiments: number;
  keeps: number;
  acceleratorS: number;
  dollars: number;
  /** The metric gained by its keeps, in the better direction (≥ 0 for real progress). */
  gain: number;
  /** Accelerator minutes and dollars per 0.001 of metric gained; null without a gain. */
  perMilli: { acceleratorMin: number; dollars: number } | null;
}

export interface TrustReport extends TrustCost {
  runs: number;
  byPurpose: Record<RunPurpose, number>;
  /** Runs beyond one per experiment: the price of the noise-aware rule. */
  extraRuns: number;
  byProposer: Array<TrustCost & { proposer: string }>;
}

/** The trust report of a journal (works on journals from before repeats: one run per experiment). */
export function trustReport(records: JournalRecord[], direction: 'lower' | 'higher'): TrustReport {
  const experiments = records.filter((r): r is ExperimentRecord => r.type === 'experiment');
  const runs = records.filter(r => r.type === 'run');
  const byPurpose: Record<RunPurpose, number> = { measure: 0, noise: 0, confirm: 0, best: 0 };
  const runSecondsOf = new Map<number, number>();
  for (const r of runs) {
    byPurpose[r.purpose]++;
    runSecondsOf.set(r.n, (runSecondsOf.get(r.n) ?? 0) + r.run_s);
  }
  const withRuns = new Set(runSecondsOf.keys());
  // Experiments from before run records: their one run is in timings.run_s.
  for (const e of experiments) {
    if (!withRuns.has(e.n) && e.timings.run_s > 0) {
      byPurpose.measure++;
      runSecondsOf.set(e.n, e.timings.run_s);
    }
  }
  const total = Object.values(byPurpose).reduce((s, v) => s + v, 0);
  const cost = (group: ExperimentRecord[]): TrustCost => {
    const keeps = group.filter(e => e.status === 'keep' && e.delta !== null);
    const gain = keeps.reduce((s, e) => s + (direction === 'lower' ? -(e.delta as number) : (e.delta as number)), 0);
    const acceleratorS = group.reduce((s, e) => s + (runSecondsOf.get(e.n) ?? 0), 0);
    const dollars = group.reduce((s, e) => s + e.cost_usd, 0);
    const perMilli =
      gain > 0 ? { acceleratorMin: acceleratorS / 60 / (gain / 0.001), dollars: dollars / (gain / 0.001) } : null;
    return { experiments: group.length, keeps: keeps.length, acceleratorS, dollars, gain, perMilli };
  };
  const proposers = [...new Set(experiments.map(e => e.proposer))];
  return {
    ...cost(experiments),
    runs: total,
    byPurpose,
    extraRuns: byPurpose.noise + byPurpose.confirm + byPurpose.best,
    byProposer: proposers.map(p => ({ proposer: p, ...cost(experiments.filter(e => e.proposer === p)) })),
  };
}

/** The report in a few lines of words, as `status`, `results` and the export print it. */
export function describeTrust(t: TrustReport): string[] {
  const p = t.byPurpose;
  const lines = [
    `${t.runs} run${t.runs === 1 ? '' : 's'}: ${p.measure} first runs, ${p.noise} noise, ${p.confirm} confirmation, ${p.best} re-measures of the best (${t.extraRuns} spent on trust); ${fmtMinutes(t.acceleratorS)} accelerator time`,
  ];
  const per = (c: TrustCost) =>
    c.perMilli
      ? `${fmtGain(c.gain)} gained in ${c.keeps} keep${c.keeps === 1 ? '' : 's'}: ${c.perMilli.acceleratorMin.toFixed(1)} accelerator-min and $${c.perMilli.dollars.toFixed(4)} per 0.001`
      : `no confirmed gain yet (${c.keeps} keeps)`;
  lines.push(per(t));
  const proposers = t.byProposer.filter(p => p.proposer !== 'baseline');
  if (proposers.length > 1) {
    for (const p of proposers) lines.push(`  ${p.proposer}: ${p.experiments} experiments, ${per(p)}`);
  }
  return lines;
}

function fmtMinutes(s: number): string {
  return s >= 3600 ? `${(s / 3600).toFixed(1)} h` : `${(s / 60).toFixed(1)} min`;
}

function fmtGain(g: number): string {
  return g.toFixed(4);
}
