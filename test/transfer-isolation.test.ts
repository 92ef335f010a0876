/**
 * The transfer study runs where a run would and as guarded: through a real Jupyter kernel (the
 * kernel executor against a real `jupyter server`), and inside bubblewrap's sandbox, whose
 * writable folder is then the study's worktree, not the workspace with its journal and .git.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { parseStudyJournal, type StudyRecord, type StudyRunRecord } from '../src/core/study/transfer-journal';
import type { TransferSummary } from '../src/core/study/transfer';
import { SubprocessExecutor } from '../src/engine/executor/subprocess';
import { Loop } from '../src/engine/run/setup';
import { resolvePython } from '../src/engine/workspace/python';
import { startJupyterServer, type JupyterServer } from './helpers/jupyter-server';
import { cli, experiments, git, makeWorkspace, ScriptedProposer } from './helpers/workspace';

/**
 * A stand-in that reports, as summary keys, where it ran: in the study's worktree or not, whether
 * it could write its own folder and the workspace's journal, and the scale it was given.
 */
function standIn(lr: number): string {
  return [
    'import os',
    `LR = ${lr}`,
    'scale = float(os.environ.get("AUTORESEARCH_SCALE", "1"))',
    'cwd = os.getcwd()',
    'def can_write(p):',
    '    try:',
    '        with open(p, "a"):',
    '            pass',
    '        return 1',
    '    except OSError:',
    '        return 0',
    'journal = os.environ.get("STANDIN_JOURNAL", "")',
    'print("---")',
    'print("val_bpb:          %.6f" % (1.0 - 0.1 * (scale - 1) + abs(LR - 0.004) * 10))',
    'print("in_worktree:      %d" % int(os.sep + "transfer" + os.sep + "worktree" in cwd))',
    'print("cwd_writable:     %d" % can_write(os.path.join(cwd, "scratch.txt")))',
    'print("journal_writable: %d" % (can_write(journal) if journal else -1))',
    'print("depth:            %d" % round(4 * scale))',
    '',
  ].join('\n');
}

async function searchedRun(program: string): Promise<string> {
  const dir = makeWorkspace({ program, train: standIn(0.001) });
  fs.writeFileSync(path.join(dir, '.gitignore'), 'scratch.txt\n');
  git(dir, 'add', '-A');
  git(dir, '-c', 'user.name=t', '-c', 'user.email=t@t', 'commit', '-qm', 'ignore scratch');
  await new Loop({
    dir,
    tag: 't1',
    proposer: new ScriptedProposer([
      { description: 'lr up', rationale: 'test', files: { 'train.py': standIn(0.002) } },
      { description: 'lr up more', rationale: 'test', files: { 'train.py': standIn(0.003) } },
    ]),
    executor: new SubprocessExecutor(1),
    python: resolvePython(),
    signal: new AbortController().signal,
  }).run();
  expect(experiments(dir, 't1').filter(e => e.status === 'keep')).toHaveLength(3);
  return dir;
}

function study(dir: string): StudyRecord[] {
  return parseStudyJournal(fs.readFileSync(path.join(dir, '.autoresearch/t1/transfer/journal.jsonl'), 'utf8'));
}

const runsOf = (records: StudyRecord[]) => records.filter((r): r is StudyRunRecord => r.type === 'study_run');

describe('the transfer study through a kernel', () => {
  let server: JupyterServer;
  beforeAll(async () => {
    vi.spyOn(console, 'debug').mockImplementation(() => undefined);
    server = await startJupyterServer();
  }, 120_000);
  afterAll(async () => {
    await server?.stop();
  });

  it('replays every kept commit in a kernel of the chosen kernelspec, in the worktree, at the scale asked', async () => {
    const dir = await searchedRun(
      '---\nbudget_s: 1\ntimeout_s: 30\nnoise_runs: 2\nsandbox: off\n---\nLower val_bpb.\n',
    );
    const r = await cli(
      ['transfer', dir, '--env', 'AUTORESEARCH_SCALE=2', '--runs', '2', '--json', '--executor', 'kernel'],
      { env: { JUPYTER_SERVER_URL: server.url, JUPYTER_TOKEN: server.token } },
    );
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const out = JSON.parse(r.stdout) as TransferSummary;
    expect(out.changes.map(c => c.verdict)).toEqual(['transferred', 'transferred']);
    const records = study(dir);
    expect(records.find(x => x.type === 'study_start')).toMatchObject({ executor: 'kernel' });
    const runs = runsOf(records);
    expect(runs).toHaveLength(6);
    for (const run of runs) {
      expect(run.summary).toMatchObject({ in_worktree: 1, cwd_writable: 1, depth: 8 });
    }
    expect(git(dir, 'status', '--porcelain')).toBe('');
  }, 240_000);
});

describe('the transfer study in the sandbox', () => {
  it("may write its worktree but not the workspace's journal", async () => {
    const dir = await searchedRun('---\nbudget_s: 1\ntimeout_s: 30\nnoise_runs: 2\nsandbox: on\n---\nLower val_bpb.\n');
    const journal = path.join(dir, '.autoresearch/t1/journal.jsonl');
    const before = fs.readFileSync(journal, 'utf8');
    const r = await cli(['transfer', dir, '--env', 'AUTORESEARCH_SCALE=2', '--runs', '2', '--json'], {
      env: { STANDIN_JOURNAL: journal },
    });
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const runs = runsOf(study(dir));
    expect(runs).toHaveLength(6);
    for (const run of runs) {
      expect(run.sandbox).toBe('on');
      expect(run.summary).toMatchObject({ in_worktree: 1, cwd_writable: 1, journal_writable: 0 });
    }
    expect(fs.readFileSync(journal, 'utf8')).toBe(before);
  }, 240_000);
});
