/** `autoresearch status` and `autoresearch results`: where a run stands, rebuilt from the journal. */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { experimentsOf, type JournalRecord } from '../core/journal';
import { isAlive, readEngineInfo } from './engine-lock';
import { JournalStore } from './journal-store';
import { bestOf, findInFlight } from './loop-records';
import { experimentLine, fmtDelta, fmtMetric } from './terminal';
import { latestTag, runPaths, UserError } from './workspace';

/** The tag to report on: the one given, else the most recent run's. */
export function pickTag(dir: string, tag?: string): string {
  const chosen = tag ?? latestTag(dir);
  if (!chosen || !fs.existsSync(runPaths(dir, chosen).journal)) {
    throw new UserError(tag ? `no run tagged "${tag}" in ${dir}` : `no runs in ${dir} yet; start one with: autoresearch run ${dir}`);
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
  const running = engine && engine.tag === t && isAlive(engine.pid);
  const last = records[records.length - 1];
  const state = running ? `running (engine pid ${engine.pid})` : last?.type === 'run_end' ? `stopped (${last.reason}${last.message ? `: ${last.message}` : ''})` : 'not running, ended without a clean stop; continue with --resume';
  const counts = new Map<string, number>();
  exps.forEach(e => counts.set(e.status, (counts.get(e.status) ?? 0) + 1));
  const best = bestOf(exps);
  const baseline = exps.find(e => e.status === 'keep');
  const cost = exps.reduce((s, e) => s + e.cost_usd, 0);
  const tokens = exps.reduce((s, e) => s + e.usage.input_tokens + e.usage.cache_creation_input_tokens + e.usage.cache_read_input_tokens + e.usage.output_tokens, 0);
  const lines = [
    `run:         ${t} (branch autoresearch/${t})`,
    `state:       ${state}`,
    `experiments: ${exps.length}${counts.size ? ' — ' + [...counts].map(([k, v]) => `${v} ${k}`).join(', ') : ''}`,
    `baseline:    ${fmtMetric(baseline?.metric ?? null)}`,
    `best:        ${fmtMetric(best?.metric ?? null)}${best && baseline?.metric != null ? ` (${fmtDelta(best.metric - baseline.metric)} vs baseline) at ${best.commit.slice(0, 7)}` : ''}`,
    `cost:        $${cost.toFixed(4)} (${tokens} tokens)`
  ];
  if (running) {
    // One line per experiment in flight: one per worker when there are several.
    for (const start of findInFlight(records)) {
      const who = start.worker !== undefined ? `worker ${start.worker}: ` : '';
      lines.push(`in flight:   ${who}#${start.n} ${start.description} (for ${Math.round((Date.now() - Date.parse(start.ts)) / 1000)} s)`);
    }
  }
  if (exps.length) {
    lines.push(`last:        ${experimentLine(exps[exps.length - 1])}`);
  }
  return lines.join('\n');
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
  const header = `   #  ${'status'.padEnd(11)} ${'metric'.padStart(10)}  ${'delta'.padStart(10)}  ${'cost'.padStart(8)}  ${workers}description`;
  const rows = exps.map(e => {
    const line = experimentLine(e);
    // The cost goes between the delta and the description: experimentLine's columns are fixed-width.
    const at = 6 + 12 + 10 + 2 + 10 + 2;
    return `${line.slice(0, at)}${fmtCost(e.cost_usd).padStart(8)}  ${line.slice(at)}`;
  });
  const cost = exps.reduce((s, e) => s + e.cost_usd, 0);
  const tokens = exps.reduce((s, e) => s + e.usage.input_tokens + e.usage.cache_creation_input_tokens + e.usage.cache_read_input_tokens + e.usage.output_tokens, 0);
  return [header, ...rows, `total: ${exps.length} experiments, $${cost.toFixed(4)}, ${tokens} tokens`].join('\n');
}

function fmtCost(usd: number): string {
  return usd > 0 ? `$${usd.toFixed(4)}` : '—';
}
