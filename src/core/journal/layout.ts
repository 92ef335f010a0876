/**
 * The engine's files in a workspace, `.autoresearch/`, and the rule for run tags: one source for
 * the engine (src/engine/workspace/workspace.ts builds paths from these names) and for the server, which
 * cannot import TypeScript: the build writes `layout()` to engine/layout.json beside the bundle,
 * and workspaces.py reads its names and tag rule from there. Browser-safe (no node: imports).
 */

/** The engine's git-ignored folder in a workspace. */
export const STATE_DIR = '.autoresearch';

/** Directly in STATE_DIR. */
export const ENGINE_FILE = 'engine.json';
/** What ENGINE_FILE says holds the workspace: a run's loop, or a transfer study of a run. */
export const ENGINE_KINDS = ['run', 'transfer'] as const;
export type EngineKind = (typeof ENGINE_KINDS)[number];
export const STOP_FILE = 'stop-requested';

/** In STATE_DIR/<tag>/, one run's own files. */
export const JOURNAL_FILE = 'journal.jsonl';
export const STATE_FILE = 'state.json';
export const LOGS_DIR = 'logs';
export const WORKTREES_DIR = 'worktrees';
export const RECOVER_PATCH = 'recover.patch';
/** Step mode (src/core/step-mode/review.ts): the proposal awaiting a reviewer, and the reviewer's answer to it. */
export const REVIEW_PENDING_FILE = 'review-pending.json';
export const REVIEW_DECISION_FILE = 'review-decision.json';
/** Step mode switched while a run goes on (`autoresearch step`, the panel's toggle): the engine follows it. */
export const REVIEW_MODE_FILE = 'review-mode.json';

/** `engine-<tag>.log` in STATE_DIR: the engine's own output when the server started it. */
export function engineLogName(tag: string): string {
  return `engine-${tag}.log`;
}

/** `transfer-<tag>.log` in STATE_DIR: the transfer study's own output when the server started it. */
export function transferLogName(tag: string): string {
  return `transfer-${tag}.log`;
}

/** Digits of the experiment number in a log's name. */
export const LOG_DIGITS = 4;

/** A run log's name: `{n}` is the experiment's number in LOG_DIGITS digits, `{i}` the run's (from 2). */
export const RUN_LOG_FORM = '{n}.log';
export const REPEAT_LOG_FORM = '{n}-{i}.log';

/** `NNNN.log`: experiment n's training output; its i-th run's `NNNN-i.log` when it ran again. */
export function runLogName(n: number, i = 1): string {
  const number = String(n).padStart(LOG_DIGITS, '0');
  return i > 1 ? REPEAT_LOG_FORM.replace('{n}', number).replace('{i}', String(i)) : RUN_LOG_FORM.replace('{n}', number);
}

/**
 * In STATE_DIR/<tag>/TRANSFER_DIR/, the transfer study of that run (src/core/study/transfer-journal.ts):
 * its own JOURNAL_FILE and LOGS_DIR, TRANSFER_SUMMARY (src/core/study/transfer.ts, rewritten after every
 * run) and TRANSFER_WORKTREE, the git worktree each replayed commit is checked out in.
 */
export const TRANSFER_DIR = 'transfer';
export const TRANSFER_SUMMARY = 'summary.json';
export const TRANSFER_WORKTREE = 'worktree';

/** A study run's log: `transfer-<commit7>-<k>.log`, or `ablate-<reverted7>-<k>.log`. */
export function studyLogName(kind: 'transfer' | 'ablate', commit: string, k: number): string {
  return `${kind}-${commit.slice(0, 7)}-${k}.log`;
}

/** A run's git branch is `autoresearch/<tag>`, as in the original autoresearch. */
export const RUN_BRANCH_PREFIX = 'autoresearch/';

/** The branch run `tag` advances on a keep. */
export function runBranch(tag: string): string {
  return `${RUN_BRANCH_PREFIX}${tag}`;
}

/** The longest tag: it names a folder and a branch. */
export const TAG_MAX = 100;

/**
 * A tag: letters, digits, '.', '_' and '-'; it names the folder STATE_DIR/<tag> and the branch
 * autoresearch/<tag>, so it may not start with '.' (`.`, `..`, hidden folders), hold '..', or
 * end in '.' or '.lock' (git refuses such branch names). The syntax means the same to
 * JavaScript's RegExp and Python's re (matched whole: `^…$` here, re.fullmatch there).
 */
export const TAG_PATTERN = '(?!.*\\.\\.)(?!.*\\.$)(?!.*\\.lock$)[A-Za-z0-9_-][A-Za-z0-9._-]*';

const TAG_RE = new RegExp(`^(?:${TAG_PATTERN})$`);

/** What a tag may be, in words, for error messages on both sides. */
export const TAG_RULE_WORDS = `letters, digits, '.', '_' and '-' (up to ${TAG_MAX}; not starting with '.', no '..', not ending in '.' or '.lock')`;

/** Whether a run tag is one the engine accepts. */
export function validTag(tag: string): boolean {
  return tag.length > 0 && tag.length <= TAG_MAX && TAG_RE.test(tag);
}

/** A default tag's month, January first: English, so a tag reads the same on every machine. */
export const MONTH_TAGS = ['jan', 'feb', 'mar', 'apr', 'may', 'jun', 'jul', 'aug', 'sep', 'oct', 'nov', 'dec'];

/** Today's tag, like `nov30` (local time: the day the researcher started it). */
export function defaultTag(now = new Date()): string {
  return `${MONTH_TAGS[now.getMonth()]}${now.getDate()}`;
}

/** How a run tag is formed when `base` is taken: `{base}-{n}`, n from 2. */
export const TAKEN_TAG_FORM = '{base}-{n}';
/** The most runs one day may take before a tag must be given. */
export const TAGS_PER_DAY = 999;

/**
 * The tag a new run gets when none is given, the one rule for the CLI, the server and the panel:
 * today's (`dec1`), else the first of `dec1-2`, `dec1-3`… that no run holds (a journal or a
 * branch). A tag given by name is never changed: a taken one is refused, with --resume offered.
 */
export function freeTag(taken: (tag: string) => boolean, base = defaultTag()): string {
  for (let n = 1; n <= TAGS_PER_DAY; n++) {
    const tag = n === 1 ? base : TAKEN_TAG_FORM.replace('{base}', base).replace('{n}', String(n));
    if (!taken(tag)) {
      return tag;
    }
  }
  throw new Error(`${TAGS_PER_DAY} runs already have tags from ${base}: name this one with --tag`);
}

/** The layout as engine/layout.json holds it for the server (snake_case, like run-options.json). */
export function layout() {
  return {
    state_dir: STATE_DIR,
    engine_file: ENGINE_FILE,
    engine_kinds: ENGINE_KINDS,
    stop_file: STOP_FILE,
    journal_file: JOURNAL_FILE,
    state_file: STATE_FILE,
    logs_dir: LOGS_DIR,
    log_digits: LOG_DIGITS,
    /** runLogName's forms: `{n}` the number in log_digits digits, `{i}` the run's. */
    run_log: RUN_LOG_FORM,
    repeat_log: REPEAT_LOG_FORM,
    worktrees_dir: WORKTREES_DIR,
    recover_patch: RECOVER_PATCH,
    review_pending_file: REVIEW_PENDING_FILE,
    review_decision_file: REVIEW_DECISION_FILE,
    review_mode_file: REVIEW_MODE_FILE,
    transfer_dir: TRANSFER_DIR,
    transfer_summary: TRANSFER_SUMMARY,
    /** `{tag}` is replaced by the tag. */
    engine_log: engineLogName('{tag}'),
    transfer_log: transferLogName('{tag}'),
    run_branch_prefix: RUN_BRANCH_PREFIX,
    tag_pattern: TAG_PATTERN,
    tag_max: TAG_MAX,
    tag_rule: TAG_RULE_WORDS,
    /** defaultTag's months, January first. */
    month_tags: MONTH_TAGS,
    /** freeTag's form and bound, which the server's free_tag follows. */
    taken_tag_form: TAKEN_TAG_FORM,
    tags_per_day: TAGS_PER_DAY,
  };
}
