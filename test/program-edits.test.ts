/**
 * program.md edited while a run goes on (the panel's cell saves it mid-run): the run starts with
 * the edit uncommitted, a discarded experiment's reset keeps it, the next proposal reads it, and
 * experiment commits never sweep it in.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { SubprocessExecutor } from '../src/engine/executor/subprocess';
import { Loop } from '../src/engine/run/setup';
import { resolvePython } from '../src/engine/workspace/python';
import {
  experiments,
  git,
  makeWorkspace,
  ScriptedProposer,
  standInTrain,
  STAND_IN_PROGRAM,
  trainProposal,
} from './helpers/workspace';

const EDIT = '\nPrefer cheaper steps over bigger models.\n';

describe('program.md edits during a run', () => {
  it('are kept through resets and read by the next proposal', async () => {
    const dir = makeWorkspace({ program: STAND_IN_PROGRAM, train: standInTrain({ metric: '1.000000' }) });
    const programFile = path.join(dir, 'program.md');
    // Edited before the start, not committed: the run starts anyway.
    fs.appendFileSync(programFile, '\nFirst edit, before the run.\n');
    const proposer = new ScriptedProposer([
      () => {
        // The researcher saves program.md while experiment 1 is being proposed and trained.
        fs.appendFileSync(programFile, EDIT);
        return trainProposal('worse', { metric: '1.500000' });
      },
      trainProposal('better', { metric: '0.500000' }),
    ]);
    const loop = new Loop({
      dir,
      tag: 't1',
      proposer,
      executor: new SubprocessExecutor(1),
      python: resolvePython(),
      signal: new AbortController().signal,
      pipeline: false,
    });
    await loop.run();

    const exps = experiments(dir, 't1');
    expect(exps.map(e => e.status)).toEqual(['keep', 'discard', 'keep']);
    expect(proposer.contexts[0].program).toContain('First edit, before the run.');
    expect(proposer.contexts[0].program).not.toContain('Prefer cheaper steps');
    // The discard of #1 reset the tree; the edit made meanwhile survived and reached proposal 2.
    expect(proposer.contexts[1].program).toContain('Prefer cheaper steps');
    expect(fs.readFileSync(programFile, 'utf8')).toContain(EDIT);
    expect(git(dir, 'status', '--porcelain', '--untracked-files=no').trim()).toBe('M program.md');
    expect(git(dir, 'show', '--name-only', '--format=', exps[2].commit!).trim()).toBe('train.py');
  });
});
