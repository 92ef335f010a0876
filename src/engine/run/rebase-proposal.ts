/**
 * With several workers a slow proposer (Claude) may see the best move while it
 * works: its edit, made on the older best, is re-applied onto the newer one by a
 * three-way merge, the way git would rebase it, so the experiment starts from
 * the best as it is when it starts.
 */
import type { Repo } from '../git/git';
import { mergeFiles } from '../git/merge';
import type { Proposal } from '../proposers/types';

/** The editable files at a commit. */
export async function filesAt(repo: Repo, commit: string, editable: string[]): Promise<Record<string, string>> {
  const files: Record<string, string> = {};
  for (const f of editable) {
    files[f] = await repo.showFile(commit, f);
  }
  return files;
}

/**
 * The proposal re-applied from `base` onto `onto`; null on a conflict, or when
 * nothing of it is left (the other keep made the same change).
 */
export async function rebaseProposal(
  proposal: Proposal,
  base: Record<string, string>,
  onto: Record<string, string>,
): Promise<Proposal | null> {
  const merged = await mergeFiles(base, onto, proposal.files);
  if (!merged.ok || !Object.entries(merged.files).some(([f, text]) => text !== onto[f])) {
    return null;
  }
  const rationale = `${proposal.rationale} (Proposed on an older best; re-applied on the newer one another worker kept meanwhile.)`;
  return { ...proposal, files: merged.files, rationale };
}
