/**
 * Test workspaces: real git repositories in temp folders, with a fast
 * stand-in for train.py whose behaviour (metric, sleep, crash, hang, flood)
 * is set per test.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { ExperimentRecord, JournalRecord } from '../../src/core/journal/journal';
import { parseJournal } from '../../src/core/journal/journal';
import type { Proposal, ProposalContext, Proposer } from '../../src/engine/proposers/types';

export const ROOT = path.resolve(__dirname, '..', '..');
export const ENGINE = path.join(ROOT, 'lib', 'engine', 'autoresearch.cjs');

export interface StandIn {
  metric?: number | string;
  sleep?: number;
  exitCode?: number;
  hang?: boolean;
  noSummary?: boolean;
  floodMb?: number;
  /** Starts a grandchild that ignores SIGTERM and sleeps, to check the group kill. */
  stubbornChild?: boolean;
  /** Module-level constants for the offline proposer to tune; the metric is computed from them when metric is unset. */
  constants?: Record<string, number>;
}

/** Python source of a stand-in training script. */
export function standInTrain(o: StandIn = {}): string {
  const consts = o.constants ?? { LEARNING_RATE: 0.001, N_LAYER: 4 };
  const lines = ['import os, sys, time, math, signal, subprocess'];
  for (const [k, v] of Object.entries(consts)) lines.push(`${k} = ${v}`);
  if (o.stubbornChild) {
    lines.push(
      `child = subprocess.Popen([sys.executable, "-c", "import signal, time, os; signal.signal(signal.SIGTERM, signal.SIG_IGN); open('grandchild.pid','w').write(str(os.getpid())); time.sleep(600)"])`,
      'time.sleep(0.5)',
    );
  }
  lines.push('print("step 1 | loss 3.2500", flush=True)');
  if (o.floodMb) {
    lines.push(
      `chunk = ("x" * 1023 + "\\n") * 1024`,
      `for _ in range(${o.floodMb}): sys.stdout.write(chunk)`,
      'sys.stdout.flush()',
    );
  }
  if (o.sleep) lines.push(`time.sleep(${o.sleep})`);
  if (o.hang) lines.push('time.sleep(600)');
  if (o.exitCode)
    lines.push(
      'print("Traceback (most recent call last):", file=sys.stderr)',
      'print("RuntimeError: stand-in failure", file=sys.stderr)',
      `sys.exit(${o.exitCode})`,
    );
  if (!o.noSummary) {
    const metric =
      o.metric !== undefined
        ? JSON.stringify(String(o.metric))
        : `"%.6f" % (1.0 + (math.log2(LEARNING_RATE) - math.log2(0.004)) ** 2 * 0.01 + (N_LAYER - 6) ** 2 * 0.01)`;
    lines.push(
      'print("---")',
      `print("val_bpb:          " + ${metric})`,
      'print("training_seconds: 0.5")',
      'print("peak_vram_mb:     2048.0")',
      'print("num_steps:        10")',
    );
  }
  return lines.join('\n') + '\n';
}

/** program.md for stand-in workspaces: a 1 s budget and a 20 s deadline. */
export const STAND_IN_PROGRAM = '---\nbudget_s: 1\ntimeout_s: 20\n---\n# Tune the stand-in\n\nMake val_bpb lower.\n';

/** A stand-in train.py whose third run prints 40 lines and crashes (counted in counterDir), for a run with a long crash log. */
export function crashingThirdRun(counterDir: string): string {
  const crash = [
    `_c = ${JSON.stringify(path.join(counterDir, 'runs'))}`,
    '_n = int(open(_c).read()) if os.path.exists(_c) else 0',
    'open(_c, "w").write(str(_n + 1))',
    'if _n == 2:',
    '    for i in range(40): print("line %d" % i)',
    '    print("RuntimeError: <stand-in> & boom", file=sys.stderr)',
    '    sys.exit(1)',
    '',
  ].join('\n');
  return standInTrain().replace('print("step 1', `${crash}print("step 1`);
}

export interface WorkspaceFiles {
  program?: string | null;
  train?: string | null;
  prepare?: string | null;
  extra?: Record<string, string>;
}

/** A temp git repository with program.md, train.py and prepare.py committed. */
export function makeWorkspace(files: WorkspaceFiles = {}): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ar-ws-'));
  const all: Record<string, string | null> = {
    'program.md':
      files.program === undefined ? '---\nbudget_s: 1\ntimeout_s: 20\n---\nMake val_bpb lower.\n' : files.program,
    'train.py': files.train === undefined ? standInTrain() : files.train,
    'prepare.py': files.prepare === undefined ? '# fixed: never edited\nTIME_BUDGET = 1\n' : files.prepare,
    ...(files.extra ?? {}),
  };
  for (const [name, text] of Object.entries(all)) {
    if (text !== null) fs.writeFileSync(path.join(dir, name), text);
  }
  git(dir, 'init', '-q', '-b', 'main');
  git(dir, 'add', '-A');
  git(dir, '-c', 'user.name=t', '-c', 'user.email=t@t', 'commit', '-qm', 'initial');
  return dir;
}

/** Runs git in a folder and returns its output. */
export function git(dir: string, ...args: string[]): string {
  return execFileSync('git', args, { cwd: dir, encoding: 'utf8' });
}

/** The journal records of a run. */
export function journal(dir: string, tag: string): JournalRecord[] {
  return parseJournal(fs.readFileSync(path.join(dir, '.autoresearch', tag, 'journal.jsonl'), 'utf8'));
}

/** The experiment records of a run. */
export function experiments(dir: string, tag: string): ExperimentRecord[] {
  return journal(dir, tag).filter((r): r is ExperimentRecord => r.type === 'experiment');
}

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs the bundled CLI to completion. */
export function cli(args: string[], opts: { cwd?: string; env?: Record<string, string> } = {}): Promise<CliResult> {
  const child = startCli(args, opts);
  return finished(child);
}

/** Starts the bundled CLI and returns the process. */
export function startCli(args: string[], opts: { cwd?: string; env?: Record<string, string> } = {}): ChildProcess {
  return spawn(process.execPath, [ENGINE, ...args], {
    cwd: opts.cwd ?? ROOT,
    env: { ...process.env, ...opts.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
}

/** Collects a process's output until it exits. */
export function finished(child: ChildProcess): Promise<CliResult> {
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', d => (stdout += d));
  child.stderr?.on('data', d => (stderr += d));
  return new Promise(resolve => child.on('close', code => resolve({ code, stdout, stderr })));
}

/** Polls until cond() is true or the timeout passes. */
export async function waitFor(cond: () => boolean, timeoutMs = 30_000, what = 'condition'): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise(r => setTimeout(r, 50));
  }
}

/** Whether a process is alive. */
/** Waits until a training run has written its pid to `file`, and returns the pid. */
export async function waitForPid(file: string, what = 'the training run to start'): Promise<number> {
  await waitFor(() => fs.existsSync(file) && fs.readFileSync(file, 'utf8') !== '', 60_000, what);
  return Number(fs.readFileSync(file, 'utf8'));
}

/** Whether a process is alive: it exists and has not ended (a zombie has ended, only not been reaped). */
export function alive(pid: number): boolean {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return !/^[ZX]/.test(stat.slice(stat.lastIndexOf(')') + 2));
  } catch {
    return false;
  }
}

/** A proposer that returns scripted proposals in order (then null): the model boundary, not a mock of the engine. */
export class ScriptedProposer implements Proposer {
  readonly name = 'scripted';
  readonly contexts: ProposalContext[] = [];
  constructor(private readonly proposals: Array<Proposal | ((ctx: ProposalContext) => Proposal)>) {}
  async propose(ctx: ProposalContext): Promise<Proposal | null> {
    this.contexts.push(ctx);
    const next = this.proposals.shift();
    if (!next) return null;
    return typeof next === 'function' ? next(ctx) : next;
  }
}

/** A proposal that replaces train.py with a stand-in. */
export function trainProposal(description: string, o: StandIn): Proposal {
  return { description, rationale: `test: ${description}`, files: { 'train.py': standInTrain(o) } };
}
