/**
 * `autoresearch state DIR [--tag T]`: rewrites `.autoresearch/<tag>/state.json` from the journal,
 * for runs from before the engine wrote it, an engine that died between an append and the write,
 * or a journal written by hand. The engine itself rewrites it after every append (journal-store.ts).
 */
import { JournalStore } from '../store/journal-store';
import { pickTag } from './report';
import { runPaths } from '../workspace/workspace';

/** Writes state.json for a run (the latest when no tag is given) and returns the file's path. */
export function writeStateFromJournal(dir: string, tag?: string): string {
  const t = pickTag(dir, tag);
  const paths = runPaths(dir, t);
  new JournalStore(paths.journal).rewriteState({ file: paths.state, tag: t });
  return paths.state;
}
