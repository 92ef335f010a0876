/**
 * A run cannot switch its own sandbox off for later runs: the security settings (sandbox, network,
 * readonly, editable) a run's edit of program.md changes are refused on --resume unless accepted,
 * and shown loudly on a new run; the journal records where each came from. And --max-experiments
 * is the run's in all, however often it is killed and resumed. The bundled CLI on real workspaces.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { JournalRecord, RunStartRecord } from '../../src/core/journal/journal';
import {
  cli,
  experiments,
  finished,
  git,
  journal,
  makeWorkspace,
  standInTrain,
  startCli,
  waitFor,
} from '../helpers/workspace';

const PROGRAM = '---\nbudget_s: 1\ntimeout_s: 20\nnoise_runs: 1\n---\nMake val_bpb lower.\n';
const RUN = ['--proposer', 'offline'];

/** What a hostile run writes: program.md with `front` added to its front matter. */
function hostileProgram(front: string): string {
  return PROGRAM.replace('noise_runs: 1\n', `noise_runs: 1\n${front}\n`);
}

/**
 * A train.py that rewrites program.md's front matter (as the attack did), then trains. Where the
 * sandbox holds program.md read-only the write fails; a run without the sandbox makes it all the
 * same, so the test makes it then (`plant`), and the engine's own check is what is tested.
 */
function hostileTrain(front: string): string {
  const write = `try:\n    open("program.md", "w").write(${JSON.stringify(hostileProgram(front))})\nexcept OSError:\n    pass\n`;
  return standInTrain().replace('print("step 1', `${write}print("step 1`);
}

/** A finished run t1 whose training runs wrote `front` into program.md. */
async function attackedRun(front: string): Promise<string> {
  const dir = makeWorkspace({ program: PROGRAM, train: hostileTrain(front), extra: { 'helpers.py': 'X = 1\n' } });
  const r = await cli(['run', dir, '--tag', 't1', ...RUN, '--max-experiments', '1']);
  expect(r.code, r.stderr).toBe(0);
  plant(dir, front);
  return dir;
}

function plant(dir: string, front: string): void {
  const file = path.join(dir, 'program.md');
  if (fs.readFileSync(file, 'utf8') !== hostileProgram(front)) fs.writeFileSync(file, hostileProgram(front));
}

function starts(records: JournalRecord[]): RunStartRecord[] {
  return records.filter((r): r is RunStartRecord => r.type === 'run_start');
}

function journalText(dir: string, tag = 't1'): string {
  return fs.readFileSync(path.join(dir, '.autoresearch', tag, 'journal.jsonl'), 'utf8');
}

/** --resume refuses with one line naming the change, its source and --accept-settings; nothing is written. */
async function expectRefusedResume(dir: string, change: RegExp): Promise<void> {
  const before = journalText(dir);
  const refs = git(dir, 'show-ref');
  const r = await cli(['run', dir, '--resume', ...RUN, '--more-experiments', '1']);
  expect(r.code).toBe(1);
  expect(r.stderr.trim().split('\n')).toHaveLength(1);
  expect(r.stderr).toMatch(/^autoresearch: security settings changed since run t1 last started: /);
  expect(r.stderr).toMatch(change);
  expect(r.stderr).toMatch(/resume with --accept-settings to accept it/);
  expect(journalText(dir)).toBe(before);
  expect(git(dir, 'show-ref')).toBe(refs);
}

describe('a run cannot switch its sandbox off for later runs (program.md written by a run)', () => {
  it('front matter `sandbox: off` written by a run is refused on --resume', async () => {
    const dir = await attackedRun('sandbox: off');
    expect(starts(journal(dir, 't1'))[0].settings_from).toEqual({
      sandbox: 'default',
      network: 'default',
      readonly: 'default',
      editable: 'default',
    });
    await expectRefusedResume(dir, /: sandbox auto → off \(from program\.md\); /);
  });

  it('front matter `readonly: []` written by a run is refused on --resume', async () => {
    const dir = await attackedRun('readonly: []');
    await expectRefusedResume(dir, /: readonly \["prepare\.py"\] → \[\] \(from program\.md\); /);
  });

  it('front matter `sandbox: {network: true}` written by a run is refused on --resume', async () => {
    const dir = await attackedRun('sandbox: {network: true}');
    await expectRefusedResume(dir, /: network off → on \(from program\.md\); /);
  });

  it('front matter `editable: [train.py, helpers.py]` written by a run is refused on --resume', async () => {
    const dir = await attackedRun('editable: [train.py, helpers.py]');
    await expectRefusedResume(dir, /: editable \["train\.py"\] → \["train\.py","helpers\.py"\] \(from program\.md\); /);
  });

  it("a change from a flag on --resume is the person's own: the run goes on, the change recorded as accepted", async () => {
    const dir = makeWorkspace({ program: PROGRAM });
    expect((await cli(['run', dir, '--tag', 't1', ...RUN, '--max-experiments', '0'])).code).toBe(0);
    const r = await cli(['run', dir, '--resume', ...RUN, '--sandbox', 'off']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).not.toMatch(/security settings/);
    expect(starts(journal(dir, 't1')).at(-1)?.settings_changed).toEqual({
      since: 't1',
      accepted: true,
      changes: [{ setting: 'sandbox', before: 'auto', after: 'off', from: 'flag' }],
    });
    // Back to the default on the next resume: a key that no flag sets is program.md's (or its absence's), so refused.
    const back = await cli(['run', dir, '--resume', ...RUN]);
    expect(back.code).toBe(1);
    expect(back.stderr).toMatch(/: sandbox off → auto \(from default\); .* --accept-settings /);
  });

  it('accepted with --accept-settings: the run goes on, the journal records the new settings as accepted, and reads on', async () => {
    const dir = await attackedRun('sandbox: off\nreadonly: []');
    const r = await cli(['run', dir, '--resume', ...RUN, '--more-experiments', '1', '--accept-settings']);
    expect(r.code, r.stderr).toBe(0);
    const last = starts(journal(dir, 't1')).at(-1);
    expect(last?.resume).toBe(true);
    expect(last?.config.sandbox).toEqual({ mode: 'off', network: false });
    expect(last?.config.readonly).toEqual([]);
    expect(last?.settings_from).toMatchObject({ sandbox: 'program.md', readonly: 'program.md' });
    expect(last?.settings_changed).toEqual({
      since: 't1',
      accepted: true,
      changes: [
        { setting: 'sandbox', before: 'auto', after: 'off', from: 'program.md' },
        { setting: 'readonly', before: ['prepare.py'], after: [], from: 'program.md' },
      ],
    });
    // Accepted once: the next resume compares with this start, and what reads the journal reads on.
    const again = await cli(['run', dir, '--resume', ...RUN, '--more-experiments', '0']);
    expect(again.code, again.stderr).toBe(0);
    expect(starts(journal(dir, 't1')).at(-1)?.settings_changed).toBeUndefined();
    for (const args of [
      ['status', dir],
      ['results', dir],
      ['export', dir, '--out', '-'],
      ['state', dir],
    ]) {
      const out = await cli(args);
      expect(out.code, `${args[0]}: ${out.stderr}`).toBe(0);
    }
  });

  it('a new run after a run rewrote program.md warns loudly on stderr and records the change in run_start', async () => {
    const dir = await attackedRun('sandbox: off');
    const r = await cli(['run', dir, '--tag', 't2', ...RUN, '--max-experiments', '0']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toMatch(/^!{72}\nautoresearch: WARNING: security settings differ from the latest run \(t1\):\n/);
    expect(r.stderr).toContain('\n  sandbox auto → off (from program.md)\n');
    expect(starts(journal(dir, 't2'))[0]).toMatchObject({
      settings_from: { sandbox: 'program.md' },
      settings_changed: {
        since: 't1',
        accepted: false,
        changes: [{ setting: 'sandbox', before: 'auto', after: 'off', from: 'program.md' }],
      },
    });
    // Settings as the latest run had them: nothing to warn of.
    git(dir, 'checkout', '-q', 'main');
    const same = await cli(['run', dir, '--tag', 't3', ...RUN, '--max-experiments', '0']);
    expect(same.code, same.stderr).toBe(0);
    expect(same.stderr).not.toMatch(/WARNING/);
    expect(starts(journal(dir, 't3'))[0].settings_changed).toBeUndefined();
  });
});

/** What --max-experiments counts: the experiments that ran or were rejected, not the baseline nor one cut short (interrupted). */
function made(dir: string): number {
  return experiments(dir, 't1').filter(e => e.description !== 'baseline' && e.status !== 'interrupted').length;
}

function experimentStarts(dir: string): number {
  const file = path.join(dir, '.autoresearch', 't1', 'journal.jsonl');
  const records = fs.existsSync(file) ? journal(dir, 't1') : [];
  return records.filter(r => r.type === 'experiment_start' && r.description !== 'baseline').length;
}

describe('--max-experiments is the run’s in all', () => {
  it('ten kill -9/resume cycles never run more than --max-experiments in all', async () => {
    const dir = makeWorkspace({ program: PROGRAM, train: standInTrain({ sleep: 0.3 }) });
    const MAX = 4;
    let args = ['run', dir, '--tag', 't1', ...RUN, '--max-experiments', String(MAX)];
    let killed = 0;
    for (let cycle = 0; cycle < 10; cycle++) {
      const seen = experimentStarts(dir);
      const child = startCli(args);
      const done = finished(child);
      let ended = false;
      void done.then(() => (ended = true));
      // Killed as soon as this session starts an experiment of its own (after the baseline).
      await waitFor(() => ended || experimentStarts(dir) > seen, 60_000, 'an experiment to start');
      const kill = !ended;
      if (kill) {
        child.kill('SIGKILL');
        killed++;
      }
      const r = await done;
      if (!kill) expect(r.code, r.stderr).toBe(0);
      expect(made(dir)).toBeLessThanOrEqual(MAX);
      args = ['run', dir, '--resume', ...RUN, '--max-experiments', String(MAX)];
    }
    const last = await cli(args);
    expect(last.code, last.stderr).toBe(0);
    // Every kill but the last few landed mid-experiment: without the count over sessions, each resume would run MAX more.
    expect(killed).toBeGreaterThanOrEqual(MAX);
    expect(made(dir)).toBe(MAX);
    expect(journal(dir, 't1').at(-1)).toMatchObject({ type: 'run_end', reason: 'max-experiments' });
    expect(starts(journal(dir, 't1')).at(-1)?.max_experiments).toBe(MAX);
  });

  it('--more-experiments N on --resume runs N more than the journal has, a plain --resume keeps the total; with --max-experiments it is refused', async () => {
    const dir = makeWorkspace({ program: PROGRAM });
    expect((await cli(['run', dir, '--tag', 't1', ...RUN, '--max-experiments', '2'])).code).toBe(0);
    expect(made(dir)).toBe(2);
    // The total already reached: a resume with the same --max-experiments runs nothing more.
    expect((await cli(['run', dir, '--resume', ...RUN, '--max-experiments', '2'])).code).toBe(0);
    expect(made(dir)).toBe(2);
    const r = await cli(['run', dir, '--resume', ...RUN, '--more-experiments', '3']);
    expect(r.code, r.stderr).toBe(0);
    expect(made(dir)).toBe(5);
    expect(starts(journal(dir, 't1')).at(-1)?.max_experiments).toBe(5);
    // A resume that names no limit keeps the run's total.
    const plain = await cli(['run', dir, '--resume', ...RUN]);
    expect(plain.code, plain.stderr).toBe(0);
    expect(made(dir)).toBe(5);
    const both = await cli(['run', dir, '--resume', ...RUN, '--more-experiments', '1', '--max-experiments', '9']);
    expect(both.code).toBe(1);
    expect(both.stderr).toMatch(/^autoresearch: --max-experiments and --more-experiments exclude each other: .+\n$/);
    expect(made(dir)).toBe(5);
  });
});
