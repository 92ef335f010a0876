/**
 * Several workers on real git repositories: two experiments at once, each in
 * its own worktree, with the global best consistent in git, the journal and
 * results.tsv; stop; and resume after kill -9 of the engine.
 */
import { execFileSync, spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { subprocessLoop } from './helpers/loop';
import { KernelExecutor } from '../src/engine/executor/kernel';
import type {
  ExperimentRecord,
  ExperimentStartRecord,
  JournalRecord,
  RunStartRecord,
} from '../src/core/journal/journal';
import { parseResults, RESULTS_HEADER, RESULTS_HEADER_WORKERS } from '../src/core/journal/results';
import { SubprocessExecutor } from '../src/engine/executor/subprocess';
import { Loop, type LoopOptions } from '../src/engine/run/setup';
import { ClaudeProposer } from '../src/engine/proposers/claude/proposer';
import { OfflineProposer } from '../src/engine/proposers/offline/proposer';
import type { Proposer } from '../src/engine/proposers/types';
import { resolvePython } from '../src/engine/workspace/python';
import { appendResult } from '../src/engine/store/results-file';
import { deviceEnvs } from '../src/engine/git/worktrees';
import { startJupyterServer, type JupyterServer } from './helpers/jupyter-server';
import { MessagesApiServer } from './stand-ins/messages-api';
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
  ScriptedProposer,
  standInTrain,
  startCli,
  trainProposal,
  waitFor,
} from './helpers/workspace';

/**
 * A stand-in whose metric follows its constants (so the offline proposer makes
 * real progress) and whose run time varies with them (so results land out of
 * order); it prints where it ran and which GPU it was given.
 */
function workerTrain(sleep = '0.3 + (N_LAYER % 3) * 0.4'): string {
  const where = `print("ran in " + os.getcwd() + " cuda=" + str(os.environ.get("CUDA_VISIBLE_DEVICES")), flush=True)\ntime.sleep(${sleep})\n`;
  return standInTrain().replace('print("step 1', `${where}print("step 1`);
}

/** Two workers, each training as a subprocess. */
function loop(dir: string, proposer: Proposer, extra: Partial<LoopOptions> = {}): Loop {
  return subprocessLoop(dir, proposer, { workers: 2, executorFor: () => new SubprocessExecutor(1), ...extra });
}

/**
 * Replays a journal in order, checking the rules of several workers: each
 * proposal starts from the best of its moment, each result is judged against
 * the best when it lands. Returns the best at the end. `slow`: a proposal that
 * took long and could not be re-applied on a newer best starts from an older one.
 */
function replay(records: JournalRecord[], initial: string, slow = false): { commit: string; metric: number } | null {
  let best: { commit: string; metric: number } | null = null;
  const bests = new Set([initial]);
  const open = new Map<number, ExperimentStartRecord>();
  for (const r of records) {
    if (r.type === 'experiment_start') {
      expect(open.has(r.n)).toBe(false);
      if (slow) expect(bests.has(r.parent_commit)).toBe(true);
      else expect(r.parent_commit).toBe(best?.commit ?? initial);
      open.set(r.n, r);
    } else if (r.type === 'experiment') {
      const start = open.get(r.n);
      if (start) {
        expect(r.worker).toBe(start.worker);
        expect(r.parent_commit).toBe(start.parent_commit);
        open.delete(r.n);
      }
      if (r.metric !== null && (r.status === 'keep' || r.status === 'discard')) {
        expect(r.best_before).toBe(best?.metric ?? null);
        expect(r.status).toBe(best === null || r.metric < best.metric ? 'keep' : 'discard');
      }
      if (r.status === 'keep' && r.commit && r.metric !== null) {
        best = { commit: r.commit, metric: r.metric };
        bests.add(r.commit);
      }
    }
  }
  return best;
}

/** The most experiments ever in flight at once, from the order of the journal. */
function peakConcurrency(records: JournalRecord[]): number {
  let now = 0;
  let peak = 0;
  for (const r of records) {
    if (r.type === 'experiment_start') peak = Math.max(peak, ++now);
    if (r.type === 'experiment' && records.some(s => s.type === 'experiment_start' && s.n === r.n)) now--;
  }
  return peak;
}

/** What the best commit's train.py prints as its metric, run afresh. */
function metricOf(dir: string, commit: string): number {
  const source = git(dir, 'show', `${commit}:train.py`);
  const out = execFileSync(resolvePython(), ['-c', `import time\ntime.sleep = lambda s: None\n${source}`], {
    cwd: dir,
    encoding: 'utf8',
  });
  return Number(/val_bpb:\s+(\S+)/.exec(out)?.[1]);
}

function rows(dir: string) {
  return parseResults(fs.readFileSync(path.join(dir, 'results.tsv'), 'utf8'));
}

let savedCuda: string | undefined;
beforeEach(() => {
  savedCuda = process.env.CUDA_VISIBLE_DEVICES;
  delete process.env.CUDA_VISIBLE_DEVICES;
});
afterEach(() => {
  if (savedCuda === undefined) delete process.env.CUDA_VISIBLE_DEVICES;
  else process.env.CUDA_VISIBLE_DEVICES = savedCuda;
});

describe('two workers', () => {
  it('run 6 experiments at once with the global best consistent in git, journal and results.tsv', async () => {
    const dir = makeWorkspace({ train: workerTrain() });
    const initial = git(dir, 'rev-parse', 'HEAD').trim();
    const end = await loop(dir, new OfflineProposer({ seed: 3 }), { maxExperiments: 6 }).run();
    expect(end.reason).toBe('max-experiments');

    const records = journal(dir, 't1');
    const exps = experiments(dir, 't1');
    // Numbers unique and continuous; the baseline and 6 proposals, each once.
    expect(exps.map(e => e.n).sort((a, b) => a - b)).toEqual([0, 1, 2, 3, 4, 5, 6]);
    // No two workers ran the same change from the same best (the offline proposer sees what is in flight).
    expect(new Set(exps.map(e => `${e.parent_commit} ${e.description}`)).size).toBe(exps.length);
    expect(new Set(exps.map(e => e.commit)).size).toBe(exps.length);
    expect(new Set(exps.map(e => e.worker))).toEqual(new Set([1, 2]));
    expect(exps.every(e => e.status === 'keep' || e.status === 'discard')).toBe(true);
    expect(peakConcurrency(records)).toBe(2);
    expect((records[0] as RunStartRecord).config.workers).toBe(2);

    // Every proposal started from the best of its moment; every result was judged against the best when it landed.
    const best = replay(records, initial);
    expect(best).not.toBeNull();
    expect(end).toMatchObject({ best_commit: best?.commit, best_metric: best?.metric });

    // git: the best branch's tip is the best commit, checked out in the workspace, clean; its code measures the best metric.
    expect(git(dir, 'rev-parse', 'autoresearch/t1').trim()).toBe(best?.commit);
    expect(git(dir, 'rev-parse', '--abbrev-ref', 'HEAD').trim()).toBe('autoresearch/t1');
    expect(git(dir, 'status', '--porcelain').trim()).toBe('');
    expect(metricOf(dir, best?.commit as string)).toBe(best?.metric);
    expect(fs.readFileSync(path.join(dir, 'train.py'), 'utf8')).toBe(git(dir, 'show', `${best?.commit}:train.py`));
    // The worktrees are gone after a clean end; each worker's branch stays.
    expect(git(dir, 'worktree', 'list').trim().split('\n')).toHaveLength(1);
    expect(
      git(dir, 'branch', '--list', 'autoresearch/t1-w*')
        .trim()
        .split('\n')
        .map(b => b.trim()),
    ).toEqual(['autoresearch/t1-w1', 'autoresearch/t1-w2']);

    // results.tsv: the original columns plus the worker, one row per experiment in journal order.
    expect(fs.readFileSync(path.join(dir, 'results.tsv'), 'utf8').split('\n')[0]).toBe(RESULTS_HEADER_WORKERS);
    const table = rows(dir);
    expect(table.map(r => [r.commit, r.status, r.worker])).toEqual(
      exps.map(e => [(e.commit as string).slice(0, 7), e.status, e.worker]),
    );
    const lastKeep = table.filter(r => r.status === 'keep').at(-1);
    expect(lastKeep?.commit).toBe(best?.commit.slice(0, 7));
    expect(lastKeep?.metric).toBe(best?.metric);

    // Each worker ran in its own worktree with its own GPU index.
    for (const e of exps) {
      const log = fs.readFileSync(e.log_path as string, 'utf8');
      expect(log).toContain(
        `${path.join('.autoresearch', 't1', 'worktrees', `w${e.worker}`)} cuda=${(e.worker as number) - 1}`,
      );
    }

    // status and results show the worker.
    const results = await cli(['results', dir]);
    expect(results.stdout.split('\n')[0]).toMatch(/w {3}description$/);
    expect(results.stdout).toMatch(/#\s+1\s+\w+.*\bw[12]\s+\S/);
  });

  it('keeps a result only if it beats the best when it lands, and moves the branch to it', async () => {
    // Worker 1 starts a slow, very good change from the baseline; worker 2 a fast, good one, kept
    // first, then a slow one from that. The slow, very good one lands next and beats the new best:
    // the branch moves sideways to it. The last beats its parent but not the best when it lands.
    const dir = makeWorkspace({ train: standInTrain({ metric: '1.000000' }) });
    const programFile = path.join(dir, 'program.md');
    const proposer = new ScriptedProposer([
      () => {
        // The researcher edits program.md mid-run (the panel's cell): keeps must not undo it.
        fs.appendFileSync(programFile, '\nPrefer small steps.\n');
        return trainProposal('slow and best', { metric: '0.700000', sleep: 2 });
      },
      trainProposal('fast and better', { metric: '0.800000' }),
      trainProposal('slower, better than its parent', { metric: '0.750000', sleep: 3.5 }),
    ]);
    const end = await loop(dir, proposer).run();
    expect(end.reason).toBe('exhausted');
    const exps = experiments(dir, 't1');
    const by = (d: string) => exps.find(e => e.description === d) as ExperimentRecord;
    const [baseline, fast, best, late] = [
      exps[0],
      by('fast and better'),
      by('slow and best'),
      by('slower, better than its parent'),
    ];
    expect(fast).toMatchObject({ status: 'keep', best_before: 1, parent_commit: baseline.commit });
    expect(best).toMatchObject({ status: 'keep', best_before: 0.8, parent_commit: baseline.commit });
    expect(late).toMatchObject({ status: 'discard', best_before: 0.7, parent_commit: fast.commit });
    expect(late.delta).toBeCloseTo(0.05, 9);
    // The branch holds the measured commit itself, whose code produced the best metric.
    expect(git(dir, 'rev-parse', 'autoresearch/t1').trim()).toBe(best.commit);
    expect(git(dir, 'show', 'autoresearch/t1:train.py')).toContain('0.700000');
    expect(end).toMatchObject({ best_commit: best.commit, best_metric: 0.7 });
    expect(
      rows(dir)
        .filter(r => r.status === 'keep')
        .at(-1),
    ).toMatchObject({ commit: (best.commit as string).slice(0, 7), metric: 0.7 });
    replay(journal(dir, 't1'), baseline.parent_commit);
    expect(proposer.contexts[2].program).toContain('Prefer small steps.');
    expect(fs.readFileSync(programFile, 'utf8')).toContain('Prefer small steps.');
    expect(git(dir, 'status', '--porcelain', '--untracked-files=no').trim()).toBe('M program.md');
  });

  it("a crash in one worker is that experiment's crash: the other goes on", async () => {
    const dir = makeWorkspace({ train: standInTrain({ metric: '1.000000' }) });
    const proposer = new ScriptedProposer([
      trainProposal('crashes', { exitCode: 3, sleep: 0.5 }),
      trainProposal('better', { metric: '0.900000' }),
      trainProposal('better again', { metric: '0.800000' }),
    ]);
    const end = await loop(dir, proposer).run();
    expect(end).toMatchObject({ reason: 'exhausted', best_metric: 0.8 });
    const by = (d: string) => experiments(dir, 't1').find(e => e.description === d) as ExperimentRecord;
    expect(by('crashes')).toMatchObject({
      status: 'crash',
      worker: 1,
      reason: expect.stringMatching(/exited with code 3/),
    });
    expect([by('better').status, by('better again').status]).toEqual(['keep', 'keep']);
    expect(rows(dir).find(r => r.status === 'crash')).toMatchObject({ metric: 0, memory_gb: 0, worker: 1 });
  });

  it('stop interrupts every worker and leaves the workspace clean on the best', async () => {
    const dir = makeWorkspace({ train: workerTrain('0.2') });
    const controller = new AbortController();
    const proposer = new ScriptedProposer([
      trainProposal('slow a', { sleep: 30 }),
      trainProposal('slow b', { sleep: 30 }),
    ]);
    const l = loop(dir, proposer, { signal: controller.signal });
    let running = 0;
    l.on('run-start', (n: number) => n > 0 && ++running === 2 && setTimeout(() => controller.abort('signal'), 300));
    const started = Date.now();
    const end = await l.run();
    expect(Date.now() - started).toBeLessThan(15_000);
    expect(end.reason).toBe('signal');
    const exps = experiments(dir, 't1');
    expect(
      exps
        .slice(1)
        .map(e => [e.status, e.worker])
        .sort(),
    ).toEqual([
      ['interrupted', 1],
      ['interrupted', 2],
    ]);
    expect(git(dir, 'rev-parse', 'HEAD').trim()).toBe(exps[0].commit);
    expect(git(dir, 'status', '--porcelain').trim()).toBe('');
  });
});

describe('two workers with the claude proposer', () => {
  it('proposes one at a time, tells each proposal what the other worker runs, and re-applies a slow one on a newer best', async () => {
    const call = (name: string, input: unknown) => ({ type: 'tool_use' as const, name, input });
    const proposal = (old: string, now: string, description: string) => ({
      type: 'message' as const,
      content: [
        call('str_replace_based_edit_tool', { command: 'str_replace', path: 'train.py', old_str: old, new_str: now }),
        call('finish_experiment', { description, rationale: 'test' }),
      ],
    });
    const turns = [
      proposal('LEARNING_RATE = 0.001', 'LEARNING_RATE = 0.002', 'double the learning rate'),
      proposal('print("peak_vram_mb:     2048.0")', 'print("peak_vram_mb:     1024.0")', 'report less memory'),
      proposal('LEARNING_RATE = 0.002', 'LEARNING_RATE = 0.003', 'a little more learning rate'),
    ];
    const dir = makeWorkspace();
    // #1 is kept while #2 is being proposed: the model answers #2 only once #1 has landed, so the
    // order holds by construction rather than by a 0.3 s run fitting in a 1.5 s proposal on a loaded machine.
    let asked = 0;
    const handler = async () => {
      const k = asked++;
      if (k === 1) await waitFor(() => experiments(dir, 't1').some(e => e.n === 1), 60_000, '#1 to land');
      return turns[k];
    };
    const server = await MessagesApiServer.start({ apiKey: 'sk-ant-test-key-0123456789', latencyMs: 1500, handler });
    try {
      const claude = new ClaudeProposer({ apiKey: server.apiKey, baseURL: server.url, python: resolvePython() });
      const end = await loop(dir, claude, { maxExperiments: 3 }).run();
      expect(end.reason).toBe('max-experiments');
      const exps = experiments(dir, 't1');
      const by = (n: number) => exps.find(e => e.n === n) as ExperimentRecord;
      expect(exps.map(e => e.n).sort()).toEqual([0, 1, 2, 3]);
      expect(exps.filter(e => e.n > 0).every(e => e.cost_usd > 0 && e.proposer === 'claude')).toBe(true);
      // #2 was proposed while #1 trained on worker 1, and the prompt said so.
      const prompts = server.requests
        .filter(r => r.path.startsWith('/v1/messages'))
        .map(r => JSON.stringify(r.body.messages[0].content));
      expect(prompts[0]).not.toContain('other workers are running');
      expect(prompts[1]).toContain('Experiments other workers are running right now');
      expect(prompts[1]).toContain('#1 (worker 1): double the learning rate');
      // #1 was kept while #2 was proposed on the baseline: #2 was re-applied on #1 and started from it.
      expect(by(1).status).toBe('keep');
      expect(by(2).parent_commit).toBe(by(1).commit);
      expect(by(2).diff).toContain('+print("peak_vram_mb:     1024.0")');
      expect(by(2).diff).not.toMatch(/^[-+]LEARNING_RATE/m);
      expect(by(2).lines_added).toBe(1);
      expect(by(2).rationale).toMatch(/re-applied on the newer one/);
      expect(git(dir, 'show', `${by(2).commit}:train.py`)).toContain('LEARNING_RATE = 0.002');
      replay(journal(dir, 't1'), exps[0].parent_commit, true);
      expect(git(dir, 'rev-parse', 'autoresearch/t1').trim()).toBe(end.best_commit);
    } finally {
      server.close();
    }
  });
});

describe('two workers through Jupyter kernels', () => {
  let server: JupyterServer;
  beforeAll(async () => {
    vi.spyOn(console, 'debug').mockImplementation(() => undefined); // @jupyterlab/services narrates with it
    server = await startJupyterServer();
  });
  afterAll(async () => {
    await server?.stop();
  });

  it('each worker runs in a kernel of its own, from its worktree', async () => {
    const dir = makeWorkspace({ train: workerTrain('0.3') });
    const kernels = [1, 2].map(
      () => new KernelExecutor({ serverUrl: server.url, token: server.token, kernelName: 'python3', graceS: 1 }),
    );
    const used = new Map<number, Set<string | null>>();
    const l = loop(dir, new OfflineProposer({ seed: 1 }), {
      executor: kernels[0],
      executorFor: k => kernels[k - 1],
      maxExperiments: 3,
    });
    l.on('phase', (_n: number, phase: string, _d: string, worker: number) => {
      if (phase === 'judge') used.set(worker, (used.get(worker) ?? new Set()).add(kernels[worker - 1].kernelId));
    });
    try {
      const end = await l.run();
      expect(end.reason).toBe('max-experiments');
    } finally {
      await Promise.all(kernels.map(k => k.dispose()));
    }
    const exps = experiments(dir, 't1');
    expect(exps.map(e => e.status).every(s => s === 'keep' || s === 'discard')).toBe(true);
    expect([...used.keys()].sort()).toEqual([1, 2]);
    const [k1, k2] = [[...(used.get(1) ?? [])], [...(used.get(2) ?? [])]];
    expect(k1).toHaveLength(1);
    expect(k2).toHaveLength(1);
    expect(k1[0]).not.toBe(k2[0]);
    // A kernel's worker gets no CUDA_VISIBLE_DEVICES from the engine: its kernel's environment decides.
    const inherited = `cuda=${savedCuda ?? 'None'}`;
    for (const e of exps) {
      expect(fs.readFileSync(e.log_path as string, 'utf8')).toContain(
        `${path.join('.autoresearch', 't1', 'worktrees', `w${e.worker}`)} ${inherited}`,
      );
    }
    const best = replay(journal(dir, 't1'), exps[0].parent_commit);
    expect(git(dir, 'rev-parse', 'autoresearch/t1').trim()).toBe(best?.commit);
  });
});

describe('two workers through the command line', () => {
  it('resume after kill -9 mid-run: every in-flight experiment interrupted once, nothing counted twice', async () => {
    const dir = makeWorkspace({ train: workerTrain('1.5') });
    const child = startCli(['run', dir, '--tag', 't1', '--workers', '2', '--seed', '1']);
    const done = finished(child);
    // Both workers busy with proposals (the baseline is done).
    await waitFor(
      () => inFlightOf(dir).length === 2 && inFlightOf(dir).every(s => s.n > 0),
      60_000,
      'two experiments in flight',
    );
    // Two groups a run: its guard's and its command's.
    await waitFor(() => runGroups(dir).length === 4, 20_000, 'both training runs to start');
    const status = await cli(['status', dir]);
    expect(status.stdout).toMatch(/in flight: +worker 1: #\d+ /);
    expect(status.stdout).toMatch(/in flight: +worker 2: #\d+ /);
    const orphans = runGroups(dir);
    child.kill('SIGKILL');
    await done;
    const left = inFlightOf(dir);
    // The engine's death ends both training runs (each run guard's parent-death signal).
    await waitFor(() => orphans.every(p => !running(p)), 15_000, 'the training runs to end with their engine');

    const r = await cli(['run', dir, '--resume', '--workers', '2', '--more-experiments', '2']);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(orphans.filter(running)).toEqual([]);
    const exps = experiments(dir, 't1');
    expect(exps.map(e => e.n).sort((a, b) => a - b)).toEqual(exps.map((_, i) => i));
    for (const start of left) {
      const recs = exps.filter(e => e.n === start.n);
      expect(recs).toHaveLength(1);
      // Killed mid-run: interrupted. Killed in the instant between its run's record and its own,
      // it is measured on from that run (nothing recorded is lost) and judged on resume.
      const measuredOn = journal(dir, 't1').some(
        x => x.type === 'run' && x.n === start.n && Date.parse(x.ts) < Date.parse(recs[0].ts),
      );
      if (recs[0].status !== 'interrupted') expect(measuredOn).toBe(true);
      else
        expect(recs[0]).toMatchObject({ worker: start.worker, reason: expect.stringMatching(/recorded on --resume/) });
    }
    const records = journal(dir, 't1');
    const best = replay(
      records.filter(r => r.type !== 'experiment' || r.status !== 'interrupted' || !left.some(s => s.n === r.n)),
      exps[0].parent_commit,
    );
    expect(git(dir, 'rev-parse', 'autoresearch/t1').trim()).toBe(best?.commit);
    expect(git(dir, 'status', '--porcelain').trim()).toBe('');
    expect(git(dir, 'worktree', 'list').trim().split('\n')).toHaveLength(1);
    const table = rows(dir);
    const counted = exps.filter(e => ['keep', 'discard', 'crash'].includes(e.status));
    expect(table.map(t => [t.commit, t.worker])).toEqual(
      counted.map(e => [(e.commit as string).slice(0, 7), e.worker]),
    );
    expect(new Set(table.map(t => t.commit)).size).toBe(table.length);
  });
});

describe('two workers in a terminal', () => {
  it('the live line shows each worker side by side', async () => {
    const dir = makeWorkspace({ program: '---\nbudget_s: 3\ntimeout_s: 20\n---\nGo.\n', train: workerTrain('2') });
    const command = `${JSON.stringify(process.execPath)} ${JSON.stringify(ENGINE)} run ${JSON.stringify(dir)} --tag t1 --workers 2 --max-experiments 2`;
    const child = spawn('script', ['-qfec', command, '/dev/null'], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, COLUMNS: '160' },
    });
    const r = await finished(child);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(
      /\r\x1b\[2Kw1 #\d+ run \[[█░]+\] \d+s left[^│\r]* {2}│ {2}w2 #\d+ run \[[█░]+\] \d+s left/,
    );
    // The finished lines carry the worker.
    expect(r.stdout).toMatch(/# {2}1 {2}\w+ +\d\.\d{6} +[-+]\d\.\d{6} {2}w[12] {2}/);
  });
});

describe('from two workers to one', () => {
  it('--resume with one worker records both in-flight experiments and works in the folder itself', async () => {
    const dir = makeWorkspace({ train: workerTrain('1.5') });
    const child = startCli(['run', dir, '--tag', 't1', '--workers', '2']);
    const done = finished(child);
    await waitFor(
      () => inFlightOf(dir).length === 2 && inFlightOf(dir).every(s => s.n > 0),
      60_000,
      'two experiments in flight',
    );
    const left = inFlightOf(dir);
    child.kill('SIGKILL');
    await done;

    const r = await cli(['run', dir, '--resume', '--more-experiments', '1']);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const exps = experiments(dir, 't1');
    expect(exps.map(e => e.n).sort((a, b) => a - b)).toEqual(exps.map((_, i) => i));
    expect(left.map(s => exps.find(e => e.n === s.n)?.status)).toEqual(['interrupted', 'interrupted']);
    const last = exps.at(-1) as ExperimentRecord;
    expect(last.worker).toBeUndefined();
    expect(fs.readFileSync(last.log_path as string, 'utf8')).toContain(`ran in ${fs.realpathSync(dir)} cuda=`);
    expect(git(dir, 'worktree', 'list').trim().split('\n')).toHaveLength(1);
    // results.tsv keeps its worker column: blank for the one-worker row.
    expect(rows(dir).at(-1)).toMatchObject({ commit: (last.commit as string).slice(0, 7), worker: null });
    const best = exps.filter(e => e.status === 'keep').at(-1) as ExperimentRecord;
    expect(git(dir, 'rev-parse', 'HEAD').trim()).toBe(best.commit);
    expect(git(dir, 'status', '--porcelain').trim()).toBe('');
  });
});

describe('two workers, kill -9 at any moment', () => {
  it('--resume always recovers: numbers unique and continuous, nothing counted twice, the best consistent', async () => {
    const dir = makeWorkspace({ train: workerTrain('0.2 + (N_LAYER % 2) * 0.3') });
    const delays = [300, 650, 900, 1250, 1500, 1900];
    let args = ['run', dir, '--tag', 't1', '--workers', '2'];
    const kills: InFlightAtKill[][] = [];
    for (const delay of delays) {
      const child = startCli(args);
      const done = finished(child);
      await waitFor(
        () =>
          fs.existsSync(path.join(dir, '.autoresearch', 't1', 'journal.jsonl')) &&
          journal(dir, 't1').some(r => r.type === 'run_start' && r.pid === child.pid),
        20_000,
        'the run to start',
      );
      await new Promise(r => setTimeout(r, delay));
      child.kill('SIGKILL');
      await done;
      // Where this kill landed, read from what the dead engine left (a loaded machine moves it).
      kills.push(inFlightAfterKill(journal(dir, 't1')));
      args = ['run', dir, '--resume', '--workers', '2'];
    }
    const last = await cli(['run', dir, '--resume', '--workers', '2', '--more-experiments', '2']);
    expect(last.stderr).toBe('');
    expect(last.code).toBe(0);

    const exps = experiments(dir, 't1');
    expect(exps.map(e => e.n).sort((a, b) => a - b)).toEqual(exps.map((_, i) => i));
    // Each experiment a kill left in flight, on either worker, was recorded once: interrupted when
    // no run of it had been recorded, measured on when one had; nothing else was interrupted.
    expect(expectKillsResolved(kills, exps)).toBeGreaterThan(0);
    const counted = exps.filter(e => ['keep', 'discard', 'crash'].includes(e.status));
    expect(rows(dir).map(r => [r.commit, r.status, r.worker])).toEqual(
      counted.map(e => [(e.commit as string).slice(0, 7), e.status, e.worker]),
    );
    const best = exps.filter(e => e.status === 'keep').at(-1) as ExperimentRecord;
    expect(git(dir, 'rev-parse', 'autoresearch/t1').trim()).toBe(best.commit);
    expect(git(dir, 'rev-parse', 'HEAD').trim()).toBe(best.commit);
    expect(git(dir, 'status', '--porcelain').trim()).toBe('');
    expect(metricOf(dir, best.commit as string)).toBe(best.metric);
    expect(git(dir, 'worktree', 'list').trim().split('\n')).toHaveLength(1);
  });
});

describe('worker plumbing', () => {
  const sub = new SubprocessExecutor();
  it('gives subprocess worker K the K-th GPU', () => {
    expect(deviceEnvs([sub, sub], {})).toEqual([{ CUDA_VISIBLE_DEVICES: '0' }, { CUDA_VISIBLE_DEVICES: '1' }]);
    expect(deviceEnvs([sub, sub], { CUDA_VISIBLE_DEVICES: '3, 5,7' })).toEqual([
      { CUDA_VISIBLE_DEVICES: '3' },
      { CUDA_VISIBLE_DEVICES: '5' },
    ]);
    expect(deviceEnvs([sub, sub], { CUDA_VISIBLE_DEVICES: '' })).toEqual([{}, {}]);
    expect(deviceEnvs([sub], { CUDA_VISIBLE_DEVICES: '4' })).toEqual([{}]);
    expect(() => deviceEnvs([sub, sub, sub], { CUDA_VISIBLE_DEVICES: '0,1' })).toThrow(
      /--workers 3 needs one GPU per worker, but CUDA_VISIBLE_DEVICES lists 2/,
    );
  });

  it('the offline proposer skips a change another worker is running', async () => {
    const proposer = new OfflineProposer({ seed: 0 });
    const ctx = {
      workdir: '/nowhere',
      files: { 'train.py': standInTrain() },
      history: [],
      program: 'Go.',
      metric: 'val_bpb',
      direction: 'lower' as const,
      seed: 0,
    };
    const first = await proposer.propose(ctx);
    const again = await proposer.propose(ctx);
    expect(again?.description).toBe(first?.description); // deterministic: the same context, the same idea
    const other = await proposer.propose({
      ...ctx,
      inFlight: [{ n: 1, worker: 1, description: first?.description ?? '', diff: '', meta: first?.meta }],
    });
    expect(other).not.toBeNull();
    expect(other?.description).not.toBe(first?.description);
  });

  it('adds the worker column to a results.tsv of the original five, blank for the old rows', () => {
    const dir = makeWorkspace();
    const record = (n: number, worker?: number) => ({ ...experiments0(), n, worker });
    appendResult(dir, record(0));
    expect(fs.readFileSync(path.join(dir, 'results.tsv'), 'utf8').split('\n')[0]).toBe(RESULTS_HEADER);
    appendResult(dir, record(1, 2));
    const text = fs.readFileSync(path.join(dir, 'results.tsv'), 'utf8');
    expect(text).toBe(
      `${RESULTS_HEADER_WORKERS}\nabcdef1\t0.900000\t2.0\tkeep\tx\t\nabcdef1\t0.900000\t2.0\tkeep\tx\t2\n`,
    );
    expect(parseResults(text).map(r => r.worker)).toEqual([null, 2]);
  });

  it('refuses several workers when an editable file is not committed', async () => {
    const dir = makeWorkspace({
      extra: { 'model.py': 'X = 1\n' },
      program: '---\nbudget_s: 1\neditable: [train.py, model.py]\n---\nGo.\n',
    });
    git(dir, 'rm', '-q', '--cached', 'model.py');
    git(dir, '-c', 'user.name=t', '-c', 'user.email=t@t', 'commit', '-qm', 'untrack');
    await expect(loop(dir, new ScriptedProposer([])).run()).rejects.toThrow(
      /every editable and read-only file must be committed .*git add model.py/,
    );
  });
});

function experiments0(): ExperimentRecord {
  return {
    type: 'experiment',
    ts: 't',
    n: 0,
    parent_commit: 'abcdef1234',
    commit: 'abcdef1234',
    description: 'x',
    rationale: '',
    diff: '',
    lines_added: 0,
    lines_removed: 0,
    summary: {},
    metric: 0.9,
    best_before: null,
    delta: null,
    status: 'keep',
    reason: null,
    memory_gb: 2,
    timings: { propose_s: 0, run_s: 0, total_s: 0 },
    exit_code: 0,
    signal: null,
    log_path: null,
    log_truncated: false,
    proposer: 'p',
    usage: { input_tokens: 0, output_tokens: 0, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 },
    cost_usd: 0,
  };
}

function inFlightOf(dir: string): ExperimentStartRecord[] {
  try {
    const records = journal(dir, 't1');
    const done = new Set(records.filter(r => r.type === 'experiment').map(r => r.n));
    return records.filter((r): r is ExperimentStartRecord => r.type === 'experiment_start' && !done.has(r.n));
  } catch {
    return [];
  }
}

/** Alive and not a zombie: this machine's init reaps orphans late, and a killed one lingers as a zombie. */
function running(pid: number): boolean {
  try {
    return alive(pid) && !/^\d+ \(.*\) Z/.test(fs.readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
}

function runGroups(dir: string): number[] {
  try {
    const info = JSON.parse(fs.readFileSync(path.join(dir, '.autoresearch', 'engine.json'), 'utf8'));
    return (info.run_pgids ?? []) as number[];
  } catch {
    return [];
  }
}
