/** The loop as most engine tests run it: run `t1` of a workspace, one worker training as a subprocess. */
import { SubprocessExecutor } from '../../src/engine/executor/subprocess';
import type { Proposer } from '../../src/engine/proposers/types';
import { Loop, type LoopOptions } from '../../src/engine/run/setup';
import { resolvePython } from '../../src/engine/workspace/python';

/** A Loop on `dir` with `proposer`; `extra` overrides any option (tag, executor, signal, overrides…). */
export function subprocessLoop(dir: string, proposer: Proposer, extra: Partial<LoopOptions> = {}): Loop {
  return new Loop({
    dir,
    tag: 't1',
    proposer,
    executor: new SubprocessExecutor(1),
    python: resolvePython(),
    signal: new AbortController().signal,
    ...extra,
  });
}
