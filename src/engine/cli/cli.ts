/** The `autoresearch` command: init, run, status, state, results, stop, export. */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { Command, CommanderError, InvalidArgumentError } from 'commander';
import type { RunConfig } from '../../core/journal/journal';
import { STOP_FILE } from '../../core/journal/layout';
import { PROPOSER_INFO, RUN_OPTIONS } from '../../core/config/run-options';
import { frontMatterValues } from '../../core/config/run-option-checks';
import { orList, proposerKeyEnv, proposersWith } from '../../core/config/proposers';
import { isEngineAlive, readEngineInfo } from '../run/engine-lock';
import { KernelExecutor } from '../executor/kernel';
import { SubprocessExecutor } from '../executor/subprocess';
import type { Executor } from '../executor/types';
import { exitAfterFlush } from './exit-after-flush';
import { exportNotebook } from './export-command';
import { initWorkspace, TEMPLATE_NEEDS } from '../workspace/init';
import { initFromRepository } from '../workspace/init-from';
import { Loop } from '../run/loop';
import { createProposer, defaultProposer } from '../proposers';
import { resolvePython } from '../workspace/python';
import { resultsText, statusText } from './report';
import { withSecrets } from '../executor/secrets';
import { addRunOptions, flagOf, type RunFlags } from './run-flags';
import { writeStateFromJournal } from './state-command';
import { fmtMetric, TerminalReporter } from './terminal';
import { registerTransferCommand } from './transfer-command';
import { ENGINE_VERSION } from '../version';
import { loadProgram } from '../workspace/workspace';
import { UserError } from '../user-error';
import { STATE_DIR } from '../../core/journal/layout';
import { registerReviewCommands, ttyAsker } from './review-command';
import { replaceFile } from '../workspace/workspace-files';

function positiveNumber(v: string): number {
  const n = Number(v);
  if (!Number.isFinite(n) || n <= 0) throw new InvalidArgumentError('must be a number above 0');
  return n;
}
function positiveInt(v: string): number {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 0) throw new InvalidArgumentError('must be a whole number ≥ 0');
  return n;
}
function abs(dir: string): string {
  return path.resolve(dir);
}

/** The executor --executor names; the kernel one talks to --server-url (default $JUPYTER_SERVER_URL). */
function createExecutor(o: RunFlags): Executor {
  if ((o.executor ?? 'subprocess') === 'subprocess') {
    for (const key of ['kernel', 'server_url', 'token', 'kernel_id', 'ship'] as const) {
      if (o[key] !== undefined) throw new UserError(`${flagOf(key)} applies to --executor kernel`);
    }
    return new SubprocessExecutor();
  }
  const serverUrl = o.server_url ?? process.env.JUPYTER_SERVER_URL;
  if (!serverUrl) {
    throw new UserError(
      '--executor kernel needs a Jupyter server: pass --server-url URL (or set JUPYTER_SERVER_URL) and --token T (or JUPYTER_TOKEN)',
    );
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
  if (o.kernel !== undefined && o.kernel_id !== undefined) {
    throw new UserError(
      "--kernel and --kernel-id exclude each other: an attached kernel's own kernelspec names the fresh ones",
    );
  }
  return new KernelExecutor({
    serverUrl,
    token: o.token ?? withSecrets().JUPYTER_TOKEN ?? '',
    kernelName: o.kernel,
    kernelId: o.kernel_id,
    ship: o.ship,
  });
}

/** The file `autoresearch stop` writes so the engine records the end as a stop, not a signal. */
export function stopRequestFile(dir: string): string {
  return path.join(dir, STATE_DIR, STOP_FILE);
}

async function runCommand(dirArg: string, o: RunFlags): Promise<number> {
  const dir = abs(dirArg);
  const controller = new AbortController();
  let signals = 0;
  const onSignal = (sig: string) => {
    signals++;
    if (signals > 1) {
      process.stderr.write(
        `\n${sig} again: still stopping (killing the training run, resetting to the best commit)…\n`,
      );
      return;
    }
    const stop = fs.existsSync(stopRequestFile(dir));
    fs.rmSync(stopRequestFile(dir), { force: true });
    controller.abort(stop ? 'stop' : 'signal');
  };
  process.on('SIGINT', () => onSignal('SIGINT'));
  process.on('SIGTERM', () => onSignal('SIGTERM'));
  const seed = o.seed ?? RUN_OPTIONS.seed.default;
  // The flags that are also front matter keys (budget_s, model, noise_runs, …) override program.md's.
  const overrides: Partial<RunConfig> = frontMatterValues(o);
  const python = resolvePython(o.python);
  const proposerName = o.proposer ?? defaultProposer();
  if (o.model !== undefined && !PROPOSER_INFO[proposerName].hasModel) {
    throw new UserError(
      `${flagOf('model')} applies to the ${orList(proposersWith('model'))} proposer, not ${proposerName}`,
    );
  }
  if (o.effort !== undefined && !proposersWith('effort').includes(proposerName)) {
    throw new UserError(
      `${flagOf('effort')} applies to the ${orList(proposersWith('effort'))} proposer, not ${proposerName}`,
    );
  }
  // program.md's front matter may set the model, a spending cap and prices; flags win over it.
  const { config } = loadProgram(dir, overrides);
  const workers = o.workers ?? RUN_OPTIONS.workers.default;
  if (workers > 1 && o.kernel_id !== undefined) {
    throw new UserError(
      `--kernel-id attaches one kernel, but each of --workers ${workers} needs its own: pass --kernel NAME instead`,
    );
  }
  // One executor per worker (each kernel executor starts its own kernel); all of them are disposed at the end.
  const executors: Executor[] = [createExecutor(o)];
  const executor = executors[0];
  const reporter = new TerminalReporter(process.stdout);
  const proposer = createProposer(proposerName, {
    seed,
    python,
    model: config.model,
    effort: config.effort,
    prices: config.prices,
    onNote: text => reporter.print(text),
  });
  // The proposer holds its key now; training runs inherit this environment and must not see it (a print would log it).
  for (const name of [...proposerKeyEnv(), 'JUPYTER_TOKEN']) {
    delete process.env[name];
  }
  const loop = new Loop({
    dir,
    tag: o.tag,
    resume: Boolean(o.resume),
    proposer,
    executor,
    python,
    seed,
    maxExperiments: o.max_experiments,
    moreExperiments: o.more_experiments,
    acceptSettings: o.accept_settings === true,
    overridesFrom: o.panel ? 'panel' : 'flag',
    hours: o.hours,
    pipeline: o.pipeline !== false,
    overrides,
    signal: controller.signal,
    workers,
    // Step mode on a terminal also asks inline; decision files from other shells are read either way.
    asker: process.stdin.isTTY ? ttyAsker(dir, text => reporter.print(text)) : undefined,
    executorFor: () => {
      const e = createExecutor(o);
      executors.push(e);
      return e;
    },
  });
  // A refused key should stop the run now, not after the baseline has trained.
  await proposer.check?.(controller.signal);
  reporter.attach(loop);
  // Notes (results.tsv rebuilt, a budget ignored, a keep that moved the branch) are one line each, above the live line.
  loop.on('note', (text: string) => reporter.print(text));
  try {
    const end = await loop.run();
    reporter.close();
    process.stdout.write(
      `run ${loop.tag} ended (${end.reason}${end.message ? `: ${end.message}` : ''}); best ${fmtMetric(end.best_metric)} at ${end.best_commit?.slice(0, 7) ?? '—'} on ${loop.branch}\n`,
    );
    return 0;
  } finally {
    reporter.close();
    // The kernel the engine started goes with it (its memory, a GPU's included, is freed).
    await Promise.all(executors.map(e => e.dispose?.()));
  }
}

async function stopCommand(dirArg: string, o: { wait: number }): Promise<number> {
  const dir = abs(dirArg);
  const info = readEngineInfo(dir);
  if (!info || !isEngineAlive(info)) {
    throw new UserError(`no engine is running on ${dir}`);
  }
  replaceFile(stopRequestFile(dir), String(Date.now()));
  process.kill(info.pid, 'SIGTERM');
  const until = Date.now() + o.wait * 1000;
  while (isEngineAlive(info) && Date.now() < until) {
    await new Promise(r => setTimeout(r, 100));
  }
  if (isEngineAlive(info)) {
    throw new UserError(
      `the engine (pid ${info.pid}) is still stopping after ${o.wait} s; check again with autoresearch status ${dir}`,
    );
  }
  process.stdout.write(`stopped the engine (pid ${info.pid}, run ${info.tag})\n`);
  return 0;
}

/** Builds the command-line program. */
export function buildProgram(setExit: (code: number) => void): Command {
  const program = new Command('autoresearch')
    .description(
      'Autoresearch: an agent edits train.py, each experiment trains for a fixed budget, the branch keeps what improves the metric.',
    )
    .version(ENGINE_VERSION)
    // Commander's own exits (--help, --version, a bad flag) come back to main() as errors, so
    // that they too end through exitAfterFlush; every command declared below inherits this.
    .exitOverride();

  program
    .command('init')
    .description(
      'create a workspace: from a bundled template (a git repository with one commit), or --from a repository laid out like autoresearch',
    )
    .argument('<dir>', 'folder to create')
    .option('--template <name>', 'template (default: tiny-cpu)')
    .option('--budget <seconds>', 'training budget per experiment, in seconds (templates)', positiveInt)
    .option('--from <url-or-path>', 'clone this repository (program.md, train.py, prepare.py at its root) instead')
    .option('--ref <ref>', 'with --from: the branch, tag or commit to start from (default: its default branch)')
    .action(async (dir: string, o: { template?: string; budget?: number; from?: string; ref?: string }) => {
      const needs = (list: string[]) => `its Python needs: ${list.join('; ')}`;
      if (o.from === undefined) {
        if (o.ref !== undefined) throw new UserError('--ref goes with --from: the repository to take it from');
        const template = o.template ?? 'tiny-cpu';
        const commit = await initWorkspace(abs(dir), { template, budgetS: o.budget });
        process.stdout.write(
          `created ${abs(dir)} from ${template} (commit ${commit.slice(0, 7)}); ${needs(TEMPLATE_NEEDS[template] ?? [])}\nstart with: autoresearch run ${dir}\n`,
        );
        return;
      }
      if (o.template !== undefined) throw new UserError('--template and --from exclude each other: choose one');
      if (o.budget !== undefined) {
        throw new UserError(
          "--budget sets a template's budget; for a repository, set budget_s in its program.md front matter",
        );
      }
      const r = await initFromRepository(abs(dir), { from: o.from, ref: o.ref });
      process.stdout.write(
        `created ${abs(dir)} from ${o.from} (branch ${r.branch}, commit ${r.commit.slice(0, 7)}); ${needs(r.needs)}\nstart with: autoresearch run ${dir}\n`,
      );
    });

  const run = program
    .command('run')
    .description('run experiments until stopped (Ctrl-C, autoresearch stop, --max-experiments or --hours)')
    .argument('<dir>', 'workspace (a git repository with program.md, train.py, prepare.py)');
  // Its flags are declared once, in src/core/config/run-options.ts, with the server's and the settings'.
  const runFlags = addRunOptions(run);
  run.action(async (dir: string, o: Record<string, unknown>) => setExit(await runCommand(dir, runFlags(o))));

  program
    .command('status')
    .description('where a run stands')
    .argument('<dir>', 'workspace')
    .option('--tag <tag>', 'run (default: the latest)')
    .action((dir: string, o: { tag?: string }) => {
      process.stdout.write(statusText(abs(dir), o.tag) + '\n');
    });

  program
    .command('state')
    .description(
      "rewrite a run's .autoresearch/<tag>/state.json from its journal (the engine writes it as it goes; this is for older runs and journals it did not finish)",
    )
    .argument('<dir>', 'workspace')
    .option('--tag <tag>', 'run (default: the latest)')
    .action((dir: string, o: { tag?: string }) => {
      writeStateFromJournal(abs(dir), o.tag);
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
    .description(
      'stop the engine running on a workspace: the experiment in flight is recorded as interrupted, the tree reset to the best commit',
    )
    .argument('<dir>', 'workspace')
    .option('--wait <seconds>', 'how long to wait for the engine to finish stopping', positiveNumber, 60)
    .action(async (dir: string, o: { wait: number }) => setExit(await stopCommand(dir, o)));

  program
    .command('export')
    .description(
      'a run as a notebook (<tag>.ipynb in the workspace): program.md, the progress chart, one output per experiment',
    )
    .argument('<dir>', 'workspace')
    .option('--tag <tag>', 'run (default: the latest)')
    .option('--out <file>', 'where to write the notebook (default: <dir>/<tag>.ipynb; - for stdout)')
    .action((dir: string, o: { tag?: string; out?: string }) => {
      const r = exportNotebook(abs(dir), o);
      if (r.file) {
        process.stdout.write(`wrote ${r.file} (run ${r.tag}, ${r.experiments} experiments)\n`);
      }
    });

  // The transfer study (src/engine/cli/transfer-command.ts): runs through the same executors as run.
  registerTransferCommand(program, setExit, createExecutor);

  // Step mode: review, approve, reject (src/engine/cli/review-command.ts).
  registerReviewCommands(program, abs);

  return program;
}

/** Runs the CLI; user errors print one line and exit 1. It exits once its output is flushed. */
export async function main(argv: string[]): Promise<void> {
  let code = 0;
  const program = buildProgram(c => (code = c));
  try {
    await program.parseAsync(argv);
  } catch (e) {
    if (e instanceof CommanderError) {
      // Commander has printed its help, version or error already.
      code = e.exitCode;
    } else if (e instanceof UserError) {
      process.stderr.write(`autoresearch: ${e.message}\n`);
      code = 1;
    } else {
      process.stderr.write(`autoresearch: internal error: ${(e as Error).stack ?? e}\n`);
      code = 2;
    }
  }
  await exitAfterFlush(code);
}
