/**
 * The tree of where each experiment started from (issue 28): an experiment starts from the one
 * whose commit is its parent_commit — usually the best, a keep; a plateau's branch starts from a
 * near-miss. With the move each record journals (explore, fix, retest, combine, ablate, branch)
 * this is the search as it went: the keeps' line, and what hangs off it. Built in one pass, O(1)
 * a record, so the panel adds to it as results land; a node never changes once added (it depends
 * only on earlier records), and reads only fields a light record has. Pure: the panel and the
 * engine share it.
 */
import type { ExperimentRecord, MoveKind } from '../journal/journal';

export interface TreeNode {
  n: number;
  /** The experiment it started from (its commit is this one's parent_commit); null: the run's base, or unknown. */
  from: number | null;
  kind: MoveKind;
  /** The experiments the move is built from (a fix's crash, a combine's two, a branch's near-miss). */
  of: readonly number[];
  /** It started from an experiment that is not a keep (a near-miss, another branch experiment). */
  branched: boolean;
  /** Steps off the keeps' line: 0 for a keep and for what started from one; a branch's experiments 1 and more. */
  depth: number;
  /** The keep whose line it hangs off (itself for a keep); null when none is above it. */
  line: number | null;
  keep: boolean;
}

/** The `of` of the many nodes that name no experiment: one array, not ten thousand. */
const NONE: readonly number[] = Object.freeze([]);

/** The fix_of a claude proposal recorded before moves were journaled (its meta). */
function legacyFix(r: ExperimentRecord): number | undefined {
  const fix = (r.proposal_meta as { fix_of?: unknown } | null | undefined)?.fix_of;
  return typeof fix === 'number' && Number.isInteger(fix) && fix >= 0 ? fix : undefined;
}

/** The search tree, built as records come (journal order); `get(n)` is experiment n's node. */
export class SearchTree {
  private readonly nodes = new Map<number, TreeNode>();
  private readonly byCommit = new Map<string, number>();

  /** Adds a record (an n seen before is ignored: the first one stands) and returns its node. */
  add(r: ExperimentRecord): TreeNode {
    const known = this.nodes.get(r.n);
    if (known) return known;
    const fromN = this.byCommit.get(r.parent_commit);
    const from = fromN !== undefined && fromN !== r.n ? (this.nodes.get(fromN) ?? null) : null;
    const legacy = legacyFix(r);
    const kind: MoveKind = r.move?.kind ?? (legacy !== undefined ? 'fix' : 'explore');
    const of = r.move?.of ?? (r.move === undefined && legacy !== undefined ? [legacy] : NONE);
    const keep = r.status === 'keep';
    const branched = from !== null && !from.keep;
    const node: TreeNode = {
      n: r.n,
      from: from?.n ?? null,
      kind,
      of: of === NONE ? NONE : [...of],
      branched,
      depth: !keep && branched ? from.depth + 1 : 0,
      line: keep ? r.n : (from?.line ?? null),
      keep,
    };
    this.nodes.set(r.n, node);
    // Two records of one commit (a same_as repeat): the first is where later ones start from.
    if (r.commit !== null && !this.byCommit.has(r.commit)) this.byCommit.set(r.commit, r.n);
    return node;
  }

  get(n: number): TreeNode | undefined {
    return this.nodes.get(n);
  }

  get size(): number {
    return this.nodes.size;
  }

  /** Every node, in the order added. */
  all(): TreeNode[] {
    return [...this.nodes.values()];
  }
}

/** The search tree of a run's experiments (in journal order). */
export function searchTree(records: readonly ExperimentRecord[]): SearchTree {
  const tree = new SearchTree();
  for (const r of records) tree.add(r);
  return tree;
}

/** Whether a node is anything but a plain explore on the keeps' line (what the views mark). */
export function isNotable(node: TreeNode): boolean {
  return node.kind !== 'explore' || node.branched;
}

/**
 * How a node searched, in words, or null for a plain explore on the best: `retest of #41`,
 * `combine of #3 + #7`, `fix of #6`, `branch of #12`, and `from #k` when it started off the
 * keeps' line from an experiment the move does not already name.
 */
export function moveWords(node: TreeNode): string | null {
  if (!isNotable(node)) return null;
  const words: string[] = [];
  if (node.kind !== 'explore') {
    words.push(node.of.length ? `${node.kind} of ${node.of.map(k => `#${k}`).join(' + ')}` : node.kind);
  }
  if (node.branched && node.from !== null && !node.of.includes(node.from)) words.push(`from #${node.from}`);
  return words.length ? words.join(' · ') : null;
}
