/**
 * `autoresearch run`: the loop in a terminal, with the executor, the proposer and the terminal's
 * live line its flags ask for; Ctrl-C (or `autoresearch stop`) ends it at the best commit.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { RunConfig } from '../../core/journal/journal';
import { PROPOSER_INFO, RUN_OPTIONS } from '../../core/config/run-options';
import { frontMatterValues } from '../../core/config/run-option-checks';
import { orList, proposerKeyEnv, proposersWith } from '../../core/config/proposers';
import { KernelExecutor } from '../executor/kernel';
import { SubprocessExecutor } from '../executor/subprocess';
import { SlurmExecutor } from '../executor/slurm/slurm';
import type { SlurmSetting } from '../../core/config/slurm';
import { SLURM_FLAG_KEYS, slurmFlags } from './slurm-flags';
import type { Executor } from '../executor/types';
import { Loop } from '../run/setup';
import { createProposer, defaultProposer } from '../proposers';
import { resolvePython } from '../workspace/python';
import { withSecrets } from '../executor/secrets';
import { flagOf, type RunFlags } from './run-flags';
import { TerminalReporter } from './terminal';
import { fmtMetric } from '../../core/views/bundle';
import { loadProgram } from '../workspace/workspace';
import { UserError } from '../user-error';
import { ttyAsker } from './review-command';
import { stopRequestFile } from './stop-command';

const KERNEL_FLAG_KEYS = ['kernel', 'server_url', 'token', 'kernel_id', 'ship'] as const;

/**
 * The executor --executor names (absent: slurm where program.md has a slurm: key, else
 * subprocess); the kernel one talks to --server-url (default $JUPYTER_SERVER_URL), the slurm one
 * submits with `slurm`, program.md's slurm: with the flags over it.
 */
export function createExecutor(o: RunFlags, slurm?: SlurmSetting): Executor {
  const name = o.executor ?? (slurm ? 'slurm' : 'subprocess');
  const refuse = (keys: readonly (keyof RunFlags)[], applies: string) => {
    for (const key of keys) {
      if (o[key] !== undefined) throw new UserError(`${flagOf(key)} applies to ${applies}`);
    }
  };
  if (name !== 'kernel') refuse(KERNEL_FLAG_KEYS, '--executor kernel');
  if (name !== 'slurm') refuse(SLURM_FLAG_KEYS, '--executor slurm');
  if (name === 'subprocess') return new SubprocessExecutor();
  if (name === 'slurm') return new SlurmExecutor({ setting: slurm });
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

/** Runs experiments until stopped; the exit code. */
export async function runCommand(dirArg: string, o: RunFlags): Promise<number> {
  const dir = path.resolve(dirArg);
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
  const slurm = slurmFlags(o);
  if (slurm) overrides.slurm = slurm;
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
  const executors: Executor[] = [createExecutor(o, config.slurm)];
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
      const e = createExecutor(o, config.slurm);
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
