/**
 * The limits of a training run: front matter `limits: {processes: 4096, file_size: 20G}`.
 * src/engine/executor/run-guard.py sets them in the run's process before it starts (soft and hard
 * alike, so the run cannot raise them), with core dumps always off. A run that reaches one is a
 * crash whose reason names it (src/engine/experiment/measure.ts).
 */
import * as z from 'zod/mini';
import { englishMessages } from '../journal/zod-english';

englishMessages();

/** Processes (and threads) of the run's user at once, by default (RLIMIT_NPROC; a cgroup's pids.max for root). */
export const DEFAULT_PROCESSES = 4096;
/** The largest file a run may write is this many times the workspace (its tracked files and data, less .git and .autoresearch)… */
export const FILE_SIZE_FACTOR = 4;
/** …and never less than this: 10 GiB. */
export const FILE_SIZE_FLOOR = 10 * 1024 ** 3;

const UNITS: Record<string, number> = { '': 1, k: 1024, m: 1024 ** 2, g: 1024 ** 3, t: 1024 ** 4 };
const SIZE = /^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(?:i?b)?\s*$/i;
const SIZE_RULE = 'must be a size in bytes, or with a unit: 500M, 20G, 1.5T (powers of 1024)';

/** Bytes of a size as written (a number of bytes, or "20G"), or null if it is none. */
export function parseSize(value: number | string): number | null {
  if (typeof value === 'number') return Number.isSafeInteger(value) && value > 0 ? value : null;
  const m = SIZE.exec(value);
  if (!m) return null;
  const bytes = Math.floor(Number(m[1]) * UNITS[m[2].toLowerCase()]);
  return Number.isSafeInteger(bytes) && bytes > 0 ? bytes : null;
}

/** As written in the front matter; each key optional (its default then). */
export const LimitsSetting = z.strictObject({
  processes: z.optional(
    z.int({ error: 'must be a whole number above 0' }).check(z.positive({ error: 'must be a whole number above 0' })),
  ),
  file_size: z.optional(
    z.union([z.number(), z.string()], { error: SIZE_RULE }).check(z.refine(v => parseSize(v) !== null, SIZE_RULE)),
  ),
});
export type LimitsSetting = z.infer<typeof LimitsSetting>;

/** The limits the run guard applies (run-guard.py reads these keys). */
export interface Limits {
  processes: number;
  file_size_bytes: number;
}

/** The setting with its defaults filled in, for a workspace of `workspaceBytes`. */
export function limitsOf(setting: LimitsSetting | undefined, workspaceBytes: number): Limits {
  const size = setting?.file_size === undefined ? null : parseSize(setting.file_size);
  return {
    processes: setting?.processes ?? DEFAULT_PROCESSES,
    file_size_bytes: size ?? Math.max(FILE_SIZE_FACTOR * workspaceBytes, FILE_SIZE_FLOOR),
  };
}

/** A size for people: 10 GiB, 512 MiB, 100 bytes. */
export function sizeWords(bytes: number): string {
  for (const [unit, n] of [
    ['TiB', 1024 ** 4],
    ['GiB', 1024 ** 3],
    ['MiB', 1024 ** 2],
    ['KiB', 1024],
  ] as const) {
    if (bytes >= n) return `${Number((bytes / n).toFixed(1))} ${unit}`;
  }
  return `${bytes} bytes`;
}
