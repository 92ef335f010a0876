/** The proposers the engine knows, by name. */
import { OfflineProposer } from './offline';
import type { Proposer } from './types';
import { UserError } from '../workspace';

export const PROPOSERS = ['offline'] as const;

/** Builds the named proposer. */
export function createProposer(name: string, opts: { seed: number }): Proposer {
  switch (name) {
    case 'offline':
      return new OfflineProposer({ seed: opts.seed });
    default:
      throw new UserError(`unknown proposer "${name}"; available: ${PROPOSERS.join(', ')}`);
  }
}
