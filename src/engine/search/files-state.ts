/**
 * The content hash of editable files held in memory, the same as experiment/ledger.ts's stateOf
 * computes from disk: a prepared move whose files hash to a state already judged is never offered.
 */
import { createHash } from 'node:crypto';

/** stateOf for files given as text (an absent file hashes as stateOf's absent marker). */
export function stateOfFiles(files: Record<string, string | undefined>, editable: string[]): string {
  const h = createHash('sha256');
  for (const f of [...editable].sort()) {
    h.update(f).update('\0');
    const text = files[f];
    h.update(text === undefined ? Buffer.from('\0absent\0') : Buffer.from(text, 'utf8')).update('\0');
  }
  return h.digest('hex').slice(0, 16);
}
