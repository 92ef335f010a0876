/**
 * A reviewer's note that names a knob, on the real loop, real git and the offline proposer in step
 * mode: the knob is left alone for the rest of the run, across --resume (the rule comes from the
 * journal's review records), and the pending proposal says which rule it followed.
 */
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { RunConfig } from '../src/core/journal/journal';
import { SubprocessExecutor } from '../src/engine/executor/subprocess';
import { Loop } from '../src/engine/run/setup';
import { changesOf, OfflineMeta } from '../src/engine/proposers/offline/moves';
import { OfflineProposer } from '../src/engine/proposers/offline/proposer';
import { resolvePython } from '../src/engine/workspace/python';
import { decide, reviewText } from '../src/engine/cli/review-command';
import { readPending } from '../src/engine/step-mode/step-review';
import { experiments, journal, makeWorkspace, standInTrain, waitFor } from './helpers/workspace';

const STEP: Partial<RunConfig> = { step: true, noise_runs: 1 };
const root = (dir: string) => path.join(dir, '.autoresearch', 't1');

function stepLoop(dir: string, resume: boolean, maxExperiments: number) {
  return new Loop({
    maxExperiments,
    dir,
    tag: 't1',
    resume,
    proposer: new OfflineProposer({ seed: 0 }),
    executor: new SubprocessExecutor(1),
    python: resolvePython(),
    signal: new AbortController().signal,
    overrides: STEP,
  });
}

/** Waits for proposal n to be offered; the names of the knobs it changes and the rules it followed. */
async function offered(dir: string, n: number): Promise<{ knobs: string[]; rules: unknown }> {
  await waitFor(
    () => readPending(root(dir))?.n === n && journal(dir, 't1').some(r => r.type === 'review' && r.n === n),
    30_000,
    `#${n} pending`,
  );
  const meta = OfflineMeta.parse(readPending(root(dir))!.meta);
  return { knobs: changesOf(meta).map(c => c.name), rules: meta.leave_alone };
}

describe('a note that names a knob', () => {
  it('keeps the offline proposer off that knob for the rest of the run, across --resume', async () => {
    // The learning rate is what the offline proposer tries first, both ways.
    const constants = { LEARNING_RATE: 0.001, HEAD_DIM: 64, N_LAYER: 4, WARMUP_RATIO: 0.1 };
    const train = standInTrain({ constants });
    const dir = makeWorkspace({ train });
    const first = stepLoop(dir, false, 3).run();

    const one = await offered(dir, 1);
    expect(one.knobs).toEqual(['LEARNING_RATE']);
    expect(one.rules).toBeUndefined();
    await decide(dir, { tag: 't1', note: 'Too bold. Leave the learning rate alone' }, 'reject');

    const two = await offered(dir, 2);
    expect(two.knobs).not.toContain('LEARNING_RATE');
    expect(two.rules).toEqual([{ name: 'LEARNING_RATE', n: 1 }]);
    expect(reviewText(dir, 't1')).toContain('rule:        Leaving LEARNING_RATE alone (from your note on #1)');
    // An approval's note counts too.
    await decide(dir, { tag: 't1', note: "fine, but don't touch head_dim" }, 'approve');

    const three = await offered(dir, 3);
    expect(three.rules).toEqual([
      { name: 'LEARNING_RATE', n: 1 },
      { name: 'HEAD_DIM', n: 2 },
    ]);
    await decide(dir, { tag: 't1', note: 'HEAD_DIM looks good, keep going' }, 'approve');
    expect(await first).toMatchObject({ reason: 'max-experiments' });

    // A new engine on the same run: the rules come back from the journal.
    const second = stepLoop(dir, true, 5).run();
    for (const n of [4, 5]) {
      const next = await offered(dir, n);
      expect(next.rules).toEqual([
        { name: 'LEARNING_RATE', n: 1 },
        { name: 'HEAD_DIM', n: 2 },
      ]);
      await decide(dir, { tag: 't1' }, 'approve');
    }
    expect(await second).toMatchObject({ reason: 'max-experiments' });

    const touched = experiments(dir, 't1')
      .filter(e => e.n >= 2)
      .map(e => [e.n, changesOf(OfflineMeta.parse(e.proposal_meta)).map(c => c.name)]);
    expect(touched).toHaveLength(4);
    for (const [n, knobs] of touched) {
      expect(knobs, `#${n}`).not.toContain('LEARNING_RATE');
      if ((n as number) >= 3) expect(knobs, `#${n}`).not.toContain('HEAD_DIM');
    }
  }, 120_000);
});
