/**
 * What kill -9 left, read from the journal the dead engine wrote: which experiments were in
 * flight, and what a resume must make of each (src/engine/run/resume.ts). Tests that kill at fixed
 * delays assert against this instead of a count of interruptions, which depends on where the
 * delays happened to land on a loaded machine.
 */
import { expect } from 'vitest';
import type { ExperimentRecord, JournalRecord } from '../../src/core/journal/journal';

/** An experiment in flight at a kill; `measured`: a run of its own code was already recorded. */
export interface InFlightAtKill {
  n: number;
  measured: boolean;
}

/** The experiments the journal shows started and not finished, right after a kill. */
export function inFlightAfterKill(records: JournalRecord[]): InFlightAtKill[] {
  const done = new Set(records.filter(r => r.type === 'experiment').map(r => r.n));
  return records
    .filter(r => r.type === 'experiment_start' && !done.has(r.n))
    .map(r => ({ n: r.n, measured: records.some(x => x.type === 'run' && x.n === r.n && x.purpose !== 'best') }));
}

/**
 * Checks the fate of every experiment some kill left in flight, judged by the last kill that
 * found it so (a resumed one may be killed again): one record each; interrupted, "recorded on
 * --resume", when no run of its own had been recorded; measured on from its runs (a result, not
 * an interruption) when one had. And no other experiment was interrupted. Returns how many kills
 * landed mid-experiment before any run of it was recorded.
 */
export function expectKillsResolved(kills: InFlightAtKill[][], exps: ExperimentRecord[]): number {
  const fate = new Map<number, boolean>();
  for (const left of kills) for (const k of left) fate.set(k.n, k.measured);
  for (const [n, measured] of fate) {
    const recs = exps.filter(e => e.n === n);
    expect(recs, `experiment #${n}'s records`).toHaveLength(1);
    if (measured) expect(recs[0].status, `#${n} had a run recorded: measured on`).not.toBe('interrupted');
    else
      expect(recs[0], `#${n} had no run recorded: interrupted`).toMatchObject({
        status: 'interrupted',
        reason: expect.stringMatching(/recorded on --resume/),
      });
  }
  const interrupted = exps
    .filter(e => e.status === 'interrupted')
    .map(e => e.n)
    .sort((a, b) => a - b);
  expect(interrupted).toEqual(
    [...fate]
      .filter(([, measured]) => !measured)
      .map(([n]) => n)
      .sort((a, b) => a - b),
  );
  return kills.flat().filter(k => !k.measured).length;
}
