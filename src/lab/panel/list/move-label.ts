/**
 * The search tree in the experiment list (issue 28): an experiment that searched otherwise than
 * with a new idea on the best says so in its header (`branch of #12`, `combine of #3 + #7`,
 * `from #14`), and a plateau branch's experiments are indented by how far they went off the keeps'
 * line. The words are the engine's own (numbers and move kinds), set as text.
 */
import type { TranslationBundle } from '@jupyterlab/translation';
import { moveWords, type TreeNode } from '../../../core/views/search-tree';

/** Indentation steps shown at most: a deep branch stays readable on a narrow panel. */
const MAX_INDENT = 4;

/** Marks a list item (rendered or a placeholder) as a branch's, indented by its depth. */
export function markBranch(node: HTMLElement, tree: TreeNode | undefined): void {
  const depth = tree?.depth ?? 0;
  node.classList.toggle('jp-mod-branch', depth > 0);
  if (depth > 0) {
    node.dataset.depth = String(depth);
    node.style.setProperty('--jp-autoresearch-depth', String(Math.min(depth, MAX_INDENT)));
  }
}

/** Adds how the experiment searched to its rendered header, before its description; nothing for a plain explore. */
export function showMove(header: HTMLElement, tree: TreeNode | undefined, trans: TranslationBundle): void {
  const words = tree ? moveWords(tree) : null;
  if (!words || header.querySelector('.jp-AutoresearchExperiment-move')) {
    return;
  }
  const label = document.createElement('span');
  label.className = 'jp-AutoresearchExperiment-move';
  label.dataset.kind = tree!.kind;
  label.textContent = words;
  label.title = trans.__('How this experiment searched: its move, and where it started when not from the best');
  header.insertBefore(label, header.querySelector('.jp-AutoresearchExperiment-description'));
}
