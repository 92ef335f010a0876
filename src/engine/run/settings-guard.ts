/**
 * A run's security settings against the run before it (src/core/config/security-settings.ts). A run
 * without the sandbox can write program.md, and its front matter governs the next start: so a
 * change at a resume is refused unless the person accepts it, and one at a new run is shown loudly.
 */
import type { JournalRecord, RunConfig, RunStartRecord } from '../../core/journal/journal';
import { RunStartRecord as RunStartSchema } from '../../core/journal/journal';
import {
  changeWords,
  SETTINGS_REFUSAL,
  securityValues,
  settingChanges,
  type SettingChange,
  type SettingsChanged,
  type SettingsFrom,
} from '../../core/config/security-settings';
import { UserError } from '../user-error';
import { readNoFollow } from '../workspace/workspace-files';
import { latestTag, runPaths } from '../workspace/workspace';

const WHY = 'a training run without the sandbox can edit program.md';

/**
 * On --resume: the changes since the run's last start, recorded as accepted when `accept`;
 * without it a change is a UserError naming each one and the flag. Undefined when none changed.
 */
export function resumeSettings(
  tag: string,
  records: JournalRecord[],
  config: RunConfig,
  from: SettingsFrom,
  accept: boolean,
): SettingsChanged | undefined {
  const last = records.filter((r): r is RunStartRecord => r.type === 'run_start').at(-1);
  if (!last) return undefined;
  const changes = settingChanges(securityValues(last.config), securityValues(config), from);
  if (!changes.length) return undefined;
  const unasked = changes.filter(c => !saidByThePerson(c));
  if (unasked.length && !accept) {
    const [these, them] = unasked.length > 1 ? ['these changes', 'them'] : ['this change', 'it'];
    const where = unasked.every(c => c.from === 'program.md') ? " in program.md's front matter" : '';
    throw new UserError(
      `${SETTINGS_REFUSAL}${tag} last started: ${unasked.map(changeWords).join('; ')}; ` +
        `${WHY}, so check that you made ${these}, then resume with --accept-settings to accept ${them}, ` +
        `or restore the old ${unasked.length > 1 ? 'settings' : 'setting'}${where}`,
    );
  }
  return { since: tag, accepted: true, changes };
}

/** For a new run: the changes since the workspace's latest other run's last start, or undefined. */
export function newRunSettings(
  dir: string,
  tag: string,
  config: RunConfig,
  from: SettingsFrom,
  accept: boolean,
): SettingsChanged | undefined {
  const since = latestTag(dir);
  if (since === null || since === tag) return undefined;
  const last = lastRunStart(runPaths(dir, since).journal);
  if (!last) return undefined;
  const changes = settingChanges(securityValues(last.config), securityValues(config), from);
  if (!changes.length) return undefined;
  return { since, accepted: accept || changes.every(saidByThePerson), changes };
}

/**
 * A change the person made where no run can write: a flag on the command line, or the panel's
 * options. It needs no acceptance; one that comes from program.md (or from a key gone from it,
 * the default) may be a run's work.
 */
function saidByThePerson(c: SettingChange): boolean {
  return c.from === 'flag' || c.from === 'panel';
}

/** The warning block a new run prints on stderr before it starts. */
export function changedSettingsWarning(changed: SettingsChanged): string {
  const unasked = changed.changes.filter(c => !saidByThePerson(c));
  if (!unasked.length || changed.accepted) return '';
  const bar = '!'.repeat(72);
  return [
    bar,
    `autoresearch: WARNING: security settings differ from the latest run (${changed.since}):`,
    ...unasked.map(c => `  ${changeWords(c)}`),
    `  ${WHY}: check that these are your changes (the journal's run_start records them).`,
    bar,
    '',
  ].join('\n');
}

/**
 * The last run_start of another run's journal, read without parsing the rest (a long run's journal
 * is megabytes); never through a link, never blocking on a FIFO. Null when there is none to read.
 */
function lastRunStart(file: string): RunStartRecord | null {
  let text: string;
  try {
    text = readNoFollow(file).toString('utf8');
  } catch {
    return null;
  }
  // Records are written with `type` first (JournalStore.append of the record literals).
  const at = text.lastIndexOf('{"type":"run_start"');
  if (at < 0) return null;
  const end = text.indexOf('\n', at);
  try {
    const parsed = RunStartSchema.safeParse(JSON.parse(text.slice(at, end < 0 ? undefined : end)));
    return parsed.success ? parsed.data : null;
  } catch {
    return null;
  }
}
