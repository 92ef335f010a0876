/** `autoresearch transfer`: the command, its flags, and the table it prints. */
import * as path from 'node:path';
import { type Command, InvalidArgumentError, Option } from 'commander';
import { type FrontMatter, parseProgram } from '../../core/config/program';
import { RUN_OPTIONS, type RunOptionValues } from '../../core/config/run-options';
import { proposerKeyEnv } from '../../core/config/proposers';
import type { TransferSummary } from '../../core/study/transfer';
import { transferColumns, transferRows } from '../../core/views/transfer-view';
import { ENV_NAME } from '../../core/study/transfer-journal';
import type { Executor } from '../executor/types';
import { locatePython, resolvePython } from '../workspace/python';
import { studyPaths } from '../study/transfer-store';
import { runTransferStudy } from '../study/transfer';
import { PROGRAM_FILE } from '../workspace/workspace';
import { UserError } from '../user-error';
import { mergeSlurm, type SlurmSetting } from '../../core/config/slurm';
import { SLURM_FLAG_KEYS, slurmFlags } from './slurm-flags';
import { numberParser } from './run-flags';
import { readRegularIfAny } from '../workspace/workspace-files';

interface TransferFlags {
  tag?: string;
  env: string[];
  budget?: number;
  runs?: number;
  ablate?: boolean;
  json?: boolean;
  defaults?: boolean;
  python?: string;
  executor?: string;
  kernel?: string;
  serverUrl?: string;
  token?: string;
  /** The Slurm flags, by run option (slurm_args as commander names it: slurmArgs). */
  [slurmFlag: string]: unknown;
}

/** program.md's front matter; null when there is no program.md. */
function frontMatterOf(dir: string): FrontMatter | null {
  const program = readRegularIfAny(dir, PROGRAM_FILE);
  if (program === null) return null;
  try {
    return parseProgram(program.toString('utf8')).frontMatter;
  } catch (e) {
    throw new UserError((e as Error).message);
  }
}

/** commander's attribute for a run option's flag: --slurm-args is slurmArgs. */
const attributeOf = (key: string) => key.replace(/_(\w)/g, (_, c: string) => c.toUpperCase());

/** The study's defaults from program.md's front matter (what the panel's dialog starts from): {} and null when absent. */
export function transferDefaults(dir: string): { env: Record<string, string>; budget_s: number | null } {
  const setting = frontMatterOf(dir)?.transfer;
  return { env: setting?.env ?? {}, budget_s: setting?.budget_s ?? null };
}

/** KEY=VALUE pairs into an environment; a pair without `=` or with a bad name is the user's to fix. */
export function parseEnvPairs(pairs: string[]): Record<string, string> | undefined {
  if (pairs.length === 0) return undefined;
  const env: Record<string, string> = {};
  for (const pair of pairs) {
    const eq = pair.indexOf('=');
    const key = eq < 0 ? '' : pair.slice(0, eq);
    if (eq < 0 || !ENV_NAME.test(key)) {
      throw new UserError(
        `--env ${JSON.stringify(pair)} must be KEY=VALUE with KEY an environment variable name (e.g. --env AUTORESEARCH_SCALE=2)`,
      );
    }
    env[key] = pair.slice(eq + 1);
  }
  return env;
}

function count(v: string): number {
  const n = Number(v);
  if (!v.trim() || !Number.isInteger(n) || n < 1) throw new InvalidArgumentError('must be a whole number ≥ 1');
  return n;
}

function seconds(v: string): number {
  const n = Number(v);
  if (!v.trim() || !Number.isFinite(n) || n <= 0) throw new InvalidArgumentError('must be a number above 0');
  return n;
}

/** The study as a table, one change a line, under its summary line (columns and cells: ../core/transfer-view.ts). */
export function transferTable(s: TransferSummary): string {
  if (s.changes.length === 0) return s.summary.line;
  const head = transferColumns(s);
  const ablate = s.changes.some(c => c.ablate);
  const rows = transferRows(s).map(r => {
    const row = [
      String(r.n),
      r.commit,
      r.description.length > 40 ? `${r.description.slice(0, 39)}…` : r.description,
      r.search,
      r.transfer,
      r.verdict,
    ];
    if (ablate) row.push(r.ablation ?? '—', r.ablate_verdict ?? '—');
    return row;
  });
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map(r => r[i].length)));
  const line = (r: string[]) =>
    r
      .map((v, i) => v.padEnd(widths[i]))
      .join('  ')
      .trimEnd();
  const direction = s.direction === 'lower' ? 'lower is better' : 'higher is better';
  const base = s.baseline;
  const baseLine = base
    ? `baseline ${base.commit.slice(0, 7)}: ${s.metric} ${base.search.mean?.toFixed(4) ?? '—'} at search scale (${base.search.runs} runs), ${base.transfer.mean?.toFixed(4) ?? '—'} at ${s.scale} (${base.transfer.runs} runs); Δ = after − before (${direction}), ± one standard error; verdicts at ${s.keep_sigma}σ`
    : undefined;
  return [s.summary.line, baseLine, '', line(head), ...rows.map(line)].filter(l => l !== undefined).join('\n');
}

/** Registers `transfer` on the program; `createExecutor` is the run command's, so the study runs where a run would. */
export function registerTransferCommand(
  program: Command,
  setExit: (code: number) => void,
  createExecutor: (o: Partial<RunOptionValues>, slurm?: SlurmSetting) => Executor,
): void {
  const transfer = program
    .command('transfer')
    .description(
      "replay a run's baseline and kept commits at a larger scale (--env), K runs each, and say which changes carried over; --ablate also removes each change alone from the best",
    )
    .argument('<dir>', 'workspace')
    .option('--tag <tag>', 'run (default: the latest)')
    .option(
      '--env <KEY=VALUE>',
      'environment of the larger scale, for every run (repeatable; default: program.md transfer.env)',
      (v: string, all: string[]) => [...all, v],
      [] as string[],
    )
    .option(
      '--budget <seconds>',
      "training budget of a run at the larger scale (default: transfer.budget_s, else the run's)",
      seconds,
    )
    .option('--runs <k>', "runs of each commit (default: the run's noise_runs, at least 2)", count)
    .option('--ablate', 'also revert each kept change alone from the final best and measure it at the search scale')
    .option('--json', 'print the result as JSON')
    .option('--defaults', "print program.md's transfer defaults as JSON ({env, budget_s}) and run nothing")
    .option('--python <path>', 'interpreter for the runs (default: python3 on PATH)')
    .option(
      '--executor <name>',
      'subprocess, kernel or slurm, as for run (default: slurm where program.md has slurm:, else subprocess)',
    )
    .option('--kernel <name>', 'kernelspec (--executor kernel)')
    .option('--server-url <url>', 'Jupyter server (--executor kernel; default $JUPYTER_SERVER_URL)')
    .option('--token <token>', 'its token (default $JUPYTER_TOKEN)');
  // The Slurm flags are run's own (src/core/config/run-options.ts), over program.md's slurm: as there.
  for (const key of SLURM_FLAG_KEYS) {
    const spec = RUN_OPTIONS[key];
    const option = new Option(spec.flag, `${spec.help} (--executor slurm)`);
    if (spec.kind !== 'text') option.argParser(numberParser(spec.kind));
    transfer.addOption(option);
  }
  transfer.action(async (dirArg: string, o: TransferFlags) => {
    const dir = path.resolve(dirArg);
    if (o.defaults) {
      process.stdout.write(JSON.stringify(transferDefaults(dir)) + '\n');
      return setExit(0);
    }
    const env = parseEnvPairs(o.env);
    // As for run: program.md's slurm: makes Slurm the default.
    const slurm = frontMatterOf(dir)?.slurm;
    o.executor ??= slurm ? 'slurm' : 'subprocess';
    if (o.executor !== 'subprocess' && o.executor !== 'kernel' && o.executor !== 'slurm')
      throw new UserError('--executor must be subprocess, kernel or slurm');
    const flags: Partial<RunOptionValues> = {
      executor: o.executor,
      ...(o.kernel !== undefined && { kernel: o.kernel }),
      ...(o.serverUrl !== undefined && { server_url: o.serverUrl }),
      ...(o.token !== undefined && { token: o.token }),
      ...Object.fromEntries(
        SLURM_FLAG_KEYS.filter(k => o[attributeOf(k)] !== undefined).map(k => [k, o[attributeOf(k)]]),
      ),
    };
    const executor = createExecutor(flags, o.executor === 'slurm' ? mergeSlurm(slurmFlags(flags), slurm) : undefined);
    // Training runs inherit this environment: no key of the engine's reaches them.
    for (const name of [...proposerKeyEnv(), 'JUPYTER_TOKEN']) delete process.env[name];
    // As a run does: the real interpreter, whose folder goes first on the runs' PATH.
    const python = await locatePython(resolvePython(o.python)).catch(e => {
      throw new UserError((e as Error).message);
    });
    const controller = new AbortController();
    const onSignal = () => controller.abort('signal');
    process.on('SIGINT', onSignal);
    process.on('SIGTERM', onSignal);
    const note = (text: string) => process.stderr.write(`${text}\n`);
    try {
      const r = await runTransferStudy({
        dir,
        tag: o.tag,
        env,
        budgetS: o.budget,
        runs: o.runs,
        ablate: Boolean(o.ablate),
        executor,
        python,
        signal: controller.signal,
        onNote: note,
      });
      if (o.json) {
        process.stdout.write(JSON.stringify(r.summary, null, 1) + '\n');
      } else {
        process.stdout.write(transferTable(r.summary) + '\n');
        if (r.summary.changes.length) {
          process.stdout.write(
            `\n${r.ran} runs made now; the study's journal: ${studyPaths(dir, r.summary.tag).journal}\n`,
          );
        }
      }
      if (r.stopped) note('stopped before the study finished; rerun the same command to continue it');
      setExit(0);
    } finally {
      await executor.dispose?.();
    }
  });
}
