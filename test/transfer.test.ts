/**
 * The transfer study on a real run: a real loop on a real git repository, a stand-in train.py
 * that reads AUTORESEARCH_SCALE, and the bundled CLI replaying the kept commits at 2×.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { parseProgram } from '../src/core/config/program';
import { directionVerdict, scaleLabel, type TransferSummary } from '../src/core/study/transfer';
import { parseStudyJournal, type StudyRunRecord } from '../src/core/study/transfer-journal';
import { SubprocessExecutor } from '../src/engine/executor/subprocess';
import { Loop } from '../src/engine/run/setup';
import { resolvePython } from '../src/engine/workspace/python';
import {
  cli,
  experiments,
  finished,
  git,
  makeWorkspace,
  ScriptedProposer,
  startCli,
  waitFor,
} from './helpers/workspace';

/**
 * A stand-in whose metric is set by four switches: A and B help at both scales, C helps at the
 * search scale and hurts at 2× (it reverses), D hurts everywhere. Each switch is on a line of its
 * own between comments, so reverting one change alone merges cleanly; a seed-dependent wobble of
 * up to 0.002 gives the runs a noise to measure.
 */
function standIn(s: { A?: number; B?: number; C?: number; D?: number } = {}): string {
  return [
    'import os, time',
    '# switch A',
    `A = ${s.A ?? 0}`,
    '# switch B',
    `B = ${s.B ?? 0}`,
    '# switch C',
    `C = ${s.C ?? 0}`,
    '# switch D',
    `D = ${s.D ?? 0}`,
    '# the scale and the run',
    'scale = float(os.environ.get("AUTORESEARCH_SCALE", "1"))',
    'time.sleep(float(os.environ.get("STANDIN_SLEEP", "0")))',
    'seed = int(os.environ.get("AUTORESEARCH_SEED", "0"))',
    'wobble = (seed * 7919 % 97) / 97 * 0.002',
    'm = 1.0 - 0.1 * (scale - 1) - 0.05 * A - 0.04 * B + (-0.03 if scale == 1 else 0.03) * C + 0.05 * D + wobble',
    'print("---")',
    'print("val_bpb:          %.6f" % m)',
    'print("training_seconds: " + os.environ.get("AUTORESEARCH_BUDGET_S", "1"))',
    'print("depth:            %d" % round(4 * scale))',
    '',
  ].join('\n');
}

const PROGRAM = '---\nbudget_s: 1\ntimeout_s: 20\nnoise_runs: 2\n---\nMake val_bpb lower.\n';

function proposal(description: string, s: Parameters<typeof standIn>[0]) {
  return { description, rationale: `test: ${description}`, files: { 'train.py': standIn(s) } };
}

/** A finished run on a fresh workspace, with the given proposals. */
async function makeRun(proposals: ReturnType<typeof proposal>[]): Promise<string> {
  const dir = makeWorkspace({ program: PROGRAM, train: standIn() });
  await new Loop({
    dir,
    tag: 't1',
    proposer: new ScriptedProposer(proposals),
    executor: new SubprocessExecutor(1),
    python: resolvePython(),
    signal: new AbortController().signal,
  }).run();
  return dir;
}

/** A copy of a workspace (repository, journal and all), so each test studies the same run afresh. */
function copyOf(dir: string): string {
  const to = fs.mkdtempSync(path.join(os.tmpdir(), 'ar-tr-'));
  fs.cpSync(dir, to, { recursive: true });
  return to;
}

function studyRuns(dir: string): StudyRunRecord[] {
  const text = fs.readFileSync(path.join(dir, '.autoresearch', 't1', 'transfer', 'journal.jsonl'), 'utf8');
  return parseStudyJournal(text).filter((r): r is StudyRunRecord => r.type === 'study_run');
}

let searched: string;

beforeAll(async () => {
  searched = await makeRun([
    proposal('A on', { A: 1 }),
    proposal('B on', { A: 1, B: 1 }),
    proposal('D on (worse)', { A: 1, B: 1, D: 1 }),
    proposal('C on', { A: 1, B: 1, C: 1 }),
    proposal('A stronger', { A: 2, B: 1, C: 1 }),
  ]);
  const kept = experiments(searched, 't1').filter(e => e.status === 'keep');
  // The run itself must have kept what the stand-in says helps, or the study below tests nothing.
  expect(kept.map(e => e.description)).toEqual(['baseline', 'A on', 'B on', 'C on', 'A stronger']);
}, 120_000);

describe('autoresearch transfer', () => {
  it('replays each kept commit at 2× in a worktree and gives each change its verdict', async () => {
    const dir = copyOf(searched);
    const head = git(dir, 'rev-parse', 'HEAD');
    const branch = git(dir, 'rev-parse', 'autoresearch/t1');
    const r = await cli(['transfer', dir, '--env', 'AUTORESEARCH_SCALE=2', '--runs', '2', '--json']);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const out = JSON.parse(r.stdout) as TransferSummary;
    expect(out.changes.map(c => [c.description, c.verdict])).toEqual([
      ['A on', 'transferred'],
      ['B on', 'transferred'],
      ['C on', 'reversed'],
      ['A stronger', 'transferred'],
    ]);
    for (const c of out.changes) {
      expect(Object.keys(c)).toEqual(
        expect.arrayContaining(['commit', 'description', 'delta_search', 'delta_transfer', 'verdict']),
      );
      expect(c.se_transfer).toBeGreaterThan(0);
    }
    expect(out.changes[2].delta_search).toBeCloseTo(-0.03, 2);
    expect(out.changes[2].delta_transfer).toBeCloseTo(0.03, 2);
    expect(out.summary).toMatchObject({ changes: 4, transferred: 3, reversed: 1, neutral: 0, complete: true });
    expect(out.summary.total_gain_search).toBeCloseTo(0.17, 2);
    expect(out.summary.total_gain_transfer).toBeCloseTo(0.11, 2);
    expect(out.summary.line).toMatch(/^3 of 4 changes transferred; total gain 0\.1\d+ at search scale, 0\.1\d+ at 2×$/);
    // Baseline and four keeps, two runs each, at the scale asked for; the work tree and branch untouched.
    const runs = studyRuns(dir);
    expect(runs).toHaveLength(10);
    expect(runs.every(x => x.kind === 'transfer' && x.summary.depth === 8)).toBe(true);
    expect(git(dir, 'rev-parse', 'HEAD')).toBe(head);
    expect(git(dir, 'rev-parse', 'autoresearch/t1')).toBe(branch);
    expect(git(dir, 'status', '--porcelain')).toBe('');
    expect(git(dir, 'worktree', 'list').trim().split('\n')).toHaveLength(1);
    const summaryFile = JSON.parse(fs.readFileSync(path.join(dir, '.autoresearch/t1/transfer/summary.json'), 'utf8'));
    expect(summaryFile.summary.line).toBe(out.summary.line);

    // The table names the scale; a rerun finds every run made and makes none.
    const again = await cli(['transfer', dir, '--env', 'AUTORESEARCH_SCALE=2', '--runs', '2']);
    expect(again.code).toBe(0);
    expect(again.stdout).toContain('3 of 4 changes transferred');
    expect(again.stdout).toMatch(/C on .*reversed/);
    expect(again.stdout).toContain('0 runs made now');
    expect(studyRuns(dir)).toHaveLength(10);
  });

  it('--ablate removes each change alone from the best, and reports a revert that conflicts', async () => {
    const dir = copyOf(searched);
    const r = await cli(['transfer', dir, '--env', 'AUTORESEARCH_SCALE=2', '--ablate', '--json']);
    expect(r.code).toBe(0);
    const out = JSON.parse(r.stdout) as TransferSummary;
    const ab = Object.fromEntries(out.changes.map(c => [c.description, c.ablate]));
    // A stronger rewrote the line A on changed: that revert cannot apply alone.
    expect(ab['A on']).toMatchObject({ verdict: 'conflict', runs: 0 });
    expect(ab['A on']?.conflict).toMatch(/^conflicts in train\.py: a later kept change rewrote the same lines$/);
    expect(ab['B on']).toMatchObject({ verdict: 'holds', runs: 2 });
    expect(ab['B on']?.delta).toBeCloseTo(-0.04, 2);
    expect(ab['C on']?.delta).toBeCloseTo(-0.03, 2);
    expect(ab['A stronger']?.delta).toBeCloseTo(-0.05, 2);
    expect(ab['A stronger']?.delta_kept).toBeLessThan(0);
    const ablations = studyRuns(dir).filter(x => x.kind === 'ablate');
    expect(ablations).toHaveLength(6);
    // At the search scale: the study's environment is not passed to the ablation runs.
    expect(ablations.every(x => x.summary.depth === 4)).toBe(true);
    expect(git(dir, 'status', '--porcelain')).toBe('');
  });

  it('resumes after kill -9 and runs nothing twice', async () => {
    const dir = copyOf(searched);
    const args = ['transfer', dir, '--env', 'AUTORESEARCH_SCALE=2', '--env', 'STANDIN_SLEEP=0.4', '--runs', '2'];
    const child = startCli(args);
    const done = finished(child);
    const journal = path.join(dir, '.autoresearch/t1/transfer/journal.jsonl');
    await waitFor(() => fs.existsSync(journal) && studyRuns(dir).length >= 3, 60_000, 'three study runs');
    child.kill('SIGKILL');
    await done;
    const before = studyRuns(dir).length;
    expect(before).toBeLessThan(10);
    const r = await cli(args);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(`${10 - before} runs made now`);
    const runs = studyRuns(dir);
    const keys = runs.map(x => `${x.commit}:${x.k}`);
    expect(new Set(keys).size).toBe(keys.length);
    expect(runs).toHaveLength(10);
    expect(r.stdout).toContain('3 of 4 changes transferred');
    expect(r.stdout).toContain('at AUTORESEARCH_SCALE=2 STANDIN_SLEEP=0.4');
  });

  it("takes the scale and budget from program.md's transfer: front matter when no flag names them", async () => {
    const dir = copyOf(searched);
    const program = PROGRAM.replace(
      'noise_runs: 2\n',
      'noise_runs: 2\ntransfer:\n  env:\n    AUTORESEARCH_SCALE: 3\n  budget_s: 2\n',
    );
    expect(parseProgram(program).frontMatter.transfer).toEqual({ env: { AUTORESEARCH_SCALE: '3' }, budget_s: 2 });
    expect(() => parseProgram(program.replace('budget_s: 2', 'budget: 2'))).toThrow(
      /"transfer" has unknown key "budget"/,
    );
    fs.writeFileSync(path.join(dir, 'program.md'), program);
    const r = await cli(['transfer', dir, '--json']);
    expect(r.code).toBe(0);
    const out = JSON.parse(r.stdout) as TransferSummary;
    expect(out).toMatchObject({ scale: '3×', budget_s: 2, runs: 2 });
    const runs = studyRuns(dir);
    expect(runs.every(x => x.summary.depth === 12 && x.summary.training_seconds === 2)).toBe(true);
    expect(out.summary.line).toMatch(/^3 of 4 changes transferred; .* at 3×$/);
  });

  it('refuses an --env without = in one line, exit 1', async () => {
    const r = await cli(['transfer', searched, '--env', 'AUTORESEARCH_SCALE']);
    expect(r.code).toBe(1);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).toMatch(/--env "AUTORESEARCH_SCALE" must be KEY=VALUE/);
  });

  it('says so when the run kept nothing beyond the baseline', async () => {
    const dir = await makeRun([proposal('D on (worse)', { D: 1 })]);
    const r = await cli(['transfer', dir, '--env', 'AUTORESEARCH_SCALE=2']);
    expect(r.code).toBe(0);
    expect(r.stdout.trim()).toBe('run t1 kept no change beyond the baseline: nothing to transfer');
    expect(fs.existsSync(path.join(dir, '.autoresearch/t1/transfer/journal.jsonl'))).toBe(false);
  });
});

describe('the verdict rule', () => {
  it('is significant past keep_sigma standard errors of the difference, in the direction of the search gain', () => {
    expect(directionVerdict(-0.03, -0.02, 0.005, 2)).toBe('same');
    expect(directionVerdict(-0.03, 0.02, 0.005, 2)).toBe('opposite');
    expect(directionVerdict(-0.03, -0.01, 0.005, 2)).toBe('neutral');
    expect(directionVerdict(-0.03, -0.0101, 0.005, 2)).toBe('same');
    // A deterministic metric (σ 0): any difference counts, as under the strict keep rule.
    expect(directionVerdict(-0.03, 0.0001, 0, 2)).toBe('opposite');
    expect(directionVerdict(-0.03, null, null, 2)).toBe('unmeasured');
  });

  it('names the scale', () => {
    expect(scaleLabel({ AUTORESEARCH_SCALE: '2' })).toBe('2×');
    expect(scaleLabel({ AUTORESEARCH_SCALE: '2', N_EMBD: '512' })).toBe('AUTORESEARCH_SCALE=2 N_EMBD=512');
  });
});
