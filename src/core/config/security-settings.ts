/**
 * The settings that decide what a training run may reach: the sandbox's mode and network, and
 * the read-only and editable files. Each run_start records where each came from (program.md, a
 * flag, the panel, the default) and any change since the run it follows. A run without the
 * sandbox can write program.md, so the engine refuses a change at a resume unless the person
 * accepts it (--accept-settings), and shows one at a new run loudly (src/engine/run/settings-guard.ts).
 * Data and zod only: the panel imports this file too.
 */
import * as z from 'zod/mini';
import { sandboxOf, type SandboxSetting } from './sandbox';
import { englishMessages } from '../journal/zod-english';

englishMessages();

export const SECURITY_SETTINGS = ['sandbox', 'network', 'readonly', 'editable'] as const;
export type SecuritySetting = (typeof SECURITY_SETTINGS)[number];

/** Where a setting's value came from: program.md's front matter, a command-line flag, the panel (through the server), or the default. */
export const SETTING_SOURCES = ['program.md', 'flag', 'panel', 'default'] as const;
export const SettingSource = z.enum(SETTING_SOURCES);
export type SettingSource = z.infer<typeof SettingSource>;

/** Where each security setting of a run came from. */
export const SettingsFrom = z.object({
  sandbox: SettingSource,
  network: SettingSource,
  readonly: SettingSource,
  editable: SettingSource,
});
export type SettingsFrom = z.infer<typeof SettingsFrom>;

const SettingValue = z.union([z.string(), z.boolean(), z.array(z.string())]);

/** One security setting that differs from the run compared with: its value then and now, and where the new one came from. */
export const SettingChange = z.object({
  setting: z.enum(SECURITY_SETTINGS),
  before: SettingValue,
  after: SettingValue,
  from: SettingSource,
});
export type SettingChange = z.infer<typeof SettingChange>;

/**
 * The changes a run started with: since the run's own last start (a resume, which only starts
 * once they are accepted) or since the workspace's latest other run (a new run, which warns).
 */
export const SettingsChanged = z.object({
  /** The run compared with: this run's tag on a resume, the latest other run's on a new one. */
  since: z.string(),
  /** Whether the person accepted them (--accept-settings, or the panel's confirmation). */
  accepted: z.boolean(),
  changes: z.array(SettingChange).check(z.minLength(1)),
});
export type SettingsChanged = z.infer<typeof SettingsChanged>;

/** How the engine's refusal of changed settings on a resume begins: the panel offers to accept them when it sees it. */
export const SETTINGS_REFUSAL = 'security settings changed since run ';

/** The values of the security settings, as compared. */
export interface SecurityValues {
  sandbox: string;
  network: boolean;
  readonly: string[];
  editable: string[];
}

/** A resolved config's security settings (an older journal's absent sandbox is auto without network). */
export function securityValues(config: {
  sandbox?: SandboxSetting;
  readonly: string[];
  editable: string[];
}): SecurityValues {
  const sandbox = sandboxOf(config.sandbox);
  return { sandbox: sandbox.mode, network: sandbox.network, readonly: config.readonly, editable: config.editable };
}

interface Sources {
  sandbox?: SandboxSetting;
  readonly?: string[];
  editable?: string[];
}

/** Where each setting came from: `over` (flags, or the panel's options: `via`) wins over the front matter, which wins over the default. */
export function settingsFrom(fm: Sources, over: Sources, via: 'flag' | 'panel'): SettingsFrom {
  const pick = (flag: unknown, front: unknown): SettingSource =>
    flag !== undefined ? via : front !== undefined ? 'program.md' : 'default';
  const mode = (s: SandboxSetting | undefined) => (typeof s === 'string' ? s : s?.mode);
  const network = (s: SandboxSetting | undefined) => (typeof s === 'object' ? s.network : undefined);
  return {
    sandbox: pick(mode(over.sandbox), mode(fm.sandbox)),
    // A flag's bare mode keeps program.md's network (src/core/config/sandbox.ts's mergeSandbox).
    network: pick(network(over.sandbox), network(fm.sandbox)),
    readonly: pick(over.readonly, fm.readonly),
    editable: pick(over.editable, fm.editable),
  };
}

/** The settings that differ between `before` and `after`; a list's order does not count. */
export function settingChanges(before: SecurityValues, after: SecurityValues, from: SettingsFrom): SettingChange[] {
  const same = (a: SecurityValues[SecuritySetting], b: SecurityValues[SecuritySetting]) =>
    Array.isArray(a) && Array.isArray(b) ? [...a].sort().join('\0') === [...b].sort().join('\0') : a === b;
  return SECURITY_SETTINGS.filter(s => !same(before[s], after[s])).map(s => ({
    setting: s,
    before: before[s],
    after: after[s],
    from: from[s],
  }));
}

/** A value as shown: network on/off, a list as JSON (which escapes any control character a run wrote into a path). */
function shown(setting: SecuritySetting, value: SettingChange['before']): string {
  if (setting === 'network') return value === true ? 'on' : 'off';
  return Array.isArray(value) ? JSON.stringify(value) : JSON.stringify(String(value)).slice(1, -1);
}

/** One change in words: 'sandbox on → off (from program.md)'. */
export function changeWords(c: SettingChange): string {
  return `${c.setting} ${shown(c.setting, c.before)} → ${shown(c.setting, c.after)} (from ${c.from})`;
}
