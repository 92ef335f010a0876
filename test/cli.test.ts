/** The bundled `autoresearch` command, as a user runs it: setup errors, signals, stop, kill -9 and resume. */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { spawn } from 'node:child_process';
import { defaultTag, freeTag } from '../src/core/journal/layout';
import { expectKillsResolved, inFlightAfterKill, type InFlightAtKill } from './helpers/kills';
import {
  alive,
  cli,
  ENGINE,
  experiments,
  finished,
  git,
  journal,
  makeWorkspace,
  standInTrain,
  startCli,
  waitFor,
} from './helpers/workspace';

const RUN = ['--tag', 't1', '--max-experiments', '2'];

/** Asserts the run refused to start: one line on stderr, exit 1, nothing changed in the repository. */
async function expectRefusal(
  dir: string,
  args: string[],
  message: RegExp,
  env?: Record<string, string>,
): Promise<void> {
  const before = fs.existsSync(path.join(dir, '.git')) ? git(dir, 'show-ref') : '';
  const r = await cli(['run', dir, ...args], { env });
  expect(r.code).toBe(1);
  expect(r.stderr).toMatch(message);
  expect(r.stderr.trim().split('\n')).toHaveLength(1);
  expect(r.stderr).toMatch(/^autoresearch: /);
  if (before) {
    expect(git(dir, 'show-ref')).toBe(before);
  }
  expect(fs.existsSync(path.join(dir, '.autoresearch', 't1', 'journal.jsonl'))).toBe(false);
  expect(fs.existsSync(path.join(dir, '.autoresearch', 'engine.json'))).toBe(false);
}

describe('autoresearch run: setup errors name the fix and change nothing', () => {
  it('program.md missing', async () => {
    await expectRefusal(makeWorkspace({ program: null }), RUN, /program.md is missing; write the instructions/);
  });
  it('program.md empty (front matter only)', async () => {
    await expectRefusal(makeWorkspace({ program: '---\nbudget_s: 1\n---\n\n' }), RUN, /program.md is empty/);
  });
  it('train.py missing', async () => {
    await expectRefusal(makeWorkspace({ train: null }), RUN, /train.py is missing in .*; it is listed as editable/);
  });
  it('not a git repository', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ar-nogit-'));
    fs.writeFileSync(path.join(dir, 'program.md'), 'Go.\n');
    await expectRefusal(dir, RUN, /is not the top folder of a git repository; run git init/);
    expect(fs.readdirSync(dir)).toEqual(['program.md']);
  });
  it('a folder that does not exist', async () => {
    const dir = path.join(os.tmpdir(), `ar-missing-${process.pid}`);
    const r = await cli(['run', dir, ...RUN]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/is not a folder; create one with: autoresearch init/);
    expect(fs.existsSync(dir)).toBe(false);
  });
  it('dirty tree', async () => {
    const dir = makeWorkspace();
    fs.appendFileSync(path.join(dir, 'train.py'), '# uncommitted\n');
    await expectRefusal(dir, RUN, /uncommitted changes \(train.py\); commit or stash them first/);
    expect(fs.readFileSync(path.join(dir, 'train.py'), 'utf8')).toContain('# uncommitted');
  });
  it('branch exists', async () => {
    const dir = makeWorkspace();
    git(dir, 'branch', 'autoresearch/t1');
    await expectRefusal(dir, RUN, /branch autoresearch\/t1 already exists; continue it with --resume/);
  });
  it('bad front matter', async () => {
    await expectRefusal(
      makeWorkspace({ program: '---\nbudget_s: fast\n---\nGo.\n' }),
      RUN,
      /bad front matter: "budget_s"/,
    );
    await expectRefusal(makeWorkspace({ program: '---\nmetrics: loss\n---\nGo.\n' }), RUN, /unknown key "metrics"/);
  });
  it('resume with nothing to resume', async () => {
    await expectRefusal(makeWorkspace(), ['--tag', 't1', '--resume'], /no run to resume/);
  });
  // The proposers' declarations (src/core/config/run-options.ts) word these; the CLI names no proposer itself.
  it('a proposer without its key, or an option that is not its own', async () => {
    const noKey = { ANTHROPIC_API_KEY: '' };
    await expectRefusal(
      makeWorkspace(),
      [...RUN, '--proposer', 'claude'],
      /^autoresearch: the claude proposer needs an API key: set ANTHROPIC_API_KEY, or use --proposer offline\n$/,
      noKey,
    );
    await expectRefusal(
      makeWorkspace(),
      [...RUN, '--model', 'claude-opus-4-8'],
      /^autoresearch: --model applies to the claude proposer, not offline\n$/,
      noKey,
    );
  });
});

describe('a second run the same day (one rule with the server and the panel: src/core/journal/layout.ts freeTag)', () => {
  it('without --tag it takes the first free <today>-n, said before it starts (a branch alone holds a tag); a taken --tag is refused', async () => {
    const dir = makeWorkspace();
    const today = defaultTag();
    const first = await cli(['run', dir, '--max-experiments', '1', '--noise-runs', '1']);
    expect(first.code, first.stderr).toBe(0);
    expect(first.stdout + first.stderr).not.toMatch(/is taken/);
    expect(experiments(dir, today)).toHaveLength(2); // the baseline and one experiment
    git(dir, 'checkout', '-q', 'main');
    git(dir, 'branch', `autoresearch/${today}-2`); // a branch without a journal holds its tag
    const second = await cli(['run', dir, '--max-experiments', '1', '--noise-runs', '1']);
    expect(second.code, second.stderr).toBe(0);
    expect(second.stdout + second.stderr).toContain(
      `run tag ${today}-3: ${today} is taken by an earlier run (continue it with --resume --tag ${today}, or name this run with --tag)`,
    );
    expect(experiments(dir, `${today}-3`)).toHaveLength(2);
    expect(experiments(dir, today)).toHaveLength(2); // the baseline and one experiment
    git(dir, 'checkout', '-q', 'main');
    const named = await cli(['run', dir, '--tag', today, '--max-experiments', '1']);
    expect(named.code).toBe(1);
    expect(named.stderr).toMatch(new RegExp(`branch autoresearch/${today} already exists; continue it with --resume`));
  });

  it('freeTag: today, then -2, -3… past every taken one; none left is an error naming --tag', () => {
    const taken = new Set(['dec1', 'dec1-2']);
    expect(freeTag(t => taken.has(t), 'dec1')).toBe('dec1-3');
    expect(freeTag(() => false, 'dec1')).toBe('dec1');
    expect(() => freeTag(() => true, 'dec1')).toThrow(/name this one with --tag/);
  });
});

describe('autoresearch state', () => {
  it("rewrites a run's state.json from its journal, silently; a run that is not there is a one-line error", async () => {
    const dir = makeWorkspace();
    expect((await cli(['run', dir, '--tag', 't1', '--max-experiments', '0', '--noise-runs', '1'])).code).toBe(0);
    const file = path.join(dir, '.autoresearch', 't1', 'state.json');
    const journalFile = path.join(dir, '.autoresearch', 't1', 'journal.jsonl');
    fs.rmSync(file, { force: true });

    const r = await cli(['state', dir]); // the latest run, as status picks it
    expect([r.code, r.stdout, r.stderr]).toEqual([0, '', '']);
    const state = JSON.parse(fs.readFileSync(file, 'utf8'));
    expect(state).toMatchObject({
      version: 1,
      tag: 't1',
      records: journal(dir, 't1').length,
      journal_bytes: fs.statSync(journalFile).size,
      status: 'stopped',
      experiments: 1,
      end: { reason: 'max-experiments' },
    });

    fs.writeFileSync(file, 'not json');
    expect((await cli(['state', dir, '--tag', 't1'])).code).toBe(0);
    expect(JSON.parse(fs.readFileSync(file, 'utf8'))).toEqual(state);

    for (const [where, args] of [
      ['a tag with no run', [dir, '--tag', 'nope']],
      ['a workspace with no run', [makeWorkspace()]],
    ] as const) {
      const bad = await cli(['state', ...args]);
      expect(bad.code, where).toBe(1);
      expect(bad.stderr, where).toMatch(/^autoresearch: [^\n]+\n$/);
    }
  });
});

describe('autoresearch run, stop, status, results', () => {
  it('prints plain lines when redirected, and status/results rebuild from the journal', async () => {
    const dir = makeWorkspace();
    const r = await cli(['run', dir, ...RUN]);
    expect(r.code).toBe(0);
    const lines = r.stdout.trim().split('\n');
    expect(lines[0]).toMatch(/^# {2}0 {2}keep +1\.\d{6} +×3 +baseline$/); // noise_runs 3: the baseline ran 3 times
    expect(lines).toHaveLength(4);
    expect(lines[3]).toMatch(/^run t1 ended \(max-experiments\); best \d\.\d{6} at [0-9a-f]{7} on autoresearch\/t1$/);
    expect(r.stdout).not.toContain('\x1b');

    const status = await cli(['status', dir]);
    expect(status.stdout).toMatch(/state: +stopped \(max-experiments\)/);
    expect(status.stdout).toMatch(/experiments: 3 — /);
    const results = await cli(['results', dir]);
    const table = results.stdout.replace(/\n$/, '').split('\n');
    expect(table).toHaveLength(8);
    expect(table[0]).toMatch(/^ +# +status +metric +delta +cost +± se ×runs +description$/);
    expect(table[1]).toMatch(/^# {2}0 {2}keep +1\.\d{6} +— {2}×3 +baseline$/);
    expect(table[4]).toBe('total: 3 experiments, $0.0000, 0 tokens');
    // The stand-in's metric is deterministic: the baseline's repeats measure σ = 0, the strict rule.
    expect(table[5]).toMatch(/^noise: σ 0 over 2 repeats: a deterministic metric, any improvement is kept$/);
    expect(table[6]).toMatch(
      /^trust: 5 runs: 3 first runs, 2 noise, 0 confirmation, 0 re-measures of the best \(2 spent on trust\)/,
    );
    expect(table[7]).toMatch(
      /^trust: (no confirmed gain yet \(\d keeps\)|0\.\d{4} gained in \d keeps?: [\d.]+ accelerator-min and \$0\.0000 per 0\.001)$/,
    );
    const tsv = await cli(['results', dir, '--tsv']);
    expect(tsv.stdout).toBe(fs.readFileSync(path.join(dir, 'results.tsv'), 'utf8'));
  });

  it('SIGINT ends the experiment in flight as interrupted and leaves the tree clean on the best commit', async () => {
    const dir = makeWorkspace({ train: standInTrain({ sleep: 30 }) });
    const child = startCli(['run', dir, '--tag', 't1']);
    const done = finished(child);
    await waitFor(() => journalHas(dir, r => r.type === 'experiment_start'), 30_000, 'the baseline to start');
    await new Promise(r => setTimeout(r, 500));
    child.kill('SIGINT');
    const r = await done;
    expect(r.code).toBe(0);
    const exps = experiments(dir, 't1');
    expect(exps).toHaveLength(1);
    expect(exps[0]).toMatchObject({ status: 'interrupted', reason: 'stopped by the user while training' });
    expect(journal(dir, 't1').at(-1)).toMatchObject({ type: 'run_end', reason: 'signal' });
    expect(git(dir, 'status', '--porcelain').trim()).toBe('');
    expect(fs.existsSync(path.join(dir, '.autoresearch', 'engine.json'))).toBe(false);
  });

  it('Ctrl-C in a terminal (SIGINT to the whole foreground group, pressed twice) still stops cleanly', async () => {
    const dir = makeWorkspace({ train: standInTrain({ sleep: 0.4 }) });
    // The engine leads its own group, as a shell's foreground job does; the terminal signals the group.
    const child = spawn(process.execPath, [ENGINE, 'run', dir, '--tag', 't1'], {
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const done = finished(child);
    await waitFor(() => journalHas(dir, r => r.type === 'experiment' && r.n >= 2), 30_000, 'two experiments');
    process.kill(-(child.pid as number), 'SIGINT');
    await new Promise(r => setTimeout(r, 150));
    try {
      process.kill(-(child.pid as number), 'SIGINT');
    } catch {
      // already gone
    }
    const r = await done;
    expect(r.stderr).not.toMatch(/internal error/);
    expect(r.code).toBe(0);
    expect(journal(dir, 't1').at(-1)).toMatchObject({ type: 'run_end', reason: 'signal' });
    expect(git(dir, 'status', '--porcelain').trim()).toBe('');
  });

  it('autoresearch stop does the same from another shell, and a second engine is refused meanwhile', async () => {
    const dir = makeWorkspace({ train: standInTrain({ sleep: 30 }) });
    const child = startCli(['run', dir, '--tag', 't1']);
    const done = finished(child);
    await waitFor(() => journalHas(dir, r => r.type === 'experiment_start'), 30_000, 'the baseline to start');
    const second = await cli(['run', dir, '--tag', 't2']);
    expect(second.code).toBe(1);
    expect(second.stderr).toMatch(
      /an engine is already running on .* \(pid \d+, tag t1\); stop it with: autoresearch stop/,
    );
    const status = await cli(['status', dir]);
    expect(status.stdout).toMatch(/state: +running \(engine pid \d+\)/);
    expect(status.stdout).toMatch(/in flight: +#0 baseline/);
    const stop = await cli(['stop', dir]);
    expect(stop.code).toBe(0);
    expect(stop.stdout).toMatch(/stopped the engine \(pid \d+, run t1\)/);
    expect((await done).code).toBe(0);
    expect(journal(dir, 't1').at(-1)).toMatchObject({ type: 'run_end', reason: 'stop' });
    expect(experiments(dir, 't1')[0].status).toBe('interrupted');
  });

  it('after kill -9 mid-experiment, --resume records it as interrupted and goes on: nothing lost, nothing twice', async () => {
    const dir = makeWorkspace({ train: standInTrain({ sleep: 1.5 }) });
    const child = startCli(['run', dir, '--tag', 't1']);
    const done = finished(child);
    await waitFor(
      () => journalHas(dir, r => r.type === 'experiment_start' && r.n === 2),
      60_000,
      'experiment 2 to start',
    );
    await waitFor(() => runGroups(dir).length === 2, 10_000, 'the training run to start');
    const [guardGroup, commandGroup] = runGroups(dir);
    child.kill('SIGKILL');
    await done;
    // The engine's death ends its training run (the run guard's parent-death signal).
    await waitFor(() => !alive(guardGroup) && !alive(commandGroup), 15_000, 'the training run to end with its engine');

    const r = await cli(['run', dir, '--resume', '--more-experiments', '2']);
    expect(r.code).toBe(0);
    const exps = experiments(dir, 't1');
    expect(exps.map(e => e.n)).toEqual([0, 1, 2, 3, 4]);
    expect(exps[2]).toMatchObject({ status: 'interrupted', reason: expect.stringMatching(/recorded on --resume/) });
    expect(exps[2].commit).not.toBeNull(); // it had been committed: the record keeps the commit
    const rows = fs.readFileSync(path.join(dir, 'results.tsv'), 'utf8').trim().split('\n').slice(1);
    expect(rows).toHaveLength(4); // 0, 1, 3, 4: the interrupted one is journal-only
    expect(new Set(rows).size).toBe(rows.length);
    expect(git(dir, 'status', '--porcelain').trim()).toBe('');
    const kept = exps.filter(e => e.status === 'keep').at(-1);
    expect(git(dir, 'rev-parse', 'HEAD').trim()).toBe(kept?.commit);
  });

  it('a training run that outlived its engine and its guard (both kill -9, SIGTERM ignored) is killed by --resume', async () => {
    const hang = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'ar-hang-')), 'hang');
    fs.writeFileSync(hang, '');
    const dir = makeWorkspace({ train: hangingTrain(hang) });
    const child = startCli(['run', dir, '--tag', 't1', '--sandbox', 'off', '--noise-runs', '1']);
    const done = finished(child);
    await waitFor(
      () => fs.existsSync(`${hang}.pid`) && runGroups(dir).length === 2,
      60_000,
      'the training run to start',
    );
    const train = Number(fs.readFileSync(`${hang}.pid`, 'utf8'));
    const [guardGroup, commandGroup] = runGroups(dir);
    expect(pgidOf(train)).toBe(commandGroup);
    // The engine frozen, the guard killed (the OOM killer's choice, say), then the engine: nothing
    // on the engine's side is left to end the run, only what engine.json recorded can.
    child.kill('SIGSTOP');
    process.kill(guardGroup, 'SIGKILL');
    child.kill('SIGKILL');
    await done;
    await new Promise(r => setTimeout(r, 1000));
    expect(alive(train)).toBe(true); // it would sleep 300 s more
    fs.rmSync(hang);

    const r = await cli(['run', dir, '--resume', '--sandbox', 'off', '--max-experiments', '0']);
    expect(r.code).toBe(0);
    await waitFor(() => !alive(train), 5000, 'the orphaned training run to be killed');
    expect(experiments(dir, 't1')[0]).toMatchObject({
      status: 'interrupted',
      reason: expect.stringMatching(/recorded on --resume/),
    });
  });

  it('--resume restores a results.tsv row lost between the journal write and the table write', async () => {
    const dir = makeWorkspace();
    expect((await cli(['run', dir, ...RUN])).code).toBe(0);
    const file = path.join(dir, 'results.tsv');
    const full = fs.readFileSync(file, 'utf8');
    const lines = full.trim().split('\n');
    fs.writeFileSync(file, lines.slice(0, -1).join('\n') + '\n');
    expect((await cli(['run', dir, '--resume', '--max-experiments', '0'])).code).toBe(0);
    expect(fs.readFileSync(file, 'utf8')).toBe(full);
  });

  it('a 200 MB flood of output: engine memory stays under 300 MB, the log keeps head and tail', async () => {
    const dir = makeWorkspace({ train: standInTrain({ floodMb: 200 }) });
    const child = startCli(['run', dir, '--tag', 't1', '--max-experiments', '0']);
    const done = finished(child);
    let peakKb = 0;
    const sampler = setInterval(() => {
      try {
        const m = /VmRSS:\s+(\d+)/.exec(fs.readFileSync(`/proc/${child.pid}/status`, 'utf8'));
        peakKb = Math.max(peakKb, Number(m?.[1] ?? 0));
      } catch {
        // exited
      }
    }, 20);
    const r = await done;
    clearInterval(sampler);
    expect(r.code).toBe(0);
    expect(peakKb).toBeGreaterThan(10_000); // the sampler did see the engine
    expect(peakKb / 1024).toBeLessThan(300);
    const [baseline] = experiments(dir, 't1');
    expect(baseline.status).toBe('keep'); // the summary block after the flood was still found
    expect(baseline.log_truncated).toBe(true);
    const log = fs.readFileSync(baseline.log_path as string, 'utf8');
    expect(log.length).toBeLessThan(6 * 1024 * 1024);
    expect(log).toMatch(/^\[autoresearch\] sandbox: (on|off) \(.*\)\nstep 1 \| loss 3\.2500/); // the run guard's line, then the run's
    expect(log).toMatch(/\[autoresearch: \d+ bytes of output omitted\]/);
    expect(log.trimEnd().endsWith('num_steps:        10')).toBe(true);
  });
});

function journalHas(dir: string, pred: (r: ReturnType<typeof journal>[number]) => boolean): boolean {
  try {
    return journal(dir, 't1').some(pred);
  } catch {
    return false;
  }
}

/** The process groups of the training run in progress: the run guard's, then its command's. */
function runGroups(dir: string): number[] {
  try {
    return JSON.parse(fs.readFileSync(path.join(dir, '.autoresearch', 'engine.json'), 'utf8')).run_pgids ?? [];
  } catch {
    return [];
  }
}

function pgidOf(pid: number): number {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[2]);
}

/** A train.py that, while the file `hang` exists, records its pid, ignores SIGTERM and sleeps past any resume. */
function hangingTrain(hang: string): string {
  const h = JSON.stringify(hang);
  return (
    `import os, signal, time\nif os.path.exists(${h}):\n    signal.signal(signal.SIGTERM, signal.SIG_IGN)\n    open(${h} + ".pid", "w").write(str(os.getpid()))\n    time.sleep(300)\n` +
    standInTrain({ sleep: 0.2 })
  );
}

describe('autoresearch run in a terminal', () => {
  it('draws a live line with the phase, a budget bar, the time left and the last loss', async () => {
    const dir = makeWorkspace({
      program: '---\nbudget_s: 3\ntimeout_s: 20\n---\nGo.\n',
      train: standInTrain({ sleep: 2 }),
    });
    // script(1) gives the engine a real pseudo-terminal, as an interactive shell would.
    const command = `${JSON.stringify(process.execPath)} ${JSON.stringify(ENGINE)} run ${JSON.stringify(dir)} --tag t1 --max-experiments 0`;
    const child = spawn('script', ['-qfec', command, '/dev/null'], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, COLUMNS: '120' },
    });
    const r = await finished(child);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/\r\x1b\[2K# {2}0 {2}run \[█*░+\] \d+s left · loss 3\.2500 {2}baseline/);
    // The finished line replaces the live line.
    expect(r.stdout).toMatch(/\r\x1b\[2K# {2}0 {2}keep +1\.\d{6} +×3 +baseline\r?\n/);
  });
});

describe('kill -9 at any moment', () => {
  it('--resume always recovers: numbering continuous, nothing counted twice, tree clean on the best', async () => {
    const dir = makeWorkspace({ train: standInTrain({ sleep: 0.2 }) });
    // Deterministic "random" kill times spread over every phase of an experiment.
    const delays = [150, 420, 700, 950, 1230, 1500, 1810, 2100];
    let args = ['run', dir, '--tag', 't1'];
    const kills: InFlightAtKill[][] = [];
    for (const delay of delays) {
      const child = startCli(args);
      const done = finished(child);
      await waitFor(
        () => journalHas(dir, r => r.type === 'run_start' && r.pid === child.pid),
        20_000,
        'the run to start',
      );
      await new Promise(r => setTimeout(r, delay));
      child.kill('SIGKILL');
      await done;
      // Where this kill landed, read from what the dead engine left (a loaded machine moves it).
      kills.push(inFlightAfterKill(journal(dir, 't1')));
      args = ['run', dir, '--resume'];
    }
    const last = await cli(['run', dir, '--resume', '--more-experiments', '1']);
    expect(last.code).toBe(0);

    const exps = experiments(dir, 't1');
    expect(exps.map(e => e.n)).toEqual(exps.map((_, i) => i));
    // Each experiment a kill left in flight was recorded once: interrupted when no run of it had
    // been recorded, measured on when one had; nothing else was interrupted. At least one kill
    // landed mid-run (an experiment is in flight most of the time, the delays span several).
    expect(expectKillsResolved(kills, exps)).toBeGreaterThan(0);
    const rows = fs.readFileSync(path.join(dir, 'results.tsv'), 'utf8').trim().split('\n').slice(1);
    const counted = exps.filter(e => ['keep', 'discard', 'crash'].includes(e.status));
    expect(rows).toHaveLength(counted.length);
    expect(rows.map(r => r.split('\t')[3])).toEqual(counted.map(e => e.status));
    expect(git(dir, 'status', '--porcelain').trim()).toBe('');
    const best = exps.filter(e => e.status === 'keep').at(-1);
    expect(git(dir, 'rev-parse', 'HEAD').trim()).toBe(best?.commit);
    // The branch holds exactly the kept commits on top of the initial one.
    const onBranch = git(dir, 'rev-list', 'autoresearch/t1').trim().split('\n');
    expect(onBranch).toHaveLength(
      exps.filter(e => e.status === 'keep' && e.n > 0 && e.description !== 'baseline').length + 1,
    );
  });
});
