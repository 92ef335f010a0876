/**
 * The sandbox setting of a run: front matter `sandbox: auto | on | off`, or a mapping such as
 * `sandbox: {network: true}`; the `--sandbox` flag sets the mode. `auto` (the default) sandboxes
 * each training run with bubblewrap where it works and says so where it does not; the network
 * is off inside unless the front matter turns it on. src/engine/executor/run-guard.py applies it.
 */
import * as z from 'zod/mini';
import { englishMessages } from '../journal/zod-english';

englishMessages();

export const SANDBOX_MODES = ['auto', 'on', 'off'] as const;
export const SandboxMode = z.enum(SANDBOX_MODES, { error: `must be one of ${SANDBOX_MODES.join(', ')}` });
export type SandboxMode = z.infer<typeof SandboxMode>;

/** As written: a mode, or {mode?, network?}. */
export const SandboxSetting = z.union(
  [SandboxMode, z.strictObject({ mode: z.optional(SandboxMode), network: z.optional(z.boolean()) })],
  {
    error: 'must be auto, on or off, or a mapping like {mode: on, network: true}',
  },
);
export type SandboxSetting = z.infer<typeof SandboxSetting>;

export interface Sandbox {
  mode: SandboxMode;
  network: boolean;
}

/** The setting with its defaults filled in. */
export function sandboxOf(setting: SandboxSetting | undefined): Sandbox {
  if (setting === undefined) return { mode: 'auto', network: false };
  if (typeof setting === 'string') return { mode: setting, network: false };
  return { mode: setting.mode ?? 'auto', network: setting.network ?? false };
}

/** A flag's mode over the front matter's setting: the mode from the flag, the rest from program.md. */
export function mergeSandbox(flag: SandboxSetting | undefined, fm: SandboxSetting | undefined): Sandbox {
  const base = sandboxOf(fm);
  if (flag === undefined) return base;
  const over = sandboxOf(flag);
  return { mode: over.mode, network: typeof flag === 'string' ? base.network : over.network };
}
