/** The `autoresearch` command: init, run, status, state, results, stop, export. */
import * as path from 'node:path';
import { Command, CommanderError } from 'commander';
import { exitAfterFlush } from './exit-after-flush';
import { exportNotebook } from './export-command';
import { initWorkspace, TEMPLATE_NEEDS } from '../workspace/init';
import { initFromRepository } from '../workspace/init-from';
import { resultsText, statusText } from './report';
import { addRunOptions, numberParser } from './run-flags';
import { RUN_OPTIONS } from '../../core/config/run-options';
import { writeStateFromJournal } from './state-command';
import { registerTransferCommand } from './transfer-command';
import { ENGINE_VERSION } from '../version';
import { UserError } from '../user-error';
import { registerReviewCommands } from './review-command';
import { createExecutor, runCommand } from './run-command';
import { stopCommand } from './stop-command';

/** init's budget is a run's budget_s (whole seconds for a template's front matter); stop's wait, any time. */
const budgetSeconds = numberParser('positive-int', RUN_OPTIONS.budget_s.max);
const waitSeconds = numberParser('positive');
function abs(dir: string): string {
  return path.resolve(dir);
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
    .option('--budget <seconds>', 'training budget per experiment, in seconds (templates)', budgetSeconds)
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
    .option('--wait <seconds>', 'how long to wait for the engine to finish stopping', waitSeconds, 60)
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
