/** The Slurm flags of `autoresearch run` and `autoresearch transfer`, as a `slurm:` setting checked as program.md's is. */
import { SlurmSetting } from '../../core/config/slurm';
import { UserError } from '../user-error';
import { flagOf, type RunFlags } from './run-flags';

/** The flags that set program.md's slurm: keys (each the key of the same name; slurm_args is args). */
export const SLURM_FLAG_KEYS = ['partition', 'account', 'qos', 'gpus', 'gres', 'cpus', 'mem', 'slurm_args'] as const;

/** The slurm: setting the flags give; undefined when none was given. */
export function slurmFlags(o: RunFlags): SlurmSetting | undefined {
  if (!SLURM_FLAG_KEYS.some(k => o[k] !== undefined)) return undefined;
  const raw = {
    partition: o.partition,
    account: o.account,
    qos: o.qos,
    // A bare count is a number in program.md too.
    gpus: o.gpus !== undefined && /^\d+$/.test(o.gpus) ? Number(o.gpus) : o.gpus,
    gres: o.gres,
    cpus: o.cpus,
    mem: o.mem,
    args: o.slurm_args?.split(/\s+/).filter(Boolean),
  };
  const parsed = SlurmSetting.safeParse(Object.fromEntries(Object.entries(raw).filter(([, v]) => v !== undefined)));
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const key = String(issue.path[0]);
    throw new UserError(
      `${flagOf(key === 'args' ? 'slurm_args' : (key as (typeof SLURM_FLAG_KEYS)[number]))} ${issue.message}`,
    );
  }
  return parsed.data;
}
