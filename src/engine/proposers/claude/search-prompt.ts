/**
 * What the prompt says of the search beyond greedy (issue 28): where this proposal starts when it
 * is a plateau branch's experiment (which near-miss, how many are left, why), and the moves the
 * engine prepared — a re-test of a near-miss, a combination of two changes, an ablation of a keep —
 * each with what it would run and why in numbers, and how to take one. It changes every proposal,
 * so it goes in the moving part, never in the cached prefix.
 */
import type { ProposalContext } from '../types';
import { clip } from './facts';
import { FINISH, MOVE } from './tool-defs';

/** Moves listed at most (the engine offers a few; a longer list would be noise). */
export const MAX_MOVES_SHOWN = 8;
/** Characters of a move's description or why, and of the branch's why. */
const LINE_CHARS = 300;

/** What each kind of move does, for the list. */
const KIND_WORDS: Record<string, string> = {
  retest: 're-test',
  combine: 'combine',
  ablate: 'ablate',
};

/** The moving part's section on where this proposal starts and the moves on offer, or null. */
export function searchBlock(ctx: Pick<ProposalContext, 'start' | 'moves'>): string | null {
  const parts: string[] = [];
  const start = ctx.start;
  if (start) {
    const left =
      start.left > 0
        ? `${start.left} more experiment${start.left === 1 ? '' : 's'} of this branch follow this one`
        : 'this is the branch’s last experiment';
    parts.push(
      [
        `## This proposal starts from #${start.n}, not from the best`,
        `Why the engine branched: ${clip(start.why, LINE_CHARS)}`,
        `Your working copy is #${start.n}'s files (view them before editing); your experiment is judged against the best as usual.`,
        `${left}; if none beats the best, the run returns to the best. Build on what #${start.n} changed rather than undoing it.`,
      ].join('\n'),
    );
  }
  const moves = (ctx.moves ?? []).slice(0, MAX_MOVES_SHOWN);
  if (moves.length) {
    const lines = moves.map(
      (m, i) =>
        `${i + 1}. ${KIND_WORDS[m.kind] ?? m.kind} (of ${m.of.map(k => `#${k}`).join(' + ')}): ${clip(m.description, LINE_CHARS)}\n` +
        `   Why: ${clip(m.why, LINE_CHARS)}`,
    );
    parts.push(
      [
        '## Moves on offer',
        'Instead of a new idea you may take one of these moves the engine prepared, its files ready:',
        ...lines,
        '',
        `To take one, call ${MOVE} with its number (index): your working copy becomes the move's files. Then call ${FINISH}`,
        'at once, or edit further first. Take a move when its numbers make it more promising than your own next idea.',
      ].join('\n'),
    );
  }
  return parts.length ? parts.join('\n\n') : null;
}
