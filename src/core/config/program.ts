/**
 * `program.md`: the researcher's instructions, with optional YAML front matter
 * that overrides the method's defaults. A file with no front matter means the
 * original autoresearch conventions, unchanged.
 */
import { parse as parseYaml } from 'yaml';
import * as z from 'zod/mini';
import type { RunConfig } from '../journal/journal';
import { LimitsSetting } from './limits';
import { logPatternProblem } from './log-pattern';
import { PriceRow } from './price-row';
import { MAX_TIMER_S, RUN_OPTIONS } from './run-options';
import { DEFAULT_SEARCH } from './search';
import { frontMatterShape, ruleOf } from './run-option-checks';
import { mergeSandbox, SandboxSetting } from './sandbox';
import { mergeSlurm, SlurmSetting } from './slurm';
import { TransferSetting } from '../study/transfer-journal';
import { englishMessages } from '../journal/zod-english';

englishMessages();

/** The original autoresearch conventions. */
export const DEFAULT_BUDGET_S = RUN_OPTIONS.budget_s.default;
export const DEFAULTS = {
  metric: 'val_bpb',
  direction: 'lower',
  run: 'python train.py',
  editable: ['train.py'],
  readonly: ['prepare.py'],
} as const;

const relPath = z.string().check(
  z.minLength(1),
  z.refine(p => !p.startsWith('/') && !p.split(/[\\/]/).includes('..'), {
    message: 'must be a path inside the workspace (relative, no "..")',
  }),
);

/**
 * The engine's own files: git's repository, the journal and logs, and results.tsv. An editable
 * file there would let a proposal (often a model's) rewrite history, hooks or the record of the run.
 */
export const ENGINE_OWNED = ['.git', '.autoresearch', 'results.tsv'];

/** The engine's own file or folder a workspace-relative path lies in (".git"), or null. */
export function engineOwnedRoot(p: string): string | null {
  const first = p.split(/[\\/]/).filter(part => part !== '' && part !== '.')[0];
  return first !== undefined && ENGINE_OWNED.includes(first) ? first : null;
}

/** Why a workspace-relative path may not be editable, or null: it names one of the engine's own files. */
export function engineOwnedProblem(p: string): string | null {
  const root = engineOwnedRoot(p);
  return root === null
    ? null
    : `may not name ${root}${root === 'results.tsv' ? '' : '/ or anything in it'}: that is the engine's own (git's repository, the journal, results.tsv)`;
}

const editablePath = relPath.check(
  z.superRefine((p, ctx) => {
    const problem = engineOwnedProblem(p);
    if (problem) ctx.addIssue({ code: 'custom', message: problem });
  }),
);

/**
 * Front matter keys: what the method is (metric, files, command) here, the run options a flag
 * may also set from src/core/config/run-options.ts; strict so a misspelt key is an error, not
 * silently ignored.
 */
export const FrontMatter = z.strictObject({
  metric: z.optional(z.string().check(z.regex(/^\w+$/, 'must be a summary key like val_bpb'))),
  direction: z.optional(z.enum(['lower', 'higher'])),
  ...frontMatterShape(),
  // Also a mapping ({mode, network}), which the --sandbox flag's choices cannot express.
  sandbox: z.optional(SandboxSetting),
  run: z.optional(z.string().check(z.minLength(1))),
  editable: z.optional(z.array(editablePath).check(z.minLength(1))),
  readonly: z.optional(z.array(relPath)),
  prices: z.optional(z.record(z.string(), PriceRow)),
  // A training run's process and file size limits (src/core/config/limits.ts has the defaults).
  limits: z.optional(LimitsSetting),
  // Where Slurm runs each training run (--executor slurm): partition, account, GPUs, … (src/core/config/slurm.ts).
  slurm: z.optional(SlurmSetting),
  // The transfer study's defaults (autoresearch transfer): the larger scale's environment and budget.
  transfer: z.optional(TransferSetting),
});
export type FrontMatter = z.infer<typeof FrontMatter>;

export interface ParsedProgram {
  frontMatter: FrontMatter;
  /** The markdown after the front matter. */
  body: string;
}

const FENCE = /^---[ \t]*\r?\n([\s\S]*?)\r?\n---[ \t]*(?:\r?\n|$)/;

/** Splits and validates program.md; errors name the bad key and say how to fix it. */
export function parseProgram(text: string, fileName = 'program.md'): ParsedProgram {
  const match = FENCE.exec(text);
  if (!match) {
    return { frontMatter: {}, body: text };
  }
  let raw: unknown;
  try {
    raw = parseYaml(match[1]) ?? {};
  } catch (e) {
    throw new Error(
      `${fileName}: the front matter is not valid YAML (${firstLine(e)}); fix it or remove the --- block`,
      {
        cause: e,
      },
    );
  }
  if (typeof raw !== 'object' || Array.isArray(raw)) {
    throw new Error(`${fileName}: the front matter must be a YAML mapping of key: value lines`);
  }
  const parsed = FrontMatter.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const where = issue.path.length ? `"${issue.path.join('.')}"` : 'front matter';
    const known = Object.keys(FrontMatter.shape).join(', ');
    const unknown = issue.code === 'unrecognized_keys' ? issue.keys.map(k => `"${k}"`).join(', ') : '';
    const hint = !unknown
      ? `${where} ${issue.message}`
      : issue.path.length
        ? `${where} has unknown key ${unknown}`
        : `unknown key ${unknown}; known keys: ${known}`;
    throw new Error(`${fileName}: bad front matter: ${hint}`);
  }
  return { frontMatter: parsed.data, body: text.slice(match[0].length) };
}

/** Merges front matter over defaults; overrides (from the CLI) win over both. */
export function resolveConfig(fm: FrontMatter, overrides: Partial<RunConfig> = {}): RunConfig {
  const budget = overrides.budget_s ?? fm.budget_s ?? DEFAULT_BUDGET_S;
  // Flags and front matter are checked against the maximum where they are parsed; overrides from the Loop API are checked here.
  for (const [key, value] of [
    ['budget_s', budget],
    ['timeout_s', overrides.timeout_s],
  ] as const) {
    if (value !== undefined && !(value > 0 && value <= MAX_TIMER_S)) {
      throw new Error(`${key} (${value}) must be ${ruleOf(RUN_OPTIONS[key])}`);
    }
  }
  const config: RunConfig = {
    metric: overrides.metric ?? fm.metric ?? DEFAULTS.metric,
    direction: overrides.direction ?? fm.direction ?? DEFAULTS.direction,
    budget_s: budget,
    timeout_s: overrides.timeout_s ?? fm.timeout_s ?? defaultTimeout(budget),
    run: overrides.run ?? fm.run ?? DEFAULTS.run,
    editable: overrides.editable ?? fm.editable ?? [...DEFAULTS.editable],
    readonly: overrides.readonly ?? fm.readonly ?? [...DEFAULTS.readonly],
    noise_runs: overrides.noise_runs ?? fm.noise_runs ?? RUN_OPTIONS.noise_runs.default,
    keep_sigma: overrides.keep_sigma ?? fm.keep_sigma ?? RUN_OPTIONS.keep_sigma.default,
    confirm_runs: overrides.confirm_runs ?? fm.confirm_runs ?? RUN_OPTIONS.confirm_runs.default,
    search: overrides.search ?? fm.search ?? DEFAULT_SEARCH,
    plateau: overrides.plateau ?? fm.plateau ?? RUN_OPTIONS.plateau.default,
  };
  config.sandbox = mergeSandbox(overrides.sandbox, fm.sandbox);
  const limits = overrides.limits ?? fm.limits;
  if (limits) config.limits = limits;
  if (overrides.step ?? fm.step) config.step = true;
  const slurm = mergeSlurm(overrides.slurm, fm.slurm);
  if (slurm) config.slurm = slurm;
  const model = overrides.model ?? fm.model;
  const effort = overrides.effort ?? fm.effort;
  const maxDollars = overrides.max_dollars ?? fm.max_dollars;
  const prices = fm.prices || overrides.prices ? { ...fm.prices, ...overrides.prices } : undefined;
  Object.assign(
    config,
    model && { model },
    effort && { effort },
    maxDollars && { max_dollars: maxDollars },
    prices && { prices },
  );
  const logPattern = overrides.log_pattern ?? fm.log_pattern;
  if (logPattern !== undefined) {
    const problem = logPatternProblem(logPattern);
    if (problem) throw new Error(problem);
    config.log_pattern = logPattern;
  }
  if (config.timeout_s < config.budget_s) {
    throw new Error(
      `timeout_s (${config.timeout_s}) is shorter than budget_s (${config.budget_s}); make it at least the budget (default: twice it)`,
    );
  }
  for (const p of overrides.editable ?? []) {
    const problem = engineOwnedProblem(p);
    if (problem) throw new Error(`editable "${p}" ${problem}`);
  }
  const both = config.editable.filter(p => config.readonly.includes(p));
  if (both.length) {
    throw new Error(`${both.join(', ')} is listed as both editable and readonly; keep it in one list`);
  }
  return config;
}

/**
 * Twice the budget, as in the original (300 s → 600 s); never less than the
 * budget plus a minute, since start-up and evaluation don't shrink with the budget;
 * never more than a timer can wait (the budget itself is at most that).
 */
export function defaultTimeout(budgetS: number): number {
  return Math.min(Math.max(2 * budgetS, budgetS + 60), Math.max(budgetS, MAX_TIMER_S));
}

function firstLine(e: unknown): string {
  return String(e instanceof Error ? e.message : e).split('\n')[0];
}
