/** `autoresearch status` and `autoresearch results`: where a run stands, rebuilt from the journal. */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { experimentsOf, type JournalRecord, type RunConfig } from '../../core/journal/journal';
import { Measurements } from '../../core/rule/measurements';
import { fmtNoise } from '../../core/rule/noise';
import { noiseLineWords } from '../../core/rule/noise-words';
import { deriveRunState, type LivePhase, runActivity, RunStateFile } from '../../core/journal/run-state';
import { sandboxOf } from '../../core/config/sandbox';
import { describeTrust, trustReport } from '../../core/rule/trust-cost';
import { runBranch } from '../../core/journal/layout';
import { fmtDelta, fmtMetric } from '../../core/views/bundle';
import { isEngineAlive, readEngineInfo } from '../run/engine-lock';
import { JournalStore } from '../store/journal-store';
import { experimentHead, experimentLine, experimentTail, fmtSpread, SPREAD_WIDTH } from './terminal';
import { checkTag, latestTag, runPaths } from '../workspace/workspace';
import { UserError } from '../user-error';
import { readNoFollow, readRegularText } from '../workspace/workspace-files';

/** The tag to report on: the one given, else the most recent run's. */
export function pickTag(dir: string, tag?: string): string {
  if (tag !== undefined) checkTag(tag);
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

/** The run's `state:` line, for what runActivity says it is doing. */
function stateWords(s: RunStateFile, activity: ReturnType<typeof runActivity>, pid: number | undefined, dir: string) {
  switch (activity) {
    case 'awaiting-review':
      return `awaiting-review: #${s.pending?.n} ${s.pending?.description} (engine pid ${pid}; autoresearch review ${dir})`;
    case 'running':
      return `running (engine pid ${pid})`;
    case 'stopped':
      return `stopped (${s.end?.reason}${s.end?.message ? `: ${s.end.message}` : ''})`;
    case 'died':
      return 'not running, ended without a clean stop; continue with --resume';
  }
}

/**
 * What each experiment in flight is doing, as the live engine last wrote it into state.json (the
 * journal does not hold it); empty when the file is missing or unreadable.
 */
function livePhases(stateFile: string): Map<number, LivePhase> {
  try {
    const parsed = RunStateFile.safeParse(JSON.parse(readNoFollow(stateFile).toString('utf8')));
    if (parsed.success) {
      return new Map(parsed.data.in_flight.flatMap(f => (f.phase ? [[f.n, f.phase] as const] : [])));
    }
  } catch {
    // No state yet, or a torn file: the journal's lines stand alone.
  }
  return new Map();
}

/** A few lines on where the run stands: state.json's reading of the journal (src/core/journal/run-state.ts), in words. */
export function statusText(dir: string, tag?: string): string {
  const { tag: t, records } = load(dir, tag);
  const s = deriveRunState(records, 0, t);
  const engine = readEngineInfo(dir);
  const running = engine !== null && engine.tag === t && isEngineAlive(engine);
  const state = stateWords(s, runActivity(s, running), engine?.pid, dir);
  const counts = Object.entries(s.counts);
  const { trust, config } = noiseOf(records);
  const { best, baseline } = s;
  const bestRuns = best?.runs ?? 0;
  const lines = [
    `run:         ${t} (branch ${runBranch(t)})`,
    `state:       ${state}`,
    `experiments: ${s.experiments}${counts.length ? ' — ' + counts.map(([k, v]) => `${v} ${k}`).join(', ') : ''}`,
    `baseline:    ${fmtMetric(baseline?.metric ?? null)}`,
    `best:        ${fmtMetric(best?.metric ?? null)}${best && s.sigma && best.stderr !== null ? ` ± ${fmtNoise(best.stderr)}` : ''}${bestRuns > 1 ? ` (${bestRuns} runs)` : ''}${best && baseline?.metric != null ? ` (${fmtDelta(best.metric - baseline.metric)} vs baseline) at ${best.commit.slice(0, 7)}` : ''}`,
    `noise:       ${s.noise}`,
    `cost:        $${(s.cost_usd ?? Infinity).toFixed(4)} (${s.tokens} tokens)`,
    `sandbox:     ${sandboxLine(records, config)}`,
    ...trust.map((l, i) => `${i ? '             ' : 'trust:       '}${l}`),
  ];
  if (running) {
    const live = livePhases(runPaths(dir, t).state);
    // One line per experiment in flight: one per worker when there are several.
    for (const f of s.in_flight) {
      const who = f.worker !== null ? `worker ${f.worker}: ` : '';
      // While a scheduler holds its run: which job, so squeue -j and scontrol show job find it.
      const phase = live.get(f.n);
      const job = phase?.name === 'queue' && phase.job ? `, queued as Slurm job ${phase.job.id}` : '';
      lines.push(
        `in flight:   ${who}#${f.n} ${f.description} (for ${Math.round((Date.now() - Date.parse(f.ts)) / 1000)} s${job})`,
      );
    }
  }
  if (running && s.step) {
    lines.push(`step mode:   on: each proposal awaits autoresearch approve / reject (autoresearch step ${dir} off)`);
  }
  if (!running && s.pending) {
    lines.push(`pending:     #${s.pending.n} ${s.pending.description} awaits review; offered again on --resume`);
  }
  const exps = experimentsOf(records);
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
    return readRegularText(dir, 'results.tsv').replace(/\n$/, '');
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

/** What status and results say of the noise: σ and the rule in words, the trust cost, the run's config. */
function noiseOf(records: JournalRecord[]): { noise: string; trust: string[]; config: RunConfig | undefined } {
  const { sigma, df } = Measurements.of(records).sigma();
  const config = [...records].reverse().find(r => r.type === 'run_start')?.config;
  return {
    noise: noiseLineWords(sigma, df, config),
    trust: describeTrust(trustReport(records, config?.direction ?? 'lower')),
    config,
  };
}

function fmtCost(usd: number): string {
  return usd > 0 ? `$${usd.toFixed(4)}` : '—';
}
