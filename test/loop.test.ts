/** The loop on real git repositories with a fast stand-in train.py and scripted proposals. */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { subprocessLoop } from './helpers/loop';
import type { ExperimentRecord, JournalRecord } from '../src/core/journal/journal';
import { RESULTS_HEADER } from '../src/core/journal/results';
import {
  alive,
  cli,
  experiments,
  git,
  journal,
  makeWorkspace,
  ScriptedProposer,
  standInTrain,
  trainProposal,
  waitFor,
} from './helpers/workspace';

const loop = subprocessLoop;

describe('the loop', () => {
  it('runs a baseline, keeps improvements, resets the rest, and records everything', async () => {
    const dir = makeWorkspace({ train: standInTrain({ metric: '1.000000' }) });
    const proposer = new ScriptedProposer([
      trainProposal('better', { metric: '0.900000' }),
      trainProposal('worse', { metric: '0.950000' }),
      trainProposal('crashes', { exitCode: 3 }),
      trainProposal('better again', { metric: '0.850000' }),
    ]);
    const end = await loop(dir, proposer).run();
    expect(end).toMatchObject({ reason: 'exhausted', best_metric: 0.85 });

    const exps = experiments(dir, 't1');
    expect(exps.map(e => [e.n, e.status, e.metric, e.description])).toEqual([
      [0, 'keep', 1.0, 'baseline'],
      [1, 'keep', 0.9, 'better'],
      [2, 'discard', 0.95, 'worse'],
      [3, 'crash', null, 'crashes'],
      [4, 'keep', 0.85, 'better again'],
    ]);
    expect(exps[2]).toMatchObject({ best_before: 0.9, parent_commit: exps[1].commit });
    expect(exps[2].delta).toBeCloseTo(0.05, 9);
    expect(exps[3].reason).toMatch(/exited with code 3: RuntimeError: stand-in failure/);
    expect(exps[1].diff).toContain('+print("val_bpb:          " + "0.900000")');
    expect(exps[1].lines_added).toBe(1);
    expect(exps[1].lines_removed).toBe(1);
    expect(exps[1].summary).toMatchObject({ val_bpb: 0.9, num_steps: 10, peak_vram_mb: 2048 });
    expect(exps[1].memory_gb).toBe(2);
    expect(fs.readFileSync(exps[1].log_path as string, 'utf8')).toContain('loss 3.2500');

    // The branch holds the baseline and the kept commits only; the tree is clean at the best.
    expect(git(dir, 'log', '--format=%s', 'autoresearch/t1').trim().split('\n')).toEqual([
      'better again',
      'better',
      'initial',
    ]);
    expect(git(dir, 'rev-parse', 'HEAD').trim()).toBe(exps[4].commit);
    expect(git(dir, 'status', '--porcelain').trim()).toBe('');
    expect(git(dir, 'rev-parse', '--abbrev-ref', 'HEAD').trim()).toBe('autoresearch/t1');

    // The proposer saw the files at the best commit and the history so far.
    expect(proposer.contexts[2].files['train.py']).toContain('0.900000');
    expect(proposer.contexts[2].history.map(h => h.n)).toEqual([0, 1, 2]);

    const tsv = fs.readFileSync(path.join(dir, 'results.tsv'), 'utf8');
    const c = (i: number) => (exps[i].commit as string).slice(0, 7);
    expect(tsv).toBe(
      [
        RESULTS_HEADER,
        `${c(0)}\t1.000000\t2.0\tkeep\tbaseline`,
        `${c(1)}\t0.900000\t2.0\tkeep\tbetter`,
        `${c(2)}\t0.950000\t2.0\tdiscard\tworse`,
        `${c(3)}\t0.000000\t0.0\tcrash\tcrashes`,
        `${c(4)}\t0.850000\t2.0\tkeep\tbetter again`,
      ].join('\n') + '\n',
    );
    const records = journal(dir, 't1');
    expect(records[0].type).toBe('run_start');
    expect(records[records.length - 1].type).toBe('run_end');
  });

  it('kills a run that hangs at the deadline, with a grandchild that ignores SIGTERM', async () => {
    const dir = makeWorkspace({ program: '---\nbudget_s: 1\ntimeout_s: 2\nsandbox: off\n---\nGo.\n' });
    const proposer = new ScriptedProposer([trainProposal('hangs', { hang: true, stubbornChild: true })]);
    await loop(dir, proposer, { maxExperiments: 1 }).run();
    const [, hung] = experiments(dir, 't1');
    expect(hung).toMatchObject({ status: 'crash', reason: 'killed at the 2 s deadline', metric: null });
    expect(hung.timings.run_s).toBeGreaterThanOrEqual(2);
    expect(hung.timings.run_s).toBeLessThan(10);
    const grandchild = Number(fs.readFileSync(path.join(dir, 'grandchild.pid'), 'utf8'));
    await waitFor(() => !alive(grandchild), 5000, 'the grandchild to die');
    expect(git(dir, 'status', '--porcelain', '--untracked-files=no').trim()).toBe('');
  });

  it('counts a run with no summary block, or a NaN metric, as a crash', async () => {
    const dir = makeWorkspace();
    const proposer = new ScriptedProposer([
      trainProposal('silent', { noSummary: true }),
      trainProposal('diverges', { metric: 'nan' }),
    ]);
    await loop(dir, proposer).run();
    const [, silent, nan] = experiments(dir, 't1');
    expect(silent).toMatchObject({ status: 'crash', reason: expect.stringMatching(/no summary block/) });
    expect(nan).toMatchObject({ status: 'crash', reason: 'val_bpb is NaN' });
  });

  it('rejects edits outside the editable files, to read-only files, and syntax errors, leaving the tree clean', async () => {
    const dir = makeWorkspace({ extra: { 'notes.txt': 'hello\n' } });
    const proposer = new ScriptedProposer([
      { description: 'edit prepare', rationale: '', files: { 'prepare.py': 'TIME_BUDGET = 999\n' } },
      { description: 'escape', rationale: '', files: { '../outside.py': 'x = 1\n' } },
      { description: 'other file', rationale: '', files: { 'notes.txt': 'changed\n' } },
      { description: 'broken', rationale: '', files: { 'train.py': 'def f(:\n' } },
      { description: 'nothing', rationale: '', files: { 'train.py': standInTrain() } },
    ]);
    await loop(dir, proposer).run();
    const exps = experiments(dir, 't1').slice(1);
    expect(exps.map(e => e.status)).toEqual(['rejected', 'rejected', 'rejected', 'rejected', 'rejected']);
    expect(exps[0].reason).toMatch(/prepare.py is not an editable file/);
    expect(exps[1].reason).toMatch(/outside the workspace/);
    expect(exps[2].reason).toMatch(/notes.txt is not an editable file/);
    expect(exps[3].reason).toMatch(/^syntax error: .*train.py:1/);
    expect(exps[3].diff).toContain('+def f(:');
    expect(exps[4].reason).toBe('the proposal changed nothing');
    expect(fs.existsSync(path.join(path.dirname(dir), 'outside.py'))).toBe(false);
    expect(fs.readFileSync(path.join(dir, 'prepare.py'), 'utf8')).toContain('TIME_BUDGET = 1');
    expect(git(dir, 'status', '--porcelain').trim()).toBe('');
    expect(git(dir, 'log', '--format=%s').trim()).toBe('initial');
    // Rejected experiments are journal-only: results.tsv keeps the original's statuses.
    expect(fs.readFileSync(path.join(dir, 'results.tsv'), 'utf8').trim().split('\n')).toHaveLength(2);
  });

  it('rejects a run that changes a read-only file while training (unsandboxed: the hash check)', async () => {
    const dir = makeWorkspace({ program: '---\nbudget_s: 1\ntimeout_s: 20\nsandbox: off\n---\nGo.\n' });
    const sneaky = standInTrain() + 'open("prepare.py", "a").write("# sneaky\\n")\n';
    await loop(
      dir,
      new ScriptedProposer([{ description: 'sneaky', rationale: '', files: { 'train.py': sneaky } }]),
    ).run();
    const [, r] = experiments(dir, 't1');
    expect(r).toMatchObject({ status: 'rejected', reason: 'read-only prepare.py changed during the run' });
    expect(fs.readFileSync(path.join(dir, 'prepare.py'), 'utf8')).not.toContain('sneaky');
  });

  it('in the sandbox, a run cannot change a read-only file at all: the write fails and the experiment is a crash', async () => {
    const dir = makeWorkspace();
    const sneaky = standInTrain() + 'open("prepare.py", "a").write("# sneaky\\n")\n';
    await loop(
      dir,
      new ScriptedProposer([{ description: 'sneaky', rationale: '', files: { 'train.py': sneaky } }]),
    ).run();
    const [, r] = experiments(dir, 't1');
    expect(r).toMatchObject({ status: 'crash', reason: expect.stringMatching(/Read-only file system: 'prepare.py'/) });
    expect(
      journal(dir, 't1')
        .filter(x => x.type === 'run')
        .every(x => x.type === 'run' && x.sandbox === 'on'),
    ).toBe(true);
    expect(fs.readFileSync(path.join(dir, 'prepare.py'), 'utf8')).not.toContain('sneaky');
  });

  it('follows the front matter: another metric, higher is better, another command and editable list', async () => {
    const program =
      '---\nmetric: accuracy\ndirection: higher\nbudget_s: 1\nrun: python model.py --fast\neditable: [model.py]\nreadonly: []\n---\nRaise accuracy.\n';
    const model = (acc: string) =>
      `import sys\nassert sys.argv[1] == "--fast"\nprint("---")\nprint("accuracy: ${acc}")\n`;
    const dir = makeWorkspace({ program, train: null, prepare: null, extra: { 'model.py': model('0.5') } });
    const proposer = new ScriptedProposer([
      { description: 'up', rationale: '', files: { 'model.py': model('0.7') } },
      { description: 'down', rationale: '', files: { 'model.py': model('0.6') } },
    ]);
    await loop(dir, proposer).run();
    expect(experiments(dir, 't1').map(e => [e.status, e.metric])).toEqual([
      ['keep', 0.5],
      ['keep', 0.7],
      ['discard', 0.6],
    ]);
  });

  it('stops cleanly on abort mid-run: interrupted, reset to the best, tree clean', async () => {
    const dir = makeWorkspace();
    const controller = new AbortController();
    const proposer = new ScriptedProposer([trainProposal('slow', { sleep: 30, metric: '0.1' })]);
    const l = loop(dir, proposer, { signal: controller.signal });
    l.on('run-start', (n: number) => n === 1 && setTimeout(() => controller.abort('signal'), 300));
    const end = await l.run();
    expect(end.reason).toBe('signal');
    const exps = experiments(dir, 't1');
    expect(exps[1]).toMatchObject({ status: 'interrupted', description: 'slow' });
    expect(exps[1].timings.run_s).toBeLessThan(10);
    expect(git(dir, 'rev-parse', 'HEAD').trim()).toBe(exps[0].commit);
    expect(git(dir, 'status', '--porcelain').trim()).toBe('');
  });

  it('ends with a clear error when the baseline crashes, and --resume retries the baseline', async () => {
    const dir = makeWorkspace({ train: standInTrain({ exitCode: 1 }) });
    await expect(loop(dir, new ScriptedProposer([])).run()).rejects.toThrow(
      /the baseline crashed \(exited with code 1: RuntimeError: stand-in failure\); fix train.py/,
    );
    expect(journal(dir, 't1').at(-1)).toMatchObject({ type: 'run_end', reason: 'error' });
    // The researcher fixes train.py, commits, and resumes: the next experiment is a baseline again.
    fs.writeFileSync(path.join(dir, 'train.py'), standInTrain({ metric: '1.5' }));
    git(dir, '-c', 'user.name=t', '-c', 'user.email=t@t', 'commit', '-qam', 'fix');
    await loop(dir, new ScriptedProposer([]), { resume: true }).run();
    expect(experiments(dir, 't1').map(e => [e.n, e.status, e.description])).toEqual([
      [0, 'crash', 'baseline'],
      [1, 'keep', 'baseline'],
    ]);
  });
});

/** A train.py that trains (sleeps) in steps until `budget` (a Python expression) has passed, and reports its own clock. */
function timedTrain(budget: string, metric: string): string {
  return `import os, time
TIME_BUDGET = ${budget}
t = 0.0
while t < TIME_BUDGET:
    t0 = time.time()
    time.sleep(0.05)
    t += time.time() - t0
print("---")
print("val_bpb:          ${metric}")
print(f"training_seconds: {t:.2f}")
`;
}

describe('the budget trained', () => {
  const honours = 'float(os.environ["AUTORESEARCH_BUDGET_S"])';
  // A 2 s budget: the fixed 0.3 s is under half of it (the rule's floor), and a loop that honours it
  // would need a 6 s step to pass the rule's ceiling (2 × 1.5 + 5), so load cannot flip either side.
  const PROGRAM = '---\nbudget_s: 2\ntimeout_s: 20\n---\nGo.\n';
  const WARNING =
    /budget ignored: the run trained 0\.\d s \(its training_seconds\) for a budget of 2 s; make train\.py train for AUTORESEARCH_BUDGET_S seconds/;

  it('warns in the run log about a run that ignores AUTORESEARCH_BUDGET_S, and only about it', async () => {
    const dir = makeWorkspace({ program: PROGRAM, train: timedTrain(honours, '1.000000') });
    const proposer = new ScriptedProposer([
      { description: 'fixed budget', rationale: '', files: { 'train.py': timedTrain('0.3', '0.900000') } },
      { description: 'budget from the engine', rationale: '', files: { 'train.py': timedTrain(honours, '0.800000') } },
    ]);
    const l = loop(dir, proposer, { overrides: { noise_runs: 1 } });
    const notes: string[] = [];
    l.on('note', (text: string) => notes.push(text));
    await l.run();

    const exps = experiments(dir, 't1');
    expect(exps.map(e => [e.description, e.status])).toEqual([
      ['baseline', 'keep'],
      ['fixed budget', 'keep'],
      ['budget from the engine', 'keep'],
    ]);
    expect(exps[0].summary.training_seconds).toBeGreaterThanOrEqual(2);
    expect(exps[1].summary.training_seconds).toBeLessThan(1);
    // One note (other notes, such as the sandbox's, aside), for #1 only.
    const warnings = notes.filter(x => /budget ignored/.test(x));
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(new RegExp(`^#1: ${WARNING.source}`));
    // The run's log ends with it, as one line; the honouring runs' logs have no such line.
    const logTail = (e: ExperimentRecord) =>
      fs
        .readFileSync(e.log_path as string, 'utf8')
        .trimEnd()
        .split('\n')
        .at(-1);
    expect(logTail(exps[1])).toBe(`autoresearch: ${warnings[0].replace(/^#1: /, '')}`);
    for (const e of [exps[0], exps[2]])
      expect(fs.readFileSync(e.log_path as string, 'utf8')).not.toMatch(/budget ignored/);
  });

  it('the command line prints the warning once, above the line of its experiment', async () => {
    const dir = makeWorkspace({ program: PROGRAM, train: timedTrain('0.3', '1.000000') });
    const r = await cli(['run', dir, '--tag', 't1', '--max-experiments', '0', '--noise-runs', '1']);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const lines = r.stdout.trim().split('\n');
    const warned = lines.flatMap((x, i) => (WARNING.test(x) ? [i] : []));
    expect(warned).toHaveLength(1);
    expect(lines[warned[0]]).toMatch(/^#0: budget ignored: /);
    expect(warned[0]).toBeLessThan(lines.findIndex(x => /^# {2}0 {2}keep /.test(x)));
  });
});

describe('stop conditions', () => {
  it('--hours stops starting experiments once the time is up', async () => {
    const hours = 1.5 / 3600;
    const dir = makeWorkspace({ train: standInTrain({ sleep: 0.5 }) });
    const end = await loop(
      dir,
      new ScriptedProposer(
        Array.from({ length: 50 }, (_, i) => trainProposal(`p${i}`, { metric: String(2 + i), sleep: 0.5 })),
      ),
      { hours, overrides: { noise_runs: 1 } },
    ).run();
    // Asserted from the journal's own timestamps, not from how many experiments fit in 1.5 s
    // (that count depends on the machine's load). The loop fixes its deadline after writing
    // run_start and before the baseline's experiment_start, so it lies between those two plus 1.5 s.
    expect(end.reason).toBe('hours');
    const records = journal(dir, 't1');
    const at = (r: JournalRecord) => Date.parse(r.ts);
    const starts = records.filter(r => r.type === 'experiment_start');
    const runStart = at(records.find(r => r.type === 'run_start') as JournalRecord);
    const latestDeadline = at(starts[0]) + hours * 3600_000;
    // No experiment started after the time was up, though proposals were left ...
    expect(starts.length).toBeLessThan(51);
    for (const s of starts) expect(at(s)).toBeLessThan(latestDeadline);
    // ... and the loop did not stop before it: the run ended once the time was up, every started experiment finished.
    expect(at(records.at(-1) as JournalRecord)).toBeGreaterThanOrEqual(runStart + hours * 3600_000);
    expect(experiments(dir, 't1').map(e => e.n)).toEqual(starts.map(s => s.n));
  });

  it('--max-experiments counts proposals, not the baseline', async () => {
    const dir = makeWorkspace();
    const end = await loop(
      dir,
      new ScriptedProposer(Array.from({ length: 5 }, (_, i) => trainProposal(`p${i}`, { metric: String(2 + i) }))),
      { maxExperiments: 2 },
    ).run();
    expect(end.reason).toBe('max-experiments');
    expect(experiments(dir, 't1').map(e => e.description)).toEqual(['baseline', 'p0', 'p1']);
  });
});
