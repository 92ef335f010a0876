/** `autoresearch status` and `autoresearch results`: where a run stands, rebuilt from the journal. */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { experimentsOf, type JournalRecord, type RunConfig } from '../core/journal';
import { Measurements } from '../core/measurements';
import { fmtNoise, noiseRuleOf } from '../core/noise';
import { sandboxOf } from '../core/sandbox';
import { describeTrust, trustReport } from '../core/trust';
import { isEngineAlive, readEngineInfo } from './engine-lock';
import { JournalStore } from './journal-store';
import { bestOf, findInFlight } from './loop-records';
import {
  experimentHead,
  experimentLine,
  experimentTail,
  fmtDelta,
  fmtMetric,
  fmtSpread,
  SPREAD_WIDTH,
} from './terminal';
import { latestTag, runPaths, UserError } from './workspace';

/** The tag to report on: the one given, else the most recent run's. */
export function pickTag(dir: string, tag?: string): string {
  const chosen = tag ?? latestTag(dir);
  if (!chosen || !fs.existsSync(runPaths(dir, chosen).journal)) {
    throw new UserError(
      tag ? `no run tagged "${tag}" in ${dir}` : `no runs in ${dir} yet; start one with: autoresearch run ${dir}`,
    );
  }
  return chosen;
}

function load(dir: string, tag?: string): { tag: string; records: JournalRecord[] } {
  const t = pickTag(dir, tag);
  return { tag: t, records: new JournalStore(runPaths(dir, t).journal).read() };
}

/** A few lines on where the run stands. */
export function statusText(dir: string, tag?: string): string {
  const { tag: t, records } = load(dir, tag);
  const exps = experimentsOf(records);
  const engine = readEngineInfo(dir);
  const running = engine && engine.tag === t && isEngineAlive(engine);
  const last = records[records.length - 1];
  const state = running
    ? `running (engine pid ${engine.pid})`
    : last?.type === 'run_end'
      ? `stopped (${last.reason}${last.message ? `: ${last.message}` : ''})`
      : 'not running, ended without a clean stop; continue with --resume';
  const counts = new Map<string, number>();
  exps.forEach(e => counts.set(e.status, (counts.get(e.status) ?? 0) + 1));
  const { m, sigma, noise, trust, config } = noiseOf(records);
  const best = bestOf(exps, m);
  const bestRuns = best ? m.values(best.state).length : 0;
  const baseline = exps.find(e => e.status === 'keep');
  const cost = exps.reduce((s, e) => s + e.cost_usd, 0);
  const tokens = exps.reduce(
    (s, e) =>
      s +
      e.usage.input_tokens +
      e.usage.cache_creation_input_tokens +
      e.usage.cache_read_input_tokens +
      e.usage.output_tokens,
    0,
  );
  const lines = [
    `run:         ${t} (branch autoresearch/${t})`,
    `state:       ${state}`,
    `experiments: ${exps.length}${counts.size ? ' — ' + [...counts].map(([k, v]) => `${v} ${k}`).join(', ') : ''}`,
    `baseline:    ${fmtMetric(baseline?.metric ?? null)}`,
    `best:        ${fmtMetric(best?.metric ?? null)}${best && sigma ? ` ± ${fmtNoise(sigma / Math.sqrt(Math.max(1, bestRuns)))}` : ''}${bestRuns > 1 ? ` (${bestRuns} runs)` : ''}${best && baseline?.metric != null ? ` (${fmtDelta(best.metric - baseline.metric)} vs baseline) at ${best.commit.slice(0, 7)}` : ''}`,
    `noise:       ${noise}`,
    `cost:        $${cost.toFixed(4)} (${tokens} tokens)`,
    `sandbox:     ${sandboxLine(records, config)}`,
    ...trust.map((l, i) => `${i ? '             ' : 'trust:       '}${l}`),
  ];
  if (running) {
    // One line per experiment in flight: one per worker when there are several.
    for (const start of findInFlight(records)) {
      const who = start.worker !== undefined ? `worker ${start.worker}: ` : '';
      lines.push(
        `in flight:   ${who}#${start.n} ${start.description} (for ${Math.round((Date.now() - Date.parse(start.ts)) / 1000)} s)`,
      );
    }
  }
  if (exps.length) {
    lines.push(`last:        ${experimentLine(exps[exps.length - 1])}`);
  }
  return lines.join('\n');
}

/** Whether the training runs are sandboxed: as set (the run's config), and as the last run found it. */
function sandboxLine(records: JournalRecord[], config: RunConfig | undefined): string {
  const { mode, network } = sandboxOf(config?.sandbox);
  const lastRun = [...records].reverse().find(r => r.type === 'run' && r.sandbox !== undefined);
  const found =
    lastRun?.type === 'run'
      ? `; the last run was ${lastRun.sandbox === 'on' ? 'sandboxed' : 'not sandboxed'} (#${lastRun.n}, its log says why)`
      : '';
  return `${mode}${mode !== 'off' ? `, network ${network ? 'on' : 'off'}` : ''}${found}`;
}

/** The run's experiments as a table, or the raw results.tsv. */
export function resultsText(dir: string, opts: { tag?: string; tsv?: boolean; json?: boolean }): string {
  if (opts.tsv) {
    const file = path.join(dir, 'results.tsv');
    if (!fs.existsSync(file)) {
      throw new UserError(`${file} does not exist yet`);
    }
    return fs.readFileSync(file, 'utf8').replace(/\n$/, '');
  }
  const { records } = load(dir, opts.tag);
  const exps = experimentsOf(records);
  if (opts.json) {
    return JSON.stringify(exps, null, 2);
  }
  // experimentLine puts `wK` before the description of a worker's experiment.
  const workers = exps.some(e => e.worker !== undefined) ? 'w   ' : '';
  // The ± column appears once any experiment was measured more than once.
  const spread = exps.some(e => fmtSpread(e) !== '');
  const header = `   #  ${'status'.padEnd(11)} ${'metric'.padStart(10)}  ${'delta'.padStart(10)}  ${'cost'.padStart(8)}  ${spread ? `${'± se ×runs'.padEnd(SPREAD_WIDTH)}  ` : ''}${workers}description`;
  const rows = exps.map(e => `${experimentHead(e)}  ${fmtCost(e.cost_usd).padStart(8)}  ${experimentTail(e, spread)}`);
  const cost = exps.reduce((s, e) => s + e.cost_usd, 0);
  const tokens = exps.reduce(
    (s, e) =>
      s +
      e.usage.input_tokens +
      e.usage.cache_creation_input_tokens +
      e.usage.cache_read_input_tokens +
      e.usage.output_tokens,
    0,
  );
  const { noise, trust } = noiseOf(records);
  return [
    header,
    ...rows,
    `total: ${exps.length} experiments, $${cost.toFixed(4)}, ${tokens} tokens`,
    `noise: ${noise}`,
    ...trust.map(l => `trust: ${l}`),
  ].join('\n');
}

/** What status and results say of the noise: the measurements, σ, the rule in words and the trust cost. */
function noiseOf(records: JournalRecord[]): {
  m: Measurements;
  sigma: number | null;
  noise: string;
  trust: string[];
  config: RunConfig | undefined;
} {
  const m = Measurements.of(records);
  const { sigma, df } = m.sigma();
  const config = [...records].reverse().find(r => r.type === 'run_start')?.config;
  return {
    m,
    sigma,
    noise: noiseLine(sigma, df, config ? noiseRuleOf(config) : null),
    trust: describeTrust(trustReport(records, config?.direction ?? 'lower')),
    config,
  };
}

/** σ and the rule in one line: `σ 0.0041 (12 df); a keep must beat the best by 2σ of the difference`. */
function noiseLine(sigma: number | null, df: number, rule: ReturnType<typeof noiseRuleOf> | null): string {
  if (!rule || rule.noiseRuns <= 1) return 'not measured (noise_runs 1: the strict rule keeps any improvement)';
  if (sigma === null) return `not measured yet (the baseline runs ${rule.noiseRuns} times first)`;
  if (sigma === 0)
    return `σ 0 over ${df} repeat${df === 1 ? '' : 's'}: a deterministic metric, any improvement is kept`;
  return `σ ${fmtNoise(sigma)} per run (${df} df); a keep must beat the best by ${rule.keepSigma} standard errors of the difference, reproduced on ≥ 2 runs (up to ${1 + rule.confirmRuns})`;
}

function fmtCost(usd: number): string {
  return usd > 0 ? `$${usd.toFixed(4)}` : '—';
}
