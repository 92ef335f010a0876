import { describe, expect, it } from 'vitest';
import { mergeFiles } from '../src/engine/git/merge';

const base = 'A = 1\nB = 2\nC = 3\nD = 4\nE = 5\nF = 6\n';

describe('mergeFiles (a draft re-applied onto a new best)', () => {
  it('combines changes to different lines', async () => {
    const ours = base.replace('A = 1', 'A = 10');
    const theirs = base.replace('F = 6', 'F = 60');
    expect(await mergeFiles({ 't.py': base }, { 't.py': ours }, { 't.py': theirs })).toEqual({
      ok: true,
      files: { 't.py': 'A = 10\nB = 2\nC = 3\nD = 4\nE = 5\nF = 60\n' },
    });
  });

  it('reports a conflict when both changed the same line', async () => {
    const ours = base.replace('C = 3', 'C = 30');
    const theirs = base.replace('C = 3', 'C = 300');
    expect(await mergeFiles({ 't.py': base }, { 't.py': ours }, { 't.py': theirs })).toEqual({
      ok: false,
      conflicts: ['t.py'],
    });
  });

  it('takes either side when only one moved', async () => {
    const ours = base.replace('A = 1', 'A = 10');
    expect(await mergeFiles({ 't.py': base }, { 't.py': ours }, { 't.py': base })).toEqual({
      ok: true,
      files: { 't.py': ours },
    });
    expect(await mergeFiles({ 't.py': base }, { 't.py': base }, { 't.py': ours })).toEqual({
      ok: true,
      files: { 't.py': ours },
    });
  });
});
