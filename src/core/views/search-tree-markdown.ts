/**
 * The export's "Search tree" section: the keeps' line, each keep with what hangs off it — the
 * moves (re-test, combine, ablate, fix) and a plateau's branches, indented by how far they went
 * off the line — and the plain experiments on it counted, not listed. Every description is the
 * model's text, so it is written as literal markdown. Pure.
 */
import type { ExperimentRecord } from '../journal/journal';
import { markdownLiteral } from './markdown-text';
import { isNotable, moveWords, searchTree, type TreeNode } from './search-tree';

/** Entries listed at most: a long run's section stays readable; the outputs below have every experiment. */
export const MAX_TREE_ENTRIES = 400;
/** Characters of a description shown in an entry. */
const DESCRIPTION_CHARS = 120;

function metricText(r: ExperimentRecord): string {
  return r.metric === null ? '—' : r.metric.toFixed(6);
}

/** One entry: number, status, metric, how it searched, and its description as text. */
function entry(r: ExperimentRecord, node: TreeNode, bold: boolean): string {
  const words = moveWords(node);
  let description = r.description.replace(/\s+/g, ' ').trim();
  if (description.length > DESCRIPTION_CHARS) description = `${description.slice(0, DESCRIPTION_CHARS - 1)}…`;
  const number = bold ? `**#${r.n}**` : `#${r.n}`;
  return [`${number} ${r.status} ${metricText(r)}`, words, description ? markdownLiteral(description) : null]
    .filter(Boolean)
    .join(' · ');
}

/** The counts of plain experiments on a keep, by status: `12 plain experiments on it (11 discard, 1 crash)`. */
function plainWords(statuses: string[]): string {
  const counts = new Map<string, number>();
  statuses.forEach(s => counts.set(s, (counts.get(s) ?? 0) + 1));
  const by = [...counts].map(([k, v]) => `${v} ${k}`).join(', ');
  return `${statuses.length} plain experiment${statuses.length === 1 ? '' : 's'} on it (${by})`;
}

/**
 * The section's markdown, or null when the run searched only greedily (no move, no branch):
 * then the keeps' line is the summary's and the chart's, and the export reads as it did.
 */
export function searchTreeMarkdown(exps: readonly ExperimentRecord[]): string | null {
  const tree = searchTree(exps);
  const nodes = tree.all();
  if (!nodes.some(isNotable)) return null;
  const records = new Map(exps.map(r => [r.n, r]));
  // A node is listed when it is notable or leads to one (a branch's base); children come after
  // their parent in the journal, so one pass from the end settles it.
  const listed = new Set<number>();
  const leads = new Set<number>();
  for (let i = nodes.length - 1; i >= 0; i--) {
    const node = nodes[i];
    if (!isNotable(node) && !leads.has(node.n)) continue;
    listed.add(node.n);
    if (node.from !== null && !node.keep) leads.add(node.from);
  }
  const children = new Map<number | null, number[]>();
  for (const node of nodes) {
    if (node.keep) continue;
    const list = children.get(node.from) ?? [];
    list.push(node.n);
    children.set(node.from, list);
  }
  const lines: string[] = [];
  let left = 0;
  const put = (line: string) => (lines.length < MAX_TREE_ENTRIES ? lines.push(line) : left++);
  /** What hangs off a keep (or, for null, off no keep): its listed descendants, then the plain ones counted. */
  const hanging = (root: number | null, indent: string) => {
    const plain: string[] = [];
    const stack: Array<{ n: number; level: number }> = [];
    const under = (of: number | null, level: number) => {
      const kids = children.get(of) ?? [];
      for (let i = kids.length - 1; i >= 0; i--) {
        if (listed.has(kids[i])) stack.push({ n: kids[i], level });
        else if (of === root) plain.unshift(records.get(kids[i])!.status);
      }
    };
    under(root, 0);
    while (stack.length) {
      const { n, level } = stack.pop()!;
      put(`${indent}${'  '.repeat(level)}- ${entry(records.get(n)!, tree.get(n)!, false)}`);
      under(n, level + 1);
    }
    if (plain.length) put(`${indent}- ${plainWords(plain)}`);
  };
  if ((children.get(null) ?? []).some(n => listed.has(n))) {
    put("- from no experiment's commit (the run's base)");
    hanging(null, '  ');
  }
  for (const node of nodes) {
    if (!node.keep) continue;
    put(`- ${entry(records.get(node.n)!, node, true)}`);
    hanging(node.n, '  ');
  }
  if (left) lines.push(`- … and ${left} more entries (every experiment is below)`);
  const intro =
    'Where each experiment started from. The kept experiments in order make the line (**bold**); under each keep hang ' +
    'the experiments that searched otherwise than with a new idea on the best — a re-test of a near-miss, a combination, ' +
    "an ablation, a fix of a crash — and a plateau's branches from a near-miss, indented by how far they went from the line. " +
    'The plain experiments on a keep are counted.';
  return `## Search tree\n\n${intro}\n\n${lines.join('\n')}\n`;
}
