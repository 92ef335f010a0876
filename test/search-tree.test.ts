/** The search tree (where each experiment started from) and the export's section drawn from it. */
import { describe, expect, it } from 'vitest';
import type { ExperimentRecord, JournalRecord } from '../src/core/journal/journal';
import { lightExperiment } from '../src/core/journal/light-record';
import { buildNotebook } from '../src/core/views/notebook';
import { moveWords, searchTree } from '../src/core/views/search-tree';
import { MAX_TREE_ENTRIES, searchTreeMarkdown } from '../src/core/views/search-tree-markdown';
import { history, record, runStartRecord } from './helpers/records';

const BASE = 'a'.repeat(40);
const commitOf = (n: number) => n.toString(16).padStart(40, 'b');

/** Experiment n started from experiment `from` (null: the run's base). */
function exp(n: number, from: number | null, over: Partial<ExperimentRecord> = {}): ExperimentRecord {
  return record(n, { parent_commit: from === null ? BASE : commitOf(from), ...over });
}

/**
 * #0 the baseline; #1 a near-miss; #2 crashes and #3, #4 fix it in a chain; #5 a keep; a plateau
 * branch from #1 (#6, and #7 from #6 two steps off the line); #8 combines #1 and #6 on #5; #9 is a
 * branch experiment kept; #10 plain on #9; #11 a fix from before moves were journaled; #12 rejected.
 */
function run(): ExperimentRecord[] {
  return [
    exp(0, null, { status: 'keep', description: 'baseline' }),
    exp(1, 0, { status: 'discard', description: 'warmup 100 steps' }),
    exp(2, 0, { status: 'crash' }),
    exp(3, 0, { status: 'crash', move: { kind: 'fix', of: [2] } }),
    exp(4, 0, { status: 'discard', move: { kind: 'fix', of: [3] } }),
    exp(5, 0, { status: 'keep', description: 'wider MLP' }),
    exp(6, 1, { status: 'discard', move: { kind: 'branch', of: [1] } }),
    exp(7, 6, { status: 'discard', move: { kind: 'branch', of: [1] } }),
    exp(8, 5, { status: 'discard', move: { kind: 'combine', of: [1, 6] } }),
    exp(9, 6, { status: 'keep', move: { kind: 'branch', of: [1] } }),
    exp(10, 9, { status: 'discard' }),
    exp(11, 9, { status: 'discard', proposal_meta: { fix_of: 2 } }),
    exp(12, 9, { status: 'rejected' }),
  ];
}

describe('searchTree', () => {
  it('finds where each experiment started, its move, how far off the keeps’ line and which keep it hangs off', () => {
    const tree = searchTree(run());
    const shape = (n: number) => {
      const { from, kind, of, depth, line, branched } = tree.get(n)!;
      return { from, kind, of, depth, line, branched };
    };
    expect(shape(0)).toEqual({ from: null, kind: 'explore', of: [], depth: 0, line: 0, branched: false });
    expect(shape(1)).toEqual({ from: 0, kind: 'explore', of: [], depth: 0, line: 0, branched: false });
    // A fix chain: each fix starts from the best and names the crash it fixes.
    expect(shape(3)).toMatchObject({ from: 0, kind: 'fix', of: [2], depth: 0 });
    expect(shape(4)).toMatchObject({ from: 0, kind: 'fix', of: [3], depth: 0 });
    // The branch from near-miss #1: one step off the line, then two.
    expect(shape(6)).toEqual({ from: 1, kind: 'branch', of: [1], depth: 1, line: 0, branched: true });
    expect(shape(7)).toEqual({ from: 6, kind: 'branch', of: [1], depth: 2, line: 0, branched: true });
    // A combination of two sources, started from the best.
    expect(shape(8)).toEqual({ from: 5, kind: 'combine', of: [1, 6], depth: 0, line: 5, branched: false });
    // A branch experiment that won is on the line; what follows starts from it.
    expect(shape(9)).toEqual({ from: 6, kind: 'branch', of: [1], depth: 0, line: 9, branched: true });
    expect(shape(10)).toEqual({ from: 9, kind: 'explore', of: [], depth: 0, line: 9, branched: false });
    expect(shape(11)).toMatchObject({ kind: 'fix', of: [2] });
    expect(shape(12)).toMatchObject({ from: 9, kind: 'explore' });
  });

  it('says how each searched, and nothing for a plain new idea on the best', () => {
    const tree = searchTree(run());
    const words = (n: number) => moveWords(tree.get(n)!);
    expect([0, 1, 2, 5, 10].map(words)).toEqual([null, null, null, null, null]);
    expect(words(4)).toBe('fix of #3');
    expect(words(6)).toBe('branch of #1');
    expect(words(7)).toBe('branch of #1 · from #6');
    expect(words(8)).toBe('combine of #1 + #6');
    // Off the line without a journaled move (a journal from another engine): where it came from.
    expect(moveWords(searchTree([exp(0, null, { status: 'keep' }), exp(1, 0), exp(2, 1)]).get(2)!)).toBe('from #1');
  });

  it('is the same on light records, takes the first of a repeated number, and stays O(n) at 10,000', () => {
    const light = searchTree(run().map(lightExperiment));
    expect(light.get(7)).toEqual(searchTree(run()).get(7));
    expect(light.get(11)!.kind).toBe('explore'); // a light record has no proposal meta
    const twice = searchTree([...run(), exp(6, 0, { status: 'keep' })]);
    expect(twice.get(6)!.kind).toBe('branch');
    const big = history(10_000).map((r, i) => ({ ...r, parent_commit: i ? commitOf(i - (i % 10)) : BASE }));
    const t0 = performance.now();
    const tree = searchTree(big);
    expect(performance.now() - t0).toBeLessThan(200);
    expect(tree.size).toBe(10_000);
    expect(tree.get(9_999)).toMatchObject({ from: 9_990, line: 9_990, depth: 0 });
  });
});

describe('the export’s search tree section', () => {
  it('draws the keeps’ line with the moves and branches hanging off, and counts the plain ones', () => {
    const [head, blank, , blank2, ...lines] = searchTreeMarkdown(run())!.split('\n');
    expect([head, blank, blank2]).toEqual(['## Search tree', '', '']);
    expect(lines).toEqual(
      [
        '- **#0** keep 1.000000 · baseline',
        '  - #1 discard 0.999900 · warmup 100 steps',
        '    - #6 discard 0.999400 · branch of #1 · experiment 6: change LEARNING\\_RATE to 0\\.0070 and N\\_LAYER',
        '      - #7 discard 0.999300 · branch of #1 · from #6 · experiment 7: change LEARNING\\_RATE to 0\\.0010 and N\\_LAYER',
        '  - #3 crash — · fix of #2 · experiment 3: change LEARNING\\_RATE to 0\\.0040 and N\\_LAYER',
        '  - #4 discard 0.999600 · fix of #3 · experiment 4: change LEARNING\\_RATE to 0\\.0050 and N\\_LAYER',
        '  - 1 plain experiment on it (1 crash)',
        '- **#5** keep 0.999500 · wider MLP',
        '  - #8 discard 0.999200 · combine of #1 + #6 · experiment 8: change LEARNING\\_RATE to 0\\.0020 and N\\_LAYER',
        '- **#9** keep 0.999100 · branch of #1 · from #6 · experiment 9: change LEARNING\\_RATE to 0\\.0030 and N\\_LAYER',
        '  - #11 discard 0.998900 · fix of #2 · experiment 11: change LEARNING\\_RATE to 0\\.0050 and N\\_LAYER',
        '  - 2 plain experiments on it (1 discard, 1 rejected)',
        '',
      ].map(l => l.replace(/(experiment \d+):/, '$1\\:')),
    );
  });

  it('is absent for a greedy run, and a cell of the notebook for one that branched', () => {
    expect(searchTreeMarkdown(history(30))).toBeNull();
    const records: JournalRecord[] = [runStartRecord(), ...run()];
    const nb = buildNotebook({ program: '# P\n', records, tag: 't' });
    const ids = nb.cells.map(c => c.id);
    expect(ids.indexOf('search-tree')).toBe(ids.indexOf('chart') + 1);
    expect(ids.indexOf('experiment-0')).toBe(ids.indexOf('search-tree') + 1);
    expect(nb.cells.find(c => c.id === 'search-tree')!.source.join('')).toContain(
      '- **#5** keep 0.999500 · wider MLP\n',
    );
    const greedy = buildNotebook({ program: '# P\n', records: [runStartRecord(), ...history(5)], tag: 't' });
    expect(greedy.cells.map(c => c.id)).not.toContain('search-tree');
  });

  it('writes a planted description as text, one line, and bounds a long run’s section', () => {
    const planted = 'x\n## Owned\n<img src=x onerror=alert(1)> [link](http://e) $a$ `code`';
    const text = searchTreeMarkdown([
      exp(0, null, { status: 'keep' }),
      exp(1, 0, { move: { kind: 'retest', of: [0] }, description: planted }),
    ])!;
    const line = text.split('\n').find(l => l.startsWith('  - #1'))!;
    expect(line).toBe(
      '  - #1 discard 0.999900 · retest of #0 · x \\#\\# Owned \\<img src\\=x onerror\\=alert\\(1\\)\\> \\[link\\]\\(http\\:\\/\\/e\\) <span>&#36;</span>a<span>&#36;</span> \\`code\\`',
    );
    const many = [
      exp(0, null, { status: 'keep' }),
      ...Array.from({ length: 1000 }, (_, i) => exp(i + 1, 0, { move: { kind: 'retest', of: [0] } })),
    ];
    const long = searchTreeMarkdown(many)!.trimEnd().split('\n');
    expect(long.filter(l => l.startsWith('  - #'))).toHaveLength(MAX_TREE_ENTRIES - 1);
    expect(long.at(-1)).toBe(`- … and ${1000 - (MAX_TREE_ENTRIES - 1)} more entries (every experiment is below)`);
  });
});
