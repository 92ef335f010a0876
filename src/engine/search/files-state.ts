/**
 * The content hash of editable files held in memory, by the same function as experiment/ledger.ts's
 * stateOf from disk: a prepared move whose files hash to a state already judged is never offered.
 */
import { ABSENT_BYTES, stateHash } from '../experiment/ledger';

/** stateOf for files given as text (an absent file hashes as stateOf's absent marker). */
export function stateOfFiles(files: Record<string, string | undefined>, editable: string[]): string {
  return stateHash(editable, f => {
    const text = files[f];
    return text === undefined ? ABSENT_BYTES : Buffer.from(text, 'utf8');
  });
}
