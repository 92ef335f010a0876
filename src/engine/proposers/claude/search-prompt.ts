/**
 * What the prompt says of the search beyond greedy (issue 28): the branch a proposal starts from
 * and the moves the engine prepared. Stub until the search work lands.
 */
import type { ProposalContext } from '../types';

/** The moving part's section on where this proposal starts and the moves on offer, or null. */
export function searchBlock(_ctx: ProposalContext): string | null {
  return null;
}
