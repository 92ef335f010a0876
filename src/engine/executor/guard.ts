/**
 * The run guard's side in the engine (run-guard.py does the work, on whichever host trains):
 * its configuration for one run, the credentials it must keep from the run (src/core/config/secrets.ts
 * names them), and its report.
 */
import { createHash } from 'node:crypto';
import * as z from 'zod/mini';
import GUARD_SOURCE from './run-guard.py?raw';
import type { RunConfig } from '../../core/journal/journal';
import { heldSecretValues } from './secrets';
import { isSecretName, SECRET_NAMES } from '../../core/config/secrets';
import { STATE_DIR } from '../../core/journal/layout';
import { limitsOf } from '../../core/config/limits';
import { sandboxOf } from '../../core/config/sandbox';
import { englishMessages } from '../../core/journal/zod-english';
import { PROGRAM_FILE } from '../workspace/workspace';
import type { RunIsolation, RunOutcome, RunRequest } from './types';
import { workspaceBytes } from './workspace-size';

englishMessages();

export { GUARD_SOURCE };

/**
 * Inside the workspace, what a run may never write: git's history, the engine's own state, and
 * what governs later runs (program.md's front matter: the sandbox, the read-only list; git's
 * attributes and submodules). Read-only where they exist when the run starts.
 */
export const PROTECTED = ['.git', '.autoresearch', PROGRAM_FILE, '.gitattributes', '.gitmodules'];

/**
 * The workspace's own PROTECTED folders when a run's folder is a worktree inside its state (a
 * worker's, the transfer study's): the run's folder then is not the workspace, so the relative
 * list alone would leave the workspace's journal and history writable wherever the sandbox lets
 * it write (under /tmp, say). The run guard makes these read-only and the run's folder writable again.
 */
export function workspaceProtections(cwd: string): string[] {
  const workspace = runWorkspace(cwd);
  if (workspace === cwd) return [];
  return PROTECTED.map(p => `${workspace.replace(/\/$/, '')}/${p}`);
}

/** The workspace a run's folder belongs to: itself, or the one whose state holds it (a worker's or a study's worktree). */
export function runWorkspace(cwd: string): string {
  const at = cwd.indexOf(`/${STATE_DIR}/`);
  return at < 0 ? cwd : cwd.slice(0, at) || '/';
}

/** A run whose guard died before it reported: the crash's reason. */
export const GUARD_KILLED =
  'the run guard was killed during the run (the run can reach it without the sandbox); everything the run started was killed';

/** Seconds the caller waits past the guard's grace before it SIGKILLs the guard itself. */
export const GUARD_MARGIN_S = 3;

/** What the guard reports when it ends. */
export const GuardReport = z.object({
  sandbox: z.enum(['on', 'off']),
  why: z.nullable(z.string()),
  left: z.int().check(z.nonnegative()),
  unusable: z.optional(z.boolean()),
  /** What the sandbox lacks, where `auto` ran it without a part the kernel refused (the user namespace). */
  missing: z.optional(z.array(z.string())),
  /** The limits the run got (less than asked where the guard's own hard limit is lower). */
  limits: z.optional(z.object({ processes: z.optional(z.int()), file_size_bytes: z.optional(z.number()) })),
  /** How the command ended: its exit code, or the signal that killed it. */
  exit_code: z.optional(z.nullable(z.int())),
  signal: z.optional(z.nullable(z.string())),
  /** A limit the run reached (its process cap), in words, or null. */
  limit: z.optional(z.nullable(z.string())),
});
export type GuardReport = z.infer<typeof GuardReport>;

/** The isolation a run gets when nothing says otherwise: the sandbox where it works, no network. */
export const DEFAULT_ISOLATION: RunIsolation = { sandbox: 'auto', network: false, readonly: [] };

/** sha256 of every secret value the engine holds: the guard drops variables holding one, whatever their name. */
export function secretHashes(extra: Array<string | undefined> = []): string[] {
  const values = Object.entries(process.env)
    .filter(([name]) => isSecretName(name, SECRET_NAMES))
    .map(([, value]) => value);
  return [...new Set([...values, ...heldSecretValues(), ...extra])]
    .filter((v): v is string => typeof v === 'string' && v.length >= 8)
    .map(v => createHash('sha256').update(v, 'utf8').digest('hex'));
}

/**
 * Remembers, per executor, that `sandbox: auto` found bubblewrap unusable, so later runs go
 * unsandboxed at once (saying why) instead of failing to set it up every time.
 */
export class SandboxMemo {
  private offWhy: string | null = null;

  /** The guard's sandbox settings for the next run. */
  settings(iso: RunIsolation): { sandbox: RunIsolation['sandbox']; off_why?: string } {
    if (iso.sandbox === 'auto' && this.offWhy) return { sandbox: 'off', off_why: this.offWhy };
    return { sandbox: iso.sandbox };
  }

  /** Takes a run's report. */
  learn(iso: RunIsolation, report: GuardReport | null): void {
    if (iso.sandbox === 'auto' && report?.sandbox === 'off' && report.why && !this.offWhy) this.offWhy = report.why;
  }
}

/** The guard's configuration for one run (run-guard.py's docstring says what each field does). */
export function guardConfig(
  req: RunRequest,
  o: {
    cwd: string;
    env: Record<string, string>;
    parent: number | null;
    reportFd: number;
    graceS: number;
    memo: SandboxMemo;
    secrets: string[];
  },
): Record<string, unknown> {
  const iso = req.isolation ?? DEFAULT_ISOLATION;
  return {
    cmd: req.command,
    cwd: o.cwd,
    env: o.env,
    grace: o.graceS,
    parent: o.parent,
    report_fd: o.reportFd,
    ...o.memo.settings(iso),
    network: iso.network,
    protect: PROTECTED,
    protect_paths: workspaceProtections(o.cwd),
    readonly: iso.readonly,
    // The run's folder may be a worktree or a shipped copy: the workspace's own size sets the default.
    limits: limitsOf(iso.limits, workspaceBytes(req.cwd)),
    secret_names: SECRET_NAMES,
    secret_sha256: o.secrets,
  };
}

/**
 * One line the guard wrote to its report pipe: the command's group when it starts (with its
 * cgroup folders, and what its stdout and stderr are in /proc, for when the guard is killed), the
 * report at the end.
 */
export type GuardMessage = z.infer<typeof Spawned> | { event: 'report'; report: GuardReport };

const Spawned = z.object({
  event: z.literal('spawn'),
  pgid: z.int().check(z.positive()),
  cgroups: z.optional(z.array(z.string())),
  pipes: z.optional(z.array(z.string())),
});

/** A line of the guard's report pipe, or null for anything else. */
export function parseGuardLine(line: string): GuardMessage | null {
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch {
    return null;
  }
  const spawned = Spawned.safeParse(value);
  if (spawned.success) return spawned.data;
  const report = GuardReport.safeParse(value);
  return report.success ? { event: 'report', report: report.data } : null;
}

/** A run's isolation as its configuration sets it. */
export function isolationOf(config: RunConfig): RunIsolation {
  const sandbox = sandboxOf(config.sandbox);
  return {
    sandbox: sandbox.mode,
    network: sandbox.network,
    readonly: config.readonly,
    ...(config.limits && { limits: config.limits }),
  };
}

/** What a run's outcome takes from the guard's report: the sandbox, the leftovers, the limits, what the sandbox lacked, a limit reached. */
export function outcomeOf(
  report: GuardReport,
): Pick<RunOutcome, 'sandbox' | 'strays' | 'limits' | 'missing' | 'failure'> {
  return {
    sandbox: report.sandbox,
    strays: report.left,
    ...(report.limit && { failure: `reached its ${report.limit}` }),
    ...(report.limits && { limits: report.limits }),
    ...(report.missing?.length && { missing: report.missing }),
  };
}
