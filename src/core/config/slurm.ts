/**
 * Where a Slurm cluster runs each training run (`--executor slurm`): front matter
 * `slurm: {partition, account, qos, gpus, gres, cpus, mem, args}`, each also a flag of `autoresearch
 * run` (a flag wins). The engine turns it into srun's options (srunOptions); the options that make
 * the run the engine's own (its name, comment, folder, time limit, input and output) are the
 * engine's, so `args` may not set them.
 */
import * as z from 'zod/mini';
import { englishMessages } from '../journal/zod-english';

englishMessages();

/** A Slurm name (partition, account, QoS): no spaces, no shell or option characters. */
const NAME = /^[A-Za-z0-9_.+:@%,-]+$/;
const NAME_RULE = 'must be a Slurm name (letters, digits and _ . + : @ % , - only)';
/** A count or a typed count, as --gpus and --gres take them: 2, a100:2, gpu:a100:1. */
const GRES = /^[A-Za-z0-9_.:,=-]+$/;
/** A memory size as --mem takes it: 64G, 500M, 16000 (megabytes). */
const MEM = /^\d+[KMGT]?$/i;

/**
 * srun options the engine sets itself: a run's name and comment (how a later engine finds it),
 * its folder, its time limit (the run's deadline), its one task, and where its input and output go
 * (the engine's pipes: the run guard's config and report travel on them).
 */
export const ENGINE_SRUN_OPTIONS = [
  '--job-name',
  '-J',
  '--comment',
  '--time',
  '-t',
  '--chdir',
  '-D',
  '--ntasks',
  '-n',
  '--nodes',
  '-N',
  '--input',
  '-i',
  '--output',
  '-o',
  '--error',
  '-e',
  '--export',
  '--pty',
  '--unbuffered',
  '-u',
  '--label',
  '-l',
  '--multi-prog',
  '--jobid',
  '--uid',
  '--gid',
  '--kill-on-bad-exit',
  '-K',
  '--quit-on-interrupt',
  '-q',
];

/** Why one of slurm.args may not be passed, or null. */
export function slurmArgProblem(arg: string): string | null {
  if (!/^-/.test(arg)) return `"${arg}" is not an srun option: each entry is one option, e.g. --constraint=a100`;
  if (/[\n\r\0]/.test(arg)) return 'an srun option must be one line';
  const name = arg.split('=')[0];
  // A short option's value may follow it at once (-tfoo): its first two characters name it.
  const short = /^-[A-Za-z]/.test(name) && !name.startsWith('--') ? name.slice(0, 2) : name;
  if (ENGINE_SRUN_OPTIONS.includes(short)) {
    return `${short} is set by the engine (the job's name, comment, folder, time limit from timeout_s, input and output); leave it out of slurm.args`;
  }
  return null;
}

const slurmName = z.string().check(z.regex(NAME, NAME_RULE));
const positiveInt = z
  .int({ error: 'must be a whole number above 0' })
  .check(z.positive('must be a whole number above 0'));

/** As written in the front matter (and as the flags set it); each key optional. */
export const SlurmSetting = z.strictObject({
  partition: z.optional(slurmName),
  account: z.optional(slurmName),
  qos: z.optional(slurmName),
  /** --gpus: a count, or type:count. */
  gpus: z.optional(
    z.union([positiveInt, z.string().check(z.regex(GRES, 'must be a count or type:count, e.g. 1 or a100:2'))]),
  ),
  /** --gres: e.g. gpu:1, gpu:a100:2. */
  gres: z.optional(z.string().check(z.regex(GRES, 'must be a generic resource list, e.g. gpu:1 or gpu:a100:2'))),
  /** --cpus-per-task. */
  cpus: z.optional(positiveInt),
  /** --mem: per node, e.g. 64G. */
  mem: z.optional(z.string().check(z.regex(MEM, 'must be a size as --mem takes it, e.g. 64G or 16000M'))),
  /** Any other srun options, one per entry: ["--constraint=a100", "--exclusive"]. */
  args: z.optional(
    z.array(
      z.string().check(
        z.superRefine((arg, ctx) => {
          const problem = slurmArgProblem(arg);
          if (problem) ctx.addIssue({ code: 'custom', message: problem });
        }),
      ),
    ),
  ),
});
export type SlurmSetting = z.infer<typeof SlurmSetting>;

/** The setting's keys over the front matter's, key by key: a flag wins over program.md. */
export function mergeSlurm(over: SlurmSetting | undefined, under: SlurmSetting | undefined): SlurmSetting | undefined {
  if (!over && !under) return undefined;
  const merged: SlurmSetting = { ...under };
  for (const [key, value] of Object.entries(over ?? {})) {
    if (value !== undefined) (merged as Record<string, unknown>)[key] = value;
  }
  return merged;
}

/** srun's options for the setting (the resources and where they are charged), in a fixed order. */
export function srunOptions(s: SlurmSetting | undefined): string[] {
  if (!s) return [];
  const out: string[] = [];
  if (s.partition) out.push(`--partition=${s.partition}`);
  if (s.account) out.push(`--account=${s.account}`);
  if (s.qos) out.push(`--qos=${s.qos}`);
  if (s.gpus !== undefined) out.push(`--gpus=${s.gpus}`);
  if (s.gres) out.push(`--gres=${s.gres}`);
  if (s.cpus !== undefined) out.push(`--cpus-per-task=${s.cpus}`);
  if (s.mem) out.push(`--mem=${s.mem}`);
  return [...out, ...(s.args ?? [])];
}

/**
 * The job's time limit in whole minutes (Slurm's unit): the run's deadline, the guard's grace and
 * a minute's margin, so Slurm ends a run the engine could not (the engine was killed) soon after
 * the engine would have.
 */
export function slurmTimeMinutes(timeoutS: number, graceS: number): number {
  return Math.ceil((timeoutS + graceS + 60) / 60);
}

/** What every job the engine submits is named after: `autoresearch-<tag>-<n>-<i>`. */
export const JOB_PREFIX = 'autoresearch-';

/** The job name of experiment n's i-th run of run `tag` (a study's runs: n is `t<k>`). */
export function jobName(tag: string, n: number | string, i: number): string {
  return `${JOB_PREFIX}${tag}-${n}-${i}`;
}

/** The job comment naming the workspace a run belongs to: how the next engine finds a dead one's jobs. */
export function jobComment(workspace: string): string {
  return `autoresearch workspace=${workspace}`;
}
