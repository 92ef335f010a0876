/** The `autoresearch` command: init, run, status, results, stop, export. */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { Command, InvalidArgumentError } from 'commander';
import type { RunConfig } from '../core/journal';
import { isAlive, readEngineInfo } from './engine-lock';
import { KernelExecutor, type ShipMode } from './executor/kernel';
import { SubprocessExecutor } from './executor/subprocess';
import type { Executor } from './executor/types';
import { exportNotebook } from './export';
import { initWorkspace } from './init';
import { Loop } from './loop';
import { createProposer, defaultProposer } from './proposers';
import { ClaudeProposer, DEFAULT_MODEL } from './proposers/claude';
import { resolvePython } from './python';
import { resultsText, statusText } from './report';
import { fmtMetric } from './terminal';
import { TerminalReporter } from './terminal';
import { ENGINE_VERSION } from './version';
import { loadProgram, STATE_DIR, UserError } from './workspace';

function positiveNumber(v: string): number {
  const n = Number(v);
  if (!Number.isFinite(n) || n <= 0) throw new InvalidArgumentError('must be a number above 0');
  return n;
}
function nonNegativeNumber(v: string): number {
  const n = Number(v);
  if (!Number.isFinite(n) || n < 0) throw new InvalidArgumentError('must be a number ≥ 0');
  return n;
}
function positiveInt(v: string): number {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 0) throw new InvalidArgumentError('must be a whole number ≥ 0');
  return n;
}
function atLeastOne(v: string): number {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1) throw new InvalidArgumentError('must be a whole number ≥ 1');
  return n;
}
function abs(dir: string): string {
  return path.resolve(dir);
}

function shipMode(v: string): ShipMode {
  if (v !== 'auto' && v !== 'always' && v !== 'never') throw new InvalidArgumentError('must be auto, always or never');
  return v;
}

function executorName(v: string): 'subprocess' | 'kernel' {
  if (v !== 'subprocess' && v !== 'kernel') throw new InvalidArgumentError('must be subprocess or kernel');
  return v;
}

/** The executor --executor names; the kernel one talks to --server-url (default $JUPYTER_SERVER_URL). */
function createExecutor(o: Record<string, unknown>): Executor {
  if ((o.executor ?? 'subprocess') === 'subprocess') {
    for (const [flag, name] of [['kernel', 'kernel'], ['serverUrl', 'server-url'], ['token', 'token'], ['kernelId', 'kernel-id'], ['ship', 'ship']] as const) {
      if (o[flag] !== undefined) throw new UserError(`--${name} applies to --executor kernel`);
    }
    return new SubprocessExecutor();
  }
  const serverUrl = (o.serverUrl as string | undefined) ?? process.env.JUPYTER_SERVER_URL;
  if (!serverUrl) {
    throw new UserError('--executor kernel needs a Jupyter server: pass --server-url URL (or set JUPYTER_SERVER_URL) and --token T (or JUPYTER_TOKEN)');
  }
  // @jupyterlab/services logs connection chatter with console.debug, which Node prints on stdout.
  console.debug = () => undefined;
  // It also warns of each websocket reconnect; through a gateway the first connect is routinely
  // dropped and retried at once, and a kernel really lost is reported in the experiment's log.
  const warn = console.warn.bind(console);
  console.warn = (...args: unknown[]) => {
    if (typeof args[0] === 'string' && args[0].startsWith('Connection lost, reconnecting')) return;
    warn(...args);
  };
  if (o.kernel !== undefined && o.kernelId !== undefined) {
    throw new UserError('--kernel and --kernel-id exclude each other: an attached kernel\'s own kernelspec names the fresh ones');
  }
  return new KernelExecutor({
    serverUrl,
    token: (o.token as string | undefined) ?? process.env.JUPYTER_TOKEN ?? '',
    kernelName: o.kernel as string | undefined,
    kernelId: o.kernelId as string | undefined,
    ship: o.ship as ShipMode | undefined
  });
}

/** The file `autoresearch stop` writes so the engine records the end as a stop, not a signal. */
export function stopRequestFile(dir: string): string {
  return path.join(dir, STATE_DIR, 'stop-requested');
}

async function runCommand(dirArg: string, o: Record<string, unknown>): Promise<number> {
  const dir = abs(dirArg);
  const controller = new AbortController();
  let signals = 0;
  const onSignal = (sig: string) => {
    signals++;
    if (signals > 1) {
      process.stderr.write(`\n${sig} again: still stopping (killing the training run, resetting to the best commit)…\n`);
      return;
    }
    const stop = fs.existsSync(stopRequestFile(dir));
    fs.rmSync(stopRequestFile(dir), { force: true });
    controller.abort(stop ? 'stop' : 'signal');
  };
  process.on('SIGINT', () => onSignal('SIGINT'));
  process.on('SIGTERM', () => onSignal('SIGTERM'));
  const seed = (o.seed as number | undefined) ?? 0;
  const overrides: Partial<RunConfig> = {};
  if (o.budget !== undefined) overrides.budget_s = o.budget as number;
  if (o.timeout !== undefined) overrides.timeout_s = o.timeout as number;
  if (o.model !== undefined) overrides.model = o.model as string;
  if (o.maxDollars !== undefined) overrides.max_dollars = o.maxDollars as number;
  if (o.noiseRuns !== undefined) overrides.noise_runs = o.noiseRuns as number;
  if (o.keepSigma !== undefined) overrides.keep_sigma = o.keepSigma as number;
  if (o.confirmRuns !== undefined) overrides.confirm_runs = o.confirmRuns as number;
  const python = resolvePython(o.python as string | undefined);
  const proposerName = (o.proposer as string | undefined) ?? defaultProposer();
  if (o.model !== undefined && proposerName !== 'claude') {
    throw new UserError(`--model applies to the claude proposer, not ${proposerName}`);
  }
  // program.md's front matter may set the model, a spending cap and prices; flags win over it.
  const { config } = loadProgram(dir, overrides);
  const workers = (o.workers as number | undefined) ?? 1;
  if (workers > 1 && o.kernelId !== undefined) {
    throw new UserError(`--kernel-id attaches one kernel, but each of --workers ${workers} needs its own: pass --kernel NAME instead`);
  }
  // One executor per worker (each kernel executor starts its own kernel); all of them are disposed at the end.
  const executors: Executor[] = [createExecutor(o)];
  const executor = executors[0];
  const proposer = createProposer(proposerName, { seed, python, model: config.model, prices: config.prices });
  // The proposer holds its key now; training runs inherit this environment and must not see it (a print would log it).
  delete process.env.ANTHROPIC_API_KEY;
  delete process.env.ANTHROPIC_AUTH_TOKEN;
  delete process.env.JUPYTER_TOKEN;
  const loop = new Loop({
    dir,
    tag: o.tag as string | undefined,
    resume: Boolean(o.resume),
    proposer,
    executor,
    python,
    seed,
    maxExperiments: o.maxExperiments as number | undefined,
    hours: o.hours as number | undefined,
    pipeline: o.pipeline !== false,
    overrides,
    signal: controller.signal,
    workers,
    executorFor: () => {
      const e = createExecutor(o);
      executors.push(e);
      return e;
    }
  });
  const reporter = new TerminalReporter(process.stdout);
  if (proposer instanceof ClaudeProposer) {
    // A refused key should stop the run now, not after the baseline has trained.
    await proposer.check(controller.signal);
    proposer.onNote = text => reporter.print(text);
  }
  reporter.attach(loop);
  try {
    const end = await loop.run();
    reporter.close();
    process.stdout.write(`run ${loop.tag} ended (${end.reason}${end.message ? `: ${end.message}` : ''}); best ${fmtMetric(end.best_metric)} at ${end.best_commit?.slice(0, 7) ?? '—'} on ${loop.branch}\n`);
    return 0;
  } finally {
    reporter.close();
    // The kernel the engine started goes with it (its memory, a GPU's included, is freed).
    await Promise.all(executors.map(e => (e instanceof KernelExecutor ? e.dispose() : undefined)));
  }
}

async function stopCommand(dirArg: string, o: { wait: number }): Promise<number> {
  const dir = abs(dirArg);
  const info = readEngineInfo(dir);
  if (!info || !isAlive(info.pid)) {
    throw new UserError(`no engine is running on ${dir}`);
  }
  fs.writeFileSync(stopRequestFile(dir), String(Date.now()));
  process.kill(info.pid, 'SIGTERM');
  const until = Date.now() + o.wait * 1000;
  while (isAlive(info.pid) && Date.now() < until) {
    await new Promise(r => setTimeout(r, 100));
  }
  if (isAlive(info.pid)) {
    throw new UserError(`the engine (pid ${info.pid}) is still stopping after ${o.wait} s; check again with autoresearch status ${dir}`);
  }
  process.stdout.write(`stopped the engine (pid ${info.pid}, run ${info.tag})\n`);
  return 0;
}

/** Builds the command-line program. */
export function buildProgram(setExit: (code: number) => void): Command {
  const program = new Command('autoresearch')
    .description('Autoresearch: an agent edits train.py, each experiment trains for a fixed budget, the branch keeps what improves the metric.')
    .version(ENGINE_VERSION);

  program
    .command('init')
    .description('create a workspace from a bundled template (a git repository with one commit)')
    .argument('<dir>', 'folder to create')
    .option('--template <name>', 'template', 'tiny-cpu')
    .option('--budget <seconds>', 'training budget per experiment, in seconds', positiveInt)
    .action(async (dir: string, o: { template: string; budget?: number }) => {
      const commit = await initWorkspace(abs(dir), { template: o.template, budgetS: o.budget });
      process.stdout.write(`created ${abs(dir)} from ${o.template} (commit ${commit.slice(0, 7)}); start with: autoresearch run ${dir}\n`);
    });

  program
    .command('run')
    .description('run experiments until stopped (Ctrl-C, autoresearch stop, --max-experiments or --hours)')
    .argument('<dir>', 'workspace (a git repository with program.md, train.py, prepare.py)')
    .option('--tag <tag>', 'run name; the branch is autoresearch/<tag> (default: today, e.g. nov30)')
    .option('--proposer <name>', 'who proposes experiments: claude (the default when ANTHROPIC_API_KEY is set) or offline')
    .option('--model <id>', `the claude proposer's model (default: ${DEFAULT_MODEL})`)
    .option('--no-pipeline', 'propose only after each experiment ends, instead of drafting while it trains (claude)')
    .option('--max-dollars <x>', 'stop before a proposal would take the run\'s API spending past x dollars', positiveNumber)
    .option('--max-experiments <n>', 'stop after n experiments (the baseline not counted)', positiveInt)
    .option('--hours <h>', 'stop starting experiments after h hours', positiveNumber)
    .option('--workers <n>', 'experiments at once, each in its own git worktree and executor (a GPU each: CUDA_VISIBLE_DEVICES)', atLeastOne, 1)
    .option('--noise-runs <k>', 'runs of the baseline that measure the noise before the first proposal (default 3; 1 = the strict rule: keep any improvement)', atLeastOne)
    .option('--keep-sigma <z>', 'a keep must beat the best by this many standard errors of the difference (default 2)', nonNegativeNumber)
    .option('--confirm-runs <k>', 'extra runs a promising candidate gets before the decision (default 2)', positiveInt)
    .option('--resume', 'continue the run of --tag (default: the latest run)')
    .option('--seed <n>', 'seed for the offline proposer', positiveInt)
    .option('--python <path>', 'Python interpreter for the syntax check and the run (default: python3 on PATH)')
    .option('--budget <seconds>', 'override budget_s', positiveNumber)
    .option('--timeout <seconds>', 'override timeout_s (default: 2 × budget, at least budget + 60)', positiveNumber)
    .option('--executor <name>', 'where training runs: subprocess (a child of the engine, the default) or kernel (through a Jupyter kernel)', executorName)
    .option('--kernel <name>', 'kernelspec of the kernel executor (default: python3)')
    .option('--kernel-id <id>', 'run in this existing kernel (never shut down by the engine); if it dies, a fresh one of its kernelspec goes on')
    .option('--ship <mode>', 'copy the tracked files to the kernel\'s side before each run: auto (when the kernel cannot see the workspace, the default), always or never', shipMode)
    .option('--server-url <url>', 'Jupyter server of the kernel executor (default: $JUPYTER_SERVER_URL)')
    .option('--token <t>', 'token for --server-url (default: $JUPYTER_TOKEN)')
    .action(async (dir: string, o: Record<string, unknown>) => setExit(await runCommand(dir, o)));

  program
    .command('status')
    .description('where a run stands')
    .argument('<dir>', 'workspace')
    .option('--tag <tag>', 'run (default: the latest)')
    .action((dir: string, o: { tag?: string }) => {
      process.stdout.write(statusText(abs(dir), o.tag) + '\n');
    });

  program
    .command('results')
    .description("a run's experiments as a table")
    .argument('<dir>', 'workspace')
    .option('--tag <tag>', 'run (default: the latest)')
    .option('--tsv', 'print results.tsv as it is')
    .option('--json', 'print the journal records as JSON')
    .action((dir: string, o: { tag?: string; tsv?: boolean; json?: boolean }) => {
      process.stdout.write(resultsText(abs(dir), o) + '\n');
    });

  program
    .command('stop')
    .description('stop the engine running on a workspace: the experiment in flight is recorded as interrupted, the tree reset to the best commit')
    .argument('<dir>', 'workspace')
    .option('--wait <seconds>', 'how long to wait for the engine to finish stopping', positiveNumber, 60)
    .action(async (dir: string, o: { wait: number }) => setExit(await stopCommand(dir, o)));

  program
    .command('export')
    .description("a run as a notebook (<tag>.ipynb in the workspace): program.md, the progress chart, one output per experiment")
    .argument('<dir>', 'workspace')
    .option('--tag <tag>', 'run (default: the latest)')
    .option('--out <file>', 'where to write the notebook (default: <dir>/<tag>.ipynb; - for stdout)')
    .action((dir: string, o: { tag?: string; out?: string }) => {
      const r = exportNotebook(abs(dir), o);
      if (r.file) {
        process.stdout.write(`wrote ${r.file} (run ${r.tag}, ${r.experiments} experiments)\n`);
      }
    });

  return program;
}

/** Runs the CLI; user errors print one line and exit 1. */
export async function main(argv: string[]): Promise<void> {
  let code = 0;
  const program = buildProgram(c => (code = c));
  try {
    await program.parseAsync(argv);
  } catch (e) {
    if (e instanceof UserError) {
      process.stderr.write(`autoresearch: ${e.message}\n`);
      code = 1;
    } else {
      process.stderr.write(`autoresearch: internal error: ${(e as Error).stack ?? e}\n`);
      code = 2;
    }
  }
  process.exit(code);
}

