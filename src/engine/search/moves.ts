/**
 * The moves the engine prepares for a proposal on the best (docs/method.md, "Search"): re-test a
 * near-miss on a best that moved since it ran (its diff re-applied), combine two near-misses (both
 * diffs merged onto the best), ablate a keep (its diff reverted from the best). Files are built
 * with git's three-way merge (git/merge.ts); a move whose files are the best's, or a state already
 * judged or in flight, is never offered. Bounded: the few most promising of each kind, each
 * commit's files read once, each move built once per best commit.
 */
import type { ExperimentRecord } from '../../core/journal/journal';
import { nearMisses } from '../../core/rule/near-miss';
import type { Direction } from '../../core/rule/noise';
import { mergeFiles } from '../git/merge';
import type { Repo } from '../git/git';
import type { MoveCandidate } from '../proposers/types';
import { filesAt } from '../run/rebase-proposal';
import { stateOfFiles } from './files-state';

/** Near-misses considered for re-tests and combinations, and keeps for ablations: the top few. */
const TOP_NEAR_MISSES = 3;
const LAST_KEEPS = 4;
/** Commits whose files are kept in memory (an LRU: the best and the recent near-misses and keeps). */
const FILES_CACHE = 32;

type Files = Record<string, string>;

/** What the builder needs of the run as it stands. */
export interface MoveInput {
  history: readonly ExperimentRecord[];
  best: { commit: string; state: string };
  direction: Direction;
  sigma: number | null;
  /** States judged or in flight: a move onto one is not offered. */
  taken: ReadonlySet<string>;
}

/** Builds the moves for a best, remembering each built move (and each commit's files) across proposals. */
export class MoveBuilder {
  private readonly files = new Map<string, Files>();
  private builtFor = '';
  /** Per move key (`combine:3,7`): its files, or null when the merge conflicted or left nothing. */
  private readonly built = new Map<string, Files | null>();

  constructor(
    private readonly repo: Repo,
    private readonly editable: string[],
  ) {}

  /** The moves worth offering on this best now, most promising first. */
  async build(o: MoveInput): Promise<MoveCandidate[]> {
    if (this.builtFor !== o.best.commit) {
      this.built.clear();
      this.builtFor = o.best.commit;
    }
    const best = await this.filesOf(o.best.commit);
    const out: MoveCandidate[] = [];
    const offer = (m: Omit<MoveCandidate, 'files'>, files: Files | null) => {
      if (!files || this.editable.every(f => files[f] === best[f])) return;
      if (o.taken.has(stateOfFiles(files, this.editable))) return;
      out.push({ ...m, files });
    };
    // Near-misses proposed on a best of their time: a branch's (on a near-miss's files) is a change to other code.
    const bests = new Set(o.history.filter(r => r.status === 'keep' && r.commit).map(r => r.commit));
    const near = nearMisses(o.history, o.direction, o.sigma).filter(m => bests.has(m.record.parent_commit));
    const say = (z: number | null, gain: number) => (z !== null ? `${z.toFixed(1)}σ` : gain.toPrecision(3));
    for (const m of near.filter(x => x.record.parent_commit !== o.best.commit).slice(0, TOP_NEAR_MISSES)) {
      // (On the best it ran on it would be the same code, same_as: only a best that moved is worth it.)
      const files = await this.once(`retest:${m.record.n}`, () => this.applied(m.record, best));
      offer(
        {
          kind: 'retest',
          of: [m.record.n],
          description: `re-test #${m.record.n} on the new best`,
          why: `#${m.record.n} beat the best before it by ${say(m.z, m.gain)}, within noise; the best has moved since`,
        },
        files,
      );
    }
    // Combined: two near-misses on this best (each measured on the code it would change); one from an
    // older best comes back through its re-test, which is a near-miss on this best if it still helps.
    const here = near.filter(m => m.record.parent_commit === o.best.commit).slice(0, TOP_NEAR_MISSES);
    for (let i = 0; i < here.length; i++) {
      for (let j = i + 1; j < here.length; j++) {
        const [a, b] = [here[i], here[j]];
        const files = await this.once(`combine:${a.record.n},${b.record.n}`, async () => {
          const first = await this.applied(a.record, best);
          return first && this.applied(b.record, first);
        });
        offer(
          {
            kind: 'combine',
            of: [a.record.n, b.record.n],
            description: `combine #${a.record.n} and #${b.record.n} on the best`,
            why: `each nearly helped: #${a.record.n} by ${say(a.z, a.gain)}, #${b.record.n} by ${say(b.z, b.gain)}`,
          },
          files,
        );
      }
    }
    for (const k of keepsOf(o.history, o.best.commit).slice(0, LAST_KEEPS)) {
      const files = await this.once(`ablate:${k.n}`, () => this.reverted(k, best));
      const delta = k.delta === null ? '' : ` (Δ ${k.delta.toPrecision(3)} when kept)`;
      offer(
        {
          kind: 'ablate',
          of: [k.n],
          description: `ablate #${k.n}: the best without its change`,
          why: `is keep #${k.n}${delta} still needed on top of the later keeps?`,
        },
        files,
      );
    }
    return out;
  }

  /** A move's files, built once per best commit. */
  private async once(key: string, make: () => Promise<Files | null>): Promise<Files | null> {
    if (!this.built.has(key)) this.built.set(key, await make());
    return this.built.get(key) ?? null;
  }

  /** An experiment's change (parent → commit) re-applied onto `onto`; null on a conflict. */
  private async applied(r: ExperimentRecord, onto: Files): Promise<Files | null> {
    if (!r.commit) return null;
    return merged(await this.filesOf(r.parent_commit), onto, await this.filesOf(r.commit));
  }

  /** A keep's change taken back out of `from` (the reverse three-way merge); null on a conflict. */
  private async reverted(k: ExperimentRecord, from: Files): Promise<Files | null> {
    if (!k.commit) return null;
    return merged(await this.filesOf(k.commit), from, await this.filesOf(k.parent_commit));
  }

  /** A commit's editable files (a commit never changes: read once, kept while recent). */
  private async filesOf(commit: string): Promise<Files> {
    const hit = this.files.get(commit);
    if (hit) {
      this.files.delete(commit);
      this.files.set(commit, hit);
      return hit;
    }
    const files = await filesAt(this.repo, commit, this.editable);
    this.files.set(commit, files);
    if (this.files.size > FILES_CACHE) this.files.delete(this.files.keys().next().value as string);
    return files;
  }
}

/**
 * The keeps the best is built on, newest first, the best itself and the baseline left out (ablating
 * the best's own change is the best before it, judged already): the chain of parents from the best.
 */
export function keepsOf(history: readonly ExperimentRecord[], bestCommit: string): ExperimentRecord[] {
  const byCommit = new Map<string, ExperimentRecord>();
  for (const r of history) if (r.status === 'keep' && r.commit) byCommit.set(r.commit, r);
  const chain: ExperimentRecord[] = [];
  for (let r = byCommit.get(bestCommit); r && chain.length <= history.length; r = byCommit.get(r.parent_commit)) {
    if (r.commit === r.parent_commit) break; // the baseline
    chain.push(r);
  }
  return chain.slice(1);
}

/**
 * `theirs` (a change from `base`) merged onto `ours`: git's three-way merge, and where git sees a
 * conflict, line by line when the three have the same lines but for edits in place (two knobs on
 * adjacent lines, which git calls a conflict, are two separate changes). Null on a real conflict.
 */
async function merged(base: Files, ours: Files, theirs: Files): Promise<Files | null> {
  const git = await mergeFiles(base, ours, theirs);
  if (git.ok) return { ...ours, ...git.files };
  const out: Files = { ...ours };
  for (const f of Object.keys(theirs)) {
    const m = lineMerge(base[f] ?? '', ours[f] ?? base[f] ?? '', theirs[f]);
    if (m === null) return null;
    out[f] = m;
  }
  return out;
}

/** The per-line merge of three texts with as many lines each; null when a line differs on both sides, or the counts differ. */
export function lineMerge(base: string, ours: string, theirs: string): string | null {
  const [b, o, t] = [base, ours, theirs].map(x => x.split('\n'));
  if (o.length !== b.length || t.length !== b.length) return null;
  const out: string[] = [];
  for (let i = 0; i < b.length; i++) {
    if (o[i] === b[i] || o[i] === t[i]) out.push(t[i]);
    else if (t[i] === b[i]) out.push(o[i]);
    else return null;
  }
  return out.join('\n');
}
