/** The claude proposer against the Messages API stand-in, and a proposal's context, as the claude tests build them. */
import { ClaudeProposer, type ClaudeOptions } from '../../src/engine/proposers/claude/proposer';
import type { ProposalContext } from '../../src/engine/proposers/types';
import { resolvePython } from '../../src/engine/workspace/python';
import { history } from './records';

/** A proposer on the stand-in at `server`, with a short engine-level backoff; override any option. */
export function standInProposer(
  server: { apiKey: string; url: string },
  o: Partial<ClaudeOptions> = {},
): ClaudeProposer {
  return new ClaudeProposer({
    apiKey: server.apiKey,
    baseURL: server.url,
    python: resolvePython(),
    backoff: { baseMs: 5, maxMs: 20 },
    ...o,
  });
}

/** A context on `workdir` with `train` as train.py and three experiments of history; override any field. */
export function proposalContext(workdir: string, train: string, over: Partial<ProposalContext> = {}): ProposalContext {
  return {
    workdir,
    files: { 'train.py': train },
    history: history(3),
    program: 'Make val_bpb lower.',
    metric: 'val_bpb',
    direction: 'lower',
    seed: 0,
    ...over,
  };
}
