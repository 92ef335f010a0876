/**
 * The Slurm executor against a real one-node cluster (scripts/local-slurm.sh: slurmctld, slurmd,
 * slurmdbd and munge from Debian's packages): two workers' runs as jobs visible in sacct by name;
 * a stop cancels both jobs; kill -9 of the engine and --resume cancel its orphans and lose
 * nothing; a job Slurm ends at its time limit and one cancelled from outside are crashes that say
 * so; a queued run's wait is queue_s, not run_s; a preempted job runs again once; a transfer study
 * runs through Slurm.
 */
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ExperimentRecord, RunRecord } from '../src/core/journal/journal';
import { jobComment } from '../src/core/config/slurm';
import { LogCapture } from '../src/engine/experiment/log-capture';
import { SlurmExecutor } from '../src/engine/executor/slurm/slurm';
import { studyPaths } from '../src/engine/study/transfer-store';
import { ensureLocalSlurm, lockSlurmNode } from './helpers/local-slurm';
import {
  alive,
  cli,
  experiments,
  finished,
  git,
  journal,
  makeWorkspace,
  standInTrain,
  startCli,
  waitFor,
} from './helpers/workspace';

let env: Record<string, string>;
let unlock: (() => void) | undefined;

beforeAll(async () => {
  env = (await ensureLocalSlurm()).env;
  // The node to this file alone: its tests fill the CPUs, preempt and cancel.
  unlock = await lockSlurmNode();
  // The executor runs in this process too: its srun, squeue and scancel find the cluster.
  Object.assign(process.env, env);
}, 900_000);

afterAll(() => unlock?.());

/** sacct's row of a job as it is now. */
function sacctRow(id: string): { name: string; state: string } {
  const row = execFileSync('sacct', ['-j', id, '-X', '-n', '-P', '-o', 'JobName,State'], {
    encoding: 'utf8',
    env: process.env,
  })
    .split('\n')
    .filter(Boolean)[0];
  const [name = '', state = ''] = (row ?? '').split('|');
  return { name, state: state.split(' ')[0] };
}

/**
 * sacct's row of a job once slurmdbd has settled it: a final state and, where `name` is given,
 * that name (accounting lags the controller, and first lists a job srun made as "allocation").
 */
async function sacct(id: string, name?: string): Promise<{ name: string; state: string }> {
  let row = sacctRow(id);
  await waitFor(
    () => {
      row = sacctRow(id);
      return row.state !== '' && !/PENDING|RUNNING|COMPLETING/.test(row.state) && (!name || row.name === name);
    },
    60_000,
    `sacct to record job ${id}`,
  ).catch(() => undefined); // the caller's expectation says what differs
  return row;
}

/** The engine's jobs for a workspace that squeue lists now. */
function queued(dir: string): Array<{ id: string; state: string; name: string }> {
  const out = execFileSync('squeue', ['--me', '--noheader', '--format=%i|%T|%j|%k'], {
    encoding: 'utf8',
    env: process.env,
  });
  return out
    .split('\n')
    .map(l => l.split('|'))
    .filter(f => f.length >= 4 && f.slice(3).join('|') === jobComment(dir))
    .map(([id, state, name]) => ({ id, state, name }));
}

function runs(dir: string, tag: string): RunRecord[] {
  return journal(dir, tag).filter((r): r is RunRecord => r.type === 'run');
}

/** A stand-in that trains for `sleep` seconds ($STANDIN_SLEEP wins, so a test can slow a run down) and says where it ran. */
function train(sleep: number): string {
  return standInTrain().replace(
    'print("step 1',
    `print("on " + os.environ.get("SLURM_JOB_ID", "-") + " in " + os.getcwd(), flush=True)\ntime.sleep(float(os.environ.get("STANDIN_SLEEP", "${sleep}")))\nprint("step 1`,
  );
}

const PROGRAM = (extra = '') => `---\nbudget_s: 1\ntimeout_s: 30\nnoise_runs: 1\n${extra}---\nMake val_bpb lower.\n`;

describe('the slurm executor on a local cluster', () => {
  it('runs 2 workers × 6 experiments as jobs sacct lists by name, each in its own worktree', async () => {
    const dir = makeWorkspace({ program: PROGRAM(), train: train(0.5) });
    const r = await cli(
      ['run', dir, '--tag', 's1', '--executor', 'slurm', '--workers', '2', '--max-experiments', '12', '--seed', '3'],
      { env },
    );
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const exps = experiments(dir, 's1');
    // The baseline and 12 proposals, each once, none lost to Slurm.
    expect(exps.map(e => e.n).sort((a, b) => a - b)).toEqual([...Array(13).keys()]);
    expect(exps.filter(e => e.status === 'crash')).toEqual([]);
    const all = runs(dir, 's1');
    expect(all.length).toBeGreaterThanOrEqual(13);
    for (const run of all) {
      expect(run.job?.scheduler).toBe('slurm');
      expect(run.queue_s).toBeGreaterThanOrEqual(0);
      const name = `autoresearch-s1-${run.n}-${all.filter(x => x.n === run.n).indexOf(run) + 1}`;
      expect(await sacct(run.job!.id, name)).toEqual({ name, state: 'COMPLETED' });
      // Each job ran in its worker's worktree (or the workspace, for the baseline).
      const log = fs.readFileSync(run.log_path!, 'utf8');
      expect(log).toContain(`on ${run.job!.id} in `);
      if (run.worker) expect(log).toMatch(new RegExp(`in ${dir}/\\.autoresearch/s1/worktrees/w${run.worker}`));
    }
    expect(new Set(all.map(x => x.worker)).size).toBe(2);
    expect(git(dir, 'status', '--porcelain').trim()).toBe('');
    expect(queued(dir)).toEqual([]);
  }, 300_000);

  it("inside the job the run guard's rules hold: no secret of the engine's, nothing left running after the run", async () => {
    const dir = makeWorkspace({
      // Without the sandbox, whose own PID namespace would make the grandchild's pid mean nothing here.
      program: PROGRAM('sandbox: off\n'),
      train: standInTrain({ stubbornChild: true }).replace(
        'print("step 1',
        'print("key: " + ("set" if "ANTHROPIC_API_KEY" in os.environ else "absent"), flush=True)\nprint("step 1',
      ),
    });
    const r = await cli(
      ['run', dir, '--tag', 's7', '--executor', 'slurm', '--proposer', 'offline', '--max-experiments', '0'],
      {
        env: { ...env, ANTHROPIC_API_KEY: 'sk-ant-test-0123456789abcdef' },
      },
    );
    expect(r.code).toBe(0);
    const [run] = runs(dir, 's7');
    const log = fs.readFileSync(run.log_path!, 'utf8');
    expect(log).toContain('key: absent');
    expect(log).not.toContain('sk-ant-test');
    // The grandchild ignored SIGTERM and would sleep 600 s: the guard killed it when the run ended.
    const pid = Number(fs.readFileSync(path.join(dir, 'grandchild.pid'), 'utf8'));
    expect(pid).toBeGreaterThan(0);
    expect(alive(pid)).toBe(false);
    expect(run.strays).toBeGreaterThanOrEqual(1);
  }, 120_000);

  it('a stop cancels both running jobs; the experiments are interrupted, nothing else recorded', async () => {
    const dir = makeWorkspace({ program: PROGRAM(), train: train(0.3) });
    const first = await cli(['run', dir, '--tag', 's2', '--executor', 'slurm', '--max-experiments', '1'], { env });
    expect(first.code).toBe(0);
    const before = experiments(dir, 's2').length;
    // The next experiments train long: both workers' jobs are running when the stop comes.
    const slow = { ...env, STANDIN_SLEEP: '25' };
    const child = startCli(
      ['run', dir, '--tag', 's2', '--executor', 'slurm', '--resume', '--workers', '2', '--more-experiments', '4'],
      {
        env: slow,
      },
    );
    const done = finished(child);
    await waitFor(() => queued(dir).filter(j => j.state === 'RUNNING').length === 2, 120_000, 'two jobs to run');
    const ids = queued(dir).map(j => j.id);
    expect(ids).toHaveLength(2);
    const stop = await cli(['stop', dir], { env });
    expect(stop.code).toBe(0);
    const r = await done;
    expect(r.code).toBe(0);
    for (const id of ids) expect((await sacct(id)).state).toBe('CANCELLED');
    expect(queued(dir)).toEqual([]);
    const exps = experiments(dir, 's2').slice(before);
    expect(exps.map(e => e.status)).toEqual(['interrupted', 'interrupted']);
  }, 180_000);

  it('kill -9 of the engine, then --resume: its orphaned jobs are cancelled and each in-flight experiment is interrupted once', async () => {
    const dir = makeWorkspace({ program: PROGRAM(), train: train(0.3) });
    const first = await cli(['run', dir, '--tag', 's3', '--executor', 'slurm', '--max-experiments', '1'], { env });
    expect(first.code).toBe(0);
    // The next experiments train long: both workers' jobs are running when the engine is killed.
    const slow = { ...env, STANDIN_SLEEP: '120' };
    const child = startCli(
      ['run', dir, '--tag', 's3', '--executor', 'slurm', '--resume', '--workers', '2', '--more-experiments', '4'],
      { env: slow },
    );
    const done = finished(child);
    await waitFor(() => queued(dir).filter(j => j.state === 'RUNNING').length === 2, 120_000, 'two jobs to run');
    const orphans = queued(dir).map(j => j.id);
    child.kill('SIGKILL');
    await done;
    // The engine is gone; its jobs are not.
    expect(
      queued(dir)
        .map(j => j.id)
        .sort(),
    ).toEqual([...orphans].sort());
    const ended = experiments(dir, 's3').map(e => e.n);
    const inFlight = journal(dir, 's3')
      .filter(r => r.type === 'experiment_start' && !ended.includes(r.n))
      .map(r => (r as { n: number }).n);
    expect(inFlight).toHaveLength(2);

    const r = await cli(['run', dir, '--tag', 's3', '--executor', 'slurm', '--resume', '--max-experiments', '1'], {
      env,
    });
    expect(r.code).toBe(0);
    expect(r.stderr).toMatch(/cancelling 2 Slurm jobs a stopped engine left running/);
    for (const id of orphans) expect((await sacct(id)).state).toBe('CANCELLED');
    const exps = experiments(dir, 's3');
    const ns = exps.map(e => e.n);
    expect(new Set(ns).size).toBe(ns.length);
    const interrupted = exps.filter(e => e.status === 'interrupted');
    expect(interrupted.length).toBe(2);
    for (const e of interrupted) expect(inFlight).toContain(e.n);
    expect(git(dir, 'status', '--porcelain').trim()).toBe('');
  }, 300_000);
});

describe("runs Slurm ends, queues and preemption (the executor's outcome)", () => {
  /** One run of `command` in a fresh workspace through the executor. */
  async function runOnce(
    command: string,
    o: { timeoutS?: number; during?: (id: string) => Promise<void>; setting?: object } = {},
  ) {
    const dir = makeWorkspace();
    const logFile = path.join(dir, '.autoresearch', 'x.log');
    fs.mkdirSync(path.dirname(logFile), { recursive: true });
    const log = new LogCapture(logFile);
    const exec = new SlurmExecutor({ setting: o.setting });
    let queuedAs: string | null = null;
    let started: number | null = null;
    const ran = exec.run({
      cwd: dir,
      command,
      timeoutS: o.timeoutS ?? 300,
      log,
      name: 'autoresearch-unit-1-1',
      workspace: dir,
      isolation: { sandbox: 'off', network: false, readonly: [] },
      onQueued: job => (queuedAs = job.id),
      onStarted: at => (started = at),
    });
    if (o.during) {
      // Once the run itself has started (the guard said so), not merely its job's allocation.
      await waitFor(() => started !== null, 60_000, 'the run to start');
      await o.during(queued(dir)[0].id);
    }
    const outcome = await ran;
    log.close();
    await exec.dispose();
    return { outcome, log: fs.readFileSync(logFile, 'utf8'), queuedAs, started };
  }

  it('a job scancelled from outside is a crash that says so', async () => {
    const { outcome, log } = await runOnce('sleep 120', {
      during: async id => void execFileSync('scancel', [id], { env: process.env }),
    });
    expect(outcome.failure).toMatch(/^job \d+ on \S+ was cancelled outside the engine/);
    expect(outcome.interrupted).toBe(false);
    expect(log).toMatch(/CANCELLED/);
  }, 120_000);

  it('a job whose node fails is a crash that says which node', async () => {
    const node = execFileSync('sinfo', ['-h', '-N', '-o', '%N'], { encoding: 'utf8', env: process.env })
      .trim()
      .split('\n')[0];
    const scontrol = (...args: string[]) => execFileSync('scontrol', args, { env: process.env });
    try {
      // What slurmctld does when a node stops answering: the node goes down and its jobs with it.
      const { outcome } = await runOnce('sleep 120', {
        during: async () => void scontrol('update', `NodeName=${node}`, 'State=DOWN', 'Reason=autoresearch-test'),
      });
      expect(outcome.failure).toBe(`job ${outcome.job!.id}'s node ${node} failed`);
      expect((await sacct(outcome.job!.id)).state).toBe('NODE_FAIL');
    } finally {
      try {
        scontrol('update', `NodeName=${node}`, 'State=RESUME');
      } catch {
        // Already back: slurmd registered again and the cluster returned the node to service itself.
      }
      await waitFor(
        () =>
          /idle|mix|alloc/.test(
            execFileSync('sinfo', ['-h', '-N', '-o', '%T'], { encoding: 'utf8', env: process.env }),
          ),
        60_000,
        'the node to come back',
      );
    }
  }, 120_000);

  it("a job Slurm ends at its time limit is a crash that gives Slurm's reason", async () => {
    // An administrator shortens the limit to a minute; Slurm ends the job at the next check.
    const { outcome } = await runOnce('sleep 240', {
      during: async id => void execFileSync('scontrol', ['update', `JobId=${id}`, 'TimeLimit=1'], { env: process.env }),
    });
    expect(outcome.failure).toMatch(/^Slurm ended job \d+ on \S+ at its time limit \(--time 00:01:00\)/);
    expect((await sacct(outcome.job!.id)).state).toBe('TIMEOUT');
  }, 240_000);

  it('a run that waits in the queue counts its wait as queue_s, not run time, and names its job while it waits', async () => {
    // The node's CPUs held by another job for 6 s: the run queues behind it.
    const cpus = execFileSync('sinfo', ['-h', '-o', '%c'], { encoding: 'utf8', env: process.env })
      .trim()
      .split('\n')[0];
    const hold = execFileSync(
      'sbatch',
      ['--parsable', '--output=/dev/null', `-c${cpus}`, '--wrap=sleep 6', '-J', 'hold'],
      {
        encoding: 'utf8',
        env: process.env,
      },
    ).trim();
    try {
      const { outcome, queuedAs, started, log } = await runOnce('echo trained');
      expect(queuedAs).toBe(outcome.job?.id);
      expect(started).not.toBeNull();
      expect(outcome.queueS).toBeGreaterThan(2);
      expect(outcome.seconds).toBeLessThan(outcome.queueS!);
      expect(outcome.exitCode).toBe(0);
      expect(log).toMatch(/queued and waiting for resources[\s\S]*trained/);
    } finally {
      execFileSync('scancel', [hold], { env: process.env });
    }
  }, 120_000);

  it('a preempted job runs again, once, and the run says so', async () => {
    const cpus = execFileSync('sinfo', ['-h', '-o', '%c'], { encoding: 'utf8', env: process.env })
      .trim()
      .split('\n')[0];
    let urgent = '';
    const { outcome, log } = await runOnce(
      'if [ -e preempted-once ]; then echo second; else touch preempted-once; sleep 120; fi',
      {
        setting: { partition: 'debug', cpus: Number(cpus) },
        during: async () => {
          urgent = execFileSync(
            'sbatch',
            ['--parsable', '--output=/dev/null', '-p', 'urgent', `-c${cpus}`, '--wrap=sleep 3', '-J', 'urgent'],
            {
              encoding: 'utf8',
              env: process.env,
            },
          ).trim();
        },
      },
    );
    expect(urgent).not.toBe('');
    expect(outcome.exitCode).toBe(0);
    expect(outcome.failure).toBeUndefined();
    expect(outcome.job?.requeued).toBe(true);
    expect(log).toMatch(/Slurm preempted job \d+[\s\S]*running it again \(once\)[\s\S]*second/);
  }, 180_000);
});

describe('the transfer study through Slurm', () => {
  it("replays the run's baseline and keeps as jobs", async () => {
    const dir = makeWorkspace({ program: PROGRAM(), train: train(0.2) });
    const r = await cli(['run', dir, '--tag', 's5', '--executor', 'slurm', '--max-experiments', '3', '--seed', '2'], {
      env,
    });
    expect(r.code).toBe(0);
    const t = await cli(
      [
        'transfer',
        dir,
        '--tag',
        's5',
        '--executor',
        'slurm',
        '--partition',
        'debug',
        '--runs',
        '2',
        '--env',
        'AUTORESEARCH_SCALE=2',
        '--json',
      ],
      { env },
    );
    expect(t.stderr).not.toMatch(/error/i);
    expect(t.code).toBe(0);
    const studyRuns = fs
      .readFileSync(studyPaths(dir, 's5').journal, 'utf8')
      .split('\n')
      .filter(Boolean)
      .map(
        l =>
          JSON.parse(l) as {
            type: string;
            job?: { id: string };
            metric: number | null;
            commit: string;
            k: number;
            kind: string;
          },
      );
    const made = studyRuns.filter(x => x.type === 'study_run');
    expect(made.length).toBeGreaterThanOrEqual(2);
    for (const run of made) {
      expect(run.metric).not.toBeNull();
      const name = `autoresearch-s5-${run.kind}-${run.commit.slice(0, 7)}-${run.k}`;
      expect(await sacct(run.job!.id, name)).toEqual({ name, state: 'COMPLETED' });
    }
  }, 240_000);
});

// Kept last: the loop's own records of an experiment whose runs were all jobs.
describe('what the journal says of a job', () => {
  it("a queued run: state.json and status name its job; the experiment totals its runs' queue_s apart from run_s", async () => {
    const dir = makeWorkspace({ program: PROGRAM(), train: train(0.2) });
    // The node's CPUs held for 8 s: the baseline's job waits behind them.
    const cpus = execFileSync('sinfo', ['-h', '-o', '%c'], { encoding: 'utf8', env: process.env })
      .trim()
      .split('\n')[0];
    const hold = execFileSync(
      'sbatch',
      ['--parsable', '--output=/dev/null', `-c${cpus}`, '--wrap=sleep 8', '-J', 'hold'],
      {
        encoding: 'utf8',
        env: process.env,
      },
    ).trim();
    const child = startCli(['run', dir, '--tag', 's6', '--executor', 'slurm', '--max-experiments', '1'], { env });
    const done = finished(child);
    const state = path.join(dir, '.autoresearch', 's6', 'state.json');
    const phase = () => {
      try {
        return JSON.parse(fs.readFileSync(state, 'utf8')).in_flight[0]?.phase;
      } catch {
        return undefined;
      }
    };
    await waitFor(() => phase()?.name === 'queue', 30_000, 'the baseline to be queued');
    const seenQueued = Date.now();
    const job = phase().job.id as string;
    const status = (await cli(['status', dir], { env })).stdout;
    expect(status, status).toMatch(new RegExp(`in flight: +#0 baseline \\(for \\d+ s, queued as Slurm job ${job}\\)`));
    const released = Date.now();
    execFileSync('scancel', [hold], { env: process.env });
    const r = await done;
    expect(r.code).toBe(0);
    const e = experiments(dir, 's6')[0] as ExperimentRecord;
    expect(runs(dir, 's6')[0].job?.id).toBe(job);
    // It waited at least from when state.json said so until the node was freed.
    expect(e.timings.queue_s).toBeGreaterThanOrEqual((released - seenQueued) / 1000);
    const rs = runs(dir, 's6').filter(x => x.n === e.n);
    expect(e.timings.queue_s).toBeCloseTo(
      rs.reduce((s, x) => s + (x.queue_s ?? 0), 0),
      5,
    );
    expect(e.timings.run_s).toBeCloseTo(
      rs.reduce((s, x) => s + x.run_s, 0),
      5,
    );
  }, 120_000);
});
