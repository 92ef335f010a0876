/**
 * Every option of `autoresearch run`, declared once. Derived from it: the CLI's flags
 * (src/engine/cli/run-flags.ts), program.md's front matter keys (./program), the Settings →
 * Autoresearch schema (schema/plugin.json, a committed snapshot test/run-options.test.ts keeps
 * equal to settingsSchema()), the server's checks of `POST /autoresearch/runs` and the flags it
 * hands the engine (validate.py and supervisor.py read engine/run-options.json, which
 * scripts/build-engine.mjs writes from serverOptions()), and the panel's defaults and API types.
 * Data and zod only: the browser imports this file too.
 */
import { TAG_RULE_WORDS } from '../journal/layout';
import { DEFAULT_CONFIRM_RUNS, DEFAULT_KEEP_SIGMA, DEFAULT_NOISE_RUNS } from '../rule/noise';
import {
  INFO,
  KEYLESS_PROPOSER,
  orList,
  PROPOSER_NAMES,
  PROPOSER_PREFERENCE,
  proposersWith,
  DECLARED,
  type ProposerInfo,
  type ProposerName,
} from './proposers';
import { SANDBOX_MODES } from './sandbox';
import { DEFAULT_PLATEAU, DEFAULT_SEARCH, SEARCH_MODES } from './search';
import { englishMessages } from '../journal/zod-english';

englishMessages();

/**
 * The values an option takes. Each kind has one check on every side, worded alike (RULES):
 * zod here, a commander parser in run-flags.ts, JSON Schema in the settings, a checker in validate.py.
 */
export type OptionKind = 'positive' | 'nonnegative' | 'positive-int' | 'count' | 'text' | 'tag' | 'choice' | 'switch';

/** What a bad value must be, as the CLI, the front matter and the server's 400s say it. */
export const RULES: Record<OptionKind, string> = {
  positive: 'a number above 0',
  nonnegative: 'a number of 0 or more',
  'positive-int': 'a whole number above 0',
  count: 'a whole number of 0 or more',
  text: 'a non-empty one-line string',
  // The tag rule is the layout's (src/core/journal/layout.ts), which the server reads too.
  tag: `a name of ${TAG_RULE_WORDS}`,
  choice: 'one of the choices',
  switch: 'true or false',
};

/**
 * How hard the claude proposer's model thinks, as the Messages API's output_config.effort names it.
 * Models without effort get a thinking budget of the same rank (src/engine/proposers/claude/thinking.ts).
 */
export const EFFORT_LEVELS = ['low', 'medium', 'high', 'xhigh', 'max'] as const;
export type Effort = (typeof EFFORT_LEVELS)[number];

const quoted = (names: readonly string[]) => names.map(n => `'${n}'`);
const defaultWhen = (n: ProposerName) => (INFO[n].needsKey ? `${n} (the default when ${INFO[n].keyEnv[0]} is set)` : n);

/**
 * The longest budget or timeout, in seconds: a run's deadline is a Node timer, and Node fires a
 * timer set past 2^31 - 1 ms (about 24.8 days) after 1 ms instead, killing every run at once.
 */
export const MAX_TIMER_S = Math.floor((2 ** 31 - 1) / 1000);

export interface RunOptionSpec {
  /** commander syntax: '--budget <seconds>'; a switch is '--resume', or '--no-pipeline' for one on by default. */
  flag: string;
  kind: OptionKind;
  /** kind 'choice': the values allowed. */
  choices?: readonly string[];
  /** The CLI's --help line. */
  help: string;
  /** The largest value allowed (numbers only). */
  max?: number;
  /** The value when nothing sets it; the engine applies it (resolveConfig for front matter keys). */
  default?: number | boolean;
  /** Also a program.md front matter key and a RunConfig field, of the same name; a flag wins over it. */
  frontMatter?: true;
  /** 'body': POST /autoresearch/runs takes it from the client; 'server': the server adds it itself. */
  server?: 'body' | 'server';
  /** A Settings → Autoresearch entry: the panel's value for new runs; null (or '') leaves it to program.md and the engine. */
  setting?: { title: string; description: string; default: number | string | null };
}

/** In the order of `autoresearch run --help` and of the settings editor. Keys are snake_case, as in JSON. */
export const RUN_OPTIONS = {
  tag: {
    flag: '--tag <tag>',
    kind: 'tag',
    server: 'body',
    help: 'run name; the branch is autoresearch/<tag> (default: today, e.g. nov30)',
  },
  budget_s: {
    flag: '--budget <seconds>',
    kind: 'positive',
    default: 300,
    max: MAX_TIMER_S,
    frontMatter: true,
    server: 'body',
    help: "training budget of one experiment, in seconds (default: program.md's budget_s, else 300)",
    setting: {
      title: 'Training budget (seconds)',
      default: 300,
      description: 'Wall-clock training budget of one experiment.',
    },
  },
  timeout_s: {
    flag: '--timeout <seconds>',
    kind: 'positive',
    max: MAX_TIMER_S,
    frontMatter: true,
    server: 'body',
    help: 'a run past this is killed and counts as a crash (default: 2 × budget, at least budget + 60)',
    setting: {
      title: 'Timeout (seconds)',
      default: null,
      description:
        "A run past this is killed (its whole process group) and counts as a crash; null means program.md's timeout_s, else the engine's default (twice the budget, at least the budget plus 60 s).",
    },
  },
  proposer: {
    flag: '--proposer <name>',
    kind: 'choice',
    choices: PROPOSER_NAMES,
    server: 'body',
    help: `who proposes experiments: ${orList(PROPOSER_PREFERENCE.map(defaultWhen))}`,
    setting: {
      title: 'Proposer',
      default: KEYLESS_PROPOSER,
      description: `Who proposes the edits to train.py: ${PROPOSER_NAMES.map(n => `'${n}' ${INFO[n].description}`).join('; ')}.`,
    },
  },
  model: {
    flag: '--model <id>',
    kind: 'text',
    frontMatter: true,
    server: 'body',
    help: `the ${orList(proposersWith('model'))} proposer's model`,
    setting: {
      title: 'Model',
      default: '',
      description: `Model name for the ${orList(quoted(proposersWith('model')))} proposer; empty means program.md's model, else the engine's default.`,
    },
  },
  effort: {
    flag: '--effort <level>',
    kind: 'choice',
    choices: EFFORT_LEVELS,
    frontMatter: true,
    server: 'body',
    help: "how hard the claude proposer's model thinks: low, medium, high, xhigh or max (default: program.md's effort, else high; a model without xhigh or max gets the nearest it has)",
    setting: {
      title: 'Effort (claude)',
      default: null,
      description:
        "How hard the claude proposer's model thinks: 'low', 'medium', 'high', 'xhigh' or 'max' (more thought costs more output tokens per proposal); null means program.md's effort, else 'high'. A model without xhigh or max gets the nearest level it has.",
    },
  },
  max_dollars: {
    flag: '--max-dollars <x>',
    kind: 'positive',
    frontMatter: true,
    server: 'body',
    help: "stop before a proposal would take the run's API spending past x dollars",
    setting: {
      title: 'Spending cap (dollars)',
      default: null,
      description:
        "Stop a run once the proposer's model has cost this much; null means program.md's max_dollars, else no cap.",
    },
  },
  pipeline: {
    flag: '--no-pipeline',
    kind: 'switch',
    default: true,
    server: 'body',
    help: `propose only after each experiment ends, instead of drafting while it trains (${orList(proposersWith('pipeline'))})`,
  },
  step: {
    flag: '--step',
    kind: 'switch',
    frontMatter: true,
    server: 'body',
    help: 'step mode: each proposal waits for a reviewer (autoresearch approve/reject, or the prompt on a terminal) before it trains; one worker',
  },
  max_experiments: {
    flag: '--max-experiments <n>',
    kind: 'count',
    server: 'body',
    help: 'stop once the run has n experiments in all, counted over every --resume (the baseline and experiments cut short by a stop or kill not counted)',
  },
  more_experiments: {
    flag: '--more-experiments <n>',
    kind: 'count',
    server: 'body',
    help: 'with --resume: stop after n more experiments than the run has (the baseline not counted)',
  },
  hours: { flag: '--hours <h>', kind: 'positive', server: 'body', help: 'stop starting experiments after h hours' },
  workers: {
    flag: '--workers <n>',
    kind: 'positive-int',
    default: 1,
    server: 'body',
    help: 'experiments at once, each in its own git worktree and executor (a GPU each: CUDA_VISIBLE_DEVICES) (default: 1)',
    setting: {
      title: 'Workers',
      default: 1,
      description:
        'Experiments run at once, each in its own git worktree and its own kernel (with the subprocess executor, its own CUDA_VISIBLE_DEVICES index); a result is kept only if it beats the best when it finishes.',
    },
  },
  noise_runs: {
    flag: '--noise-runs <k>',
    kind: 'positive-int',
    default: DEFAULT_NOISE_RUNS,
    frontMatter: true,
    server: 'body',
    help: `runs of the baseline that measure the noise before the first proposal (default ${DEFAULT_NOISE_RUNS}; 1 = the strict rule: keep any improvement)`,
    setting: {
      title: 'Noise runs',
      default: null,
      description: `Runs of the baseline that measure the run-to-run noise before the first proposal; 1 is the original's strict rule (keep any improvement). null means program.md's noise_runs, else ${DEFAULT_NOISE_RUNS}.`,
    },
  },
  keep_sigma: {
    flag: '--keep-sigma <z>',
    kind: 'nonnegative',
    default: DEFAULT_KEEP_SIGMA,
    frontMatter: true,
    server: 'body',
    help: `a keep must beat the best by this many standard errors of the difference (default ${DEFAULT_KEEP_SIGMA})`,
    setting: {
      title: 'Keep threshold (standard errors)',
      default: null,
      description: `A result is kept only if it beats the best by this many standard errors of the difference. null means program.md's keep_sigma, else ${DEFAULT_KEEP_SIGMA}.`,
    },
  },
  confirm_runs: {
    flag: '--confirm-runs <k>',
    kind: 'count',
    default: DEFAULT_CONFIRM_RUNS,
    frontMatter: true,
    server: 'body',
    help: `extra runs a promising candidate gets before the decision (default ${DEFAULT_CONFIRM_RUNS})`,
    setting: {
      title: 'Confirmation runs',
      default: null,
      description: `Extra runs a promising result gets before it is kept or discarded. null means program.md's confirm_runs, else ${DEFAULT_CONFIRM_RUNS}.`,
    },
  },
  search: {
    flag: '--search <mode>',
    kind: 'choice',
    choices: SEARCH_MODES,
    frontMatter: true,
    server: 'body',
    help: `how the search goes past greedy: ${DEFAULT_SEARCH} (the default: the engine prepares re-tests, combinations and ablations and branches from a near-miss on a plateau) or greedy (every proposal from the best, nothing prepared)`,
  },
  plateau: {
    flag: '--plateau <n>',
    kind: 'count',
    default: DEFAULT_PLATEAU,
    frontMatter: true,
    server: 'body',
    help: `after n experiments without a keep, branch from the best near-miss for max(2, n/2) experiments (search: tree, one worker); 0: never (default ${DEFAULT_PLATEAU})`,
  },
  log_pattern: {
    flag: '--log-pattern <template>',
    kind: 'text',
    frontMatter: true,
    help: 'how train.py prints a training line, for the loss curve and step time the claude proposer shows: a template such as "step {step} | loss {loss} | {ms}ms" with {step}, {loss}, {ms}, {s}, {elapsed} and {*} (default: the common formats)',
  },
  sandbox: {
    flag: '--sandbox <mode>',
    kind: 'choice',
    choices: SANDBOX_MODES,
    frontMatter: true,
    server: 'body',
    help: "run each training run in a bubblewrap sandbox: auto (where it works, the default), on (or refuse) or off; program.md's sandbox: {network: true} keeps the network",
    setting: {
      title: 'Sandbox',
      default: null,
      description:
        "Training runs in a bubblewrap sandbox (workspace writable except .git, .autoresearch and the read-only files; no network; secrets hidden): 'auto' where it works, 'on' to require it, 'off'. null means program.md's sandbox, else auto.",
    },
  },
  resume: {
    flag: '--resume',
    kind: 'switch',
    server: 'body',
    help: 'continue the run of --tag (default: the latest run)',
  },
  accept_settings: {
    flag: '--accept-settings',
    kind: 'switch',
    server: 'body',
    help: "accept security settings (sandbox, network, readonly, editable) that differ from the run's last start: without it --resume refuses them",
  },
  // The server says the run's options came from the panel, for the journal's record of where each setting came from.
  panel: {
    flag: '--panel',
    kind: 'switch',
    server: 'server',
    help: 'the flags come from the panel (the server passes this; the journal records the panel as their source)',
  },
  seed: {
    flag: '--seed <n>',
    kind: 'count',
    default: 0,
    help: `seed for the ${orList(proposersWith('seed'))} proposer`,
  },
  python: {
    flag: '--python <path>',
    kind: 'text',
    server: 'body',
    help: 'Python interpreter for the syntax check and the run (default: python3 on PATH)',
  },
  executor: {
    flag: '--executor <name>',
    kind: 'choice',
    choices: ['subprocess', 'kernel', 'slurm'],
    // The panel's picker sends slurm (its "Slurm cluster" entry); kernel comes with kernel or
    // kernel_id, which the server resolves through itself (supervise/starter.py checks the pair).
    server: 'body',
    help: 'where training runs: subprocess (a child of the engine, the default), kernel (through a Jupyter kernel) or slurm (each run a job step, started with srun)',
  },
  kernel: {
    flag: '--kernel <name>',
    kind: 'text',
    server: 'body',
    help: 'kernelspec of the kernel executor (default: python3)',
    setting: {
      title: 'Kernel',
      default: '',
      description: "Name of the kernelspec whose environment runs train.py; empty means the server's default kernel.",
    },
  },
  kernel_id: {
    flag: '--kernel-id <id>',
    kind: 'text',
    // The panel attaches to a notebook's kernel ("this very kernel"); the server checks the id first.
    server: 'body',
    help: 'run in this existing kernel (never shut down by the engine); if it dies, a fresh one of its kernelspec goes on',
  },
  ship: {
    flag: '--ship <mode>',
    kind: 'choice',
    choices: ['auto', 'always', 'never'],
    help: "copy the tracked files to the kernel's side before each run: auto (when the kernel cannot see the workspace, the default), always or never",
  },
  // The server passes its own address when a run trains in its kernels; a client never names it.
  server_url: {
    flag: '--server-url <url>',
    kind: 'text',
    server: 'server',
    help: 'Jupyter server of the kernel executor (default: $JUPYTER_SERVER_URL)',
  },
  // Never from the server: it hands the token down in the environment, since ps shows argv to all.
  token: { flag: '--token <t>', kind: 'text', help: 'token for --server-url (default: $JUPYTER_TOKEN)' },
  // --executor slurm: each over program.md's slurm: key of the same name (src/core/config/slurm.ts).
  partition: { flag: '--partition <name>', kind: 'text', help: "Slurm partition of each run's job (slurm.partition)" },
  account: { flag: '--account <name>', kind: 'text', help: "Slurm account charged for each run's job (slurm.account)" },
  qos: { flag: '--qos <name>', kind: 'text', help: "Slurm quality of service of each run's job (slurm.qos)" },
  gpus: {
    flag: '--gpus <n>',
    kind: 'text',
    help: "GPUs of each run's job, a count or type:count (srun --gpus; slurm.gpus)",
  },
  gres: {
    flag: '--gres <list>',
    kind: 'text',
    help: "generic resources of each run's job, e.g. gpu:a100:1 (srun --gres; slurm.gres)",
  },
  cpus: { flag: '--cpus <n>', kind: 'positive-int', help: "CPUs of each run's job (srun --cpus-per-task; slurm.cpus)" },
  mem: { flag: '--mem <size>', kind: 'text', help: "memory of each run's job, e.g. 64G (srun --mem; slurm.mem)" },
  slurm_args: {
    flag: '--slurm-args <options>',
    kind: 'text',
    help: "other srun options for each run's job, space-separated, e.g. '--constraint=a100 --exclusive' (slurm.args)",
  },
} as const satisfies Record<string, RunOptionSpec>;

/** Each proposer's declaration; a name in its options that is no run option does not compile. */
export const PROPOSER_INFO: Readonly<Record<ProposerName, ProposerInfo<RunOptionKey>>> = DECLARED;

type Options = typeof RUN_OPTIONS;
export type RunOptionKey = keyof Options;
type ValueOf<S> = S extends { kind: 'choice'; choices: readonly (infer C)[] }
  ? C
  : S extends { kind: 'text' | 'tag' }
    ? string
    : S extends { kind: 'switch' }
      ? boolean
      : number;
/** Each option's value type. */
export type RunOptionValues = { [K in RunOptionKey]: ValueOf<Options[K]> };
type KeysWith<P> = { [K in RunOptionKey]: Options[K] extends P ? K : never }[RunOptionKey];
export type FrontMatterKey = KeysWith<{ frontMatter: true }>;
export type BodyKey = KeysWith<{ server: 'body' }>;
export type SettingKey = KeysWith<{ setting: object }>;
/** What `POST /autoresearch/runs` takes besides the workspace's path. */
export type RunRequest = Partial<Pick<RunOptionValues, BodyKey>>;
/** The settings' run options; null where the setting leaves the option to program.md and the engine. */
export type RunSettings = {
  [K in SettingKey]: Options[K] extends { setting: { default: null } } ? RunOptionValues[K] | null : RunOptionValues[K];
};

/** The declaration as a list, each option's key beside it. */
export function runOptionList(): Array<RunOptionSpec & { key: RunOptionKey }> {
  return (Object.entries(RUN_OPTIONS) as Array<[RunOptionKey, RunOptionSpec]>).map(([key, spec]) => ({ key, ...spec }));
}

/**
 * What the server needs (engine/run-options.json): each option it takes or passes, the kind of
 * value (validate.py has one checker per kind) and its engine flag (supervisor.py).
 */
export function serverOptions(): object {
  const options = runOptionList()
    .filter(o => o.server)
    .map(o => ({
      key: o.key,
      flag: o.flag.split(' ')[0],
      kind: o.kind,
      server: o.server,
      ...(o.choices && { choices: [...o.choices] }),
      ...(o.max !== undefined && { max: o.max }),
    }));
  // The server's proposer choices and the credentials it scrubs from what it relays come from here.
  const proposers = Object.fromEntries(
    PROPOSER_NAMES.map(n => {
      const p = INFO[n];
      const about = { label: p.label, description: p.description, has_model: p.hasModel, needs_key: p.needsKey };
      return [n, { ...about, key_env: [...p.keyEnv], options: [...p.options] }];
    }),
  );
  return {
    comment: 'Generated from src/core/config/run-options.ts by scripts/build-engine.mjs; do not edit.',
    options,
    proposers,
  };
}
