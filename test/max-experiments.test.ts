/**
 * What --max-experiments counts, with the real engine across a crash, a stop, a kill and --resume:
 * every experiment that ran (kept, discarded or crashed) and every rejected one; never the
 * baseline, nor an experiment cut short by the run's own stop or death, which the resume measures
 * on or proposes again.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { ExperimentRecord } from '../src/core/journal/journal';
import {
  cli,
  experiments,
  journal,
  makeWorkspace,
  startCli,
  finished,
  standInTrain,
  waitFor,
} from './helpers/workspace';

const PROGRAM = '---\nbudget_s: 1\ntimeout_s: 20\nnoise_runs: 1\n---\nMake val_bpb lower.\n';
const RUN = ['--tag', 't1', '--proposer', 'offline', '--max-experiments', '2'];

/** A stand-in whose training run number `which` (0-based, the baseline's is 0) does `what`, counted in a temp folder. */
function trainWhere(which: number, what: 'crash' | 'hang'): string {
  const counter = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'ar-count-')), 'runs');
  const act = what === 'crash' ? '    raise RuntimeError("stand-in crash")' : '    time.sleep(60)';
  const hook = [
    `_c = ${JSON.stringify(counter)}`,
    '_n = int(open(_c).read()) if os.path.exists(_c) else 0',
    'open(_c, "w").write(str(_n + 1))',
    `if _n == ${which}:`,
    act,
    '',
  ].join('\n');
  return standInTrain().replace('print("step 1', `${hook}print("step 1`);
}

/** The run's experiments by status, the baseline's left out. */
function statuses(dir: string): Array<ExperimentRecord['status']> {
  return experiments(dir, 't1')
    .filter(e => e.description !== 'baseline')
    .map(e => e.status);
}

/** Starts a run and stops it (`signal`) once its first experiment after the baseline has started training. */
async function cutShortInFirstExperiment(dir: string, signal: NodeJS.Signals): Promise<void> {
  const child = startCli(['run', dir, ...RUN]);
  const done = finished(child);
  const started = () =>
    fs.existsSync(path.join(dir, '.autoresearch', 't1', 'journal.jsonl')) &&
    journal(dir, 't1').some(r => r.type === 'experiment_start' && r.n === 1);
  await waitFor(started, 60_000, 'experiment #1 to start');
  // Its training run (the second of the workspace) is the one that hangs: the signal lands mid-run.
  child.kill(signal);
  await done;
}

describe('--max-experiments counts the experiments that ran, over every --resume', () => {
  it('an experiment that crashed counts: two in all, and a resume without the flag runs none', async () => {
    const dir = makeWorkspace({ program: PROGRAM, train: trainWhere(1, 'crash') });
    const first = await cli(['run', dir, ...RUN]);
    expect(first.code, first.stderr).toBe(0);
    expect(statuses(dir)).toEqual(['crash', expect.stringMatching(/^(keep|discard)$/)]);
    const resumed = await cli(['run', dir, '--tag', 't1', '--proposer', 'offline', '--resume']);
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(statuses(dir)).toHaveLength(2);
  });

  for (const signal of ['SIGTERM', 'SIGKILL'] as const) {
    it(`one cut short by ${signal} is not counted: the resume still runs two`, async () => {
      const dir = makeWorkspace({ program: PROGRAM, train: trainWhere(1, 'hang') });
      await cutShortInFirstExperiment(dir, signal);
      const resumed = await cli(['run', dir, '--tag', 't1', '--proposer', 'offline', '--resume']);
      expect(resumed.code, resumed.stderr).toBe(0);
      const ran = statuses(dir).filter(s => s !== 'interrupted');
      expect(statuses(dir)[0]).toBe('interrupted');
      expect(ran).toHaveLength(2);
      expect(journal(dir, 't1').at(-1)).toMatchObject({ type: 'run_end', reason: 'max-experiments' });
    });
  }

  it('a crashed baseline is not counted: the resume runs the baseline again, then two', async () => {
    const dir = makeWorkspace({ program: PROGRAM, train: trainWhere(0, 'crash') });
    const first = await cli(['run', dir, ...RUN]);
    expect(first.stderr).toMatch(/the baseline crashed/);
    const resumed = await cli(['run', dir, '--tag', 't1', '--proposer', 'offline', '--resume']);
    expect(resumed.code, resumed.stderr).toBe(0);
    const all = experiments(dir, 't1');
    expect(all.map(e => [e.description === 'baseline', e.status === 'crash'])).toEqual([
      [true, true],
      [true, false],
      [false, false],
      [false, false],
    ]);
  });
});
