/**
 * The transfer study: replays a run's baseline and every kept commit (each the cumulative state)
 * with the larger scale's environment, K runs each, through the same executor, run guard and
 * sandbox as the run; with `ablate`, also the final best with each kept change reverted alone,
 * at the search scale. Everything happens in a detached git worktree under the study's folder,
 * so the user's work tree and branch are never touched. Each run is journaled as it ends; a rerun
 * counts the runs already there and makes only the missing ones.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { budgetWarning } from '../../core/rule/budget-check';
import { noiseRuleOf } from '../../core/rule/noise';
import type { RunConfig, RunStartRecord } from '../../core/journal/journal';
import { defaultTimeout, parseProgram } from '../../core/config/program';
import { keptChain, type TransferSummary } from '../../core/study/transfer';
import { studyRunsOf, type StudyKind } from '../../core/study/transfer-journal';
import { acquireEngineLock, assertNoOtherEngine, releaseEngineLock } from '../run/engine-lock';
import type { Executor } from '../executor/types';
import { Repo } from '../git/git';
import { JournalStore } from '../store/journal-store';
import { seedFor, stateOf } from '../experiment/ledger';
import { runStudyOnce, type StudyRunContext } from './transfer-run';
import { StudyStore, studyPaths } from './transfer-store';
import { ENGINE_VERSION } from '../version';
import { checkTag, hashFiles, latestTag, PROGRAM_FILE, runPaths } from '../workspace/workspace';
import { UserError } from '../user-error';
import { readRegularIfAny } from '../workspace/workspace-files';

export interface StudyOptions {
  dir: string;
  tag?: string;
  /** The larger scale; default: program.md's `transfer.env`. */
  env?: Record<string, string>;
  /** Budget of a transfer run; default: `transfer.budget_s`, else the run's budget. */
  budgetS?: number;
  /** Runs of each commit; default: the run's noise_runs, at least 2. */
  runs?: number;
  ablate: boolean;
  executor: Executor;
  python: string;
  signal: AbortSignal;
  onNote?: (text: string) => void;
}

export interface StudyResult {
  summary: TransferSummary;
  /** How it ended: all targets measured, or stopped by a signal (rerun to continue). */
  stopped: boolean;
  /** Runs this invocation made. */
  ran: number;
}

/** What the study is, resolved from the flags, program.md and the run's journal; nothing touched yet. */
function resolveStudy(o: StudyOptions) {
  const tag = o.tag ?? latestTag(o.dir);
  if (!tag) throw new UserError(`no run in ${o.dir} to study; start one with: autoresearch run ${o.dir}`);
  checkTag(tag);
  const records = new JournalStore(runPaths(o.dir, tag).journal).read();
  const start = [...records].reverse().find((r): r is RunStartRecord => r.type === 'run_start');
  if (!start) throw new UserError(`run ${tag} has no journal in ${o.dir}; name a run with --tag`);
  let fm: ReturnType<typeof parseProgram>['frontMatter'] = {};
  const program = readRegularIfAny(o.dir, PROGRAM_FILE);
  if (program !== null) {
    try {
      fm = parseProgram(program.toString('utf8')).frontMatter;
    } catch (e) {
      throw new UserError((e as Error).message);
    }
  }
  const env = o.env ?? fm.transfer?.env ?? {};
  if (Object.keys(env).length === 0) {
    throw new UserError(
      "name the larger scale: --env KEY=VALUE (e.g. --env AUTORESEARCH_SCALE=2), or transfer: {env: {…}} in program.md's front matter",
    );
  }
  const config: RunConfig = start.config;
  const budgetS = o.budgetS ?? fm.transfer?.budget_s ?? config.budget_s;
  const timeoutS = budgetS === config.budget_s ? config.timeout_s : defaultTimeout(budgetS);
  const runs = o.runs ?? Math.max(2, noiseRuleOf(config).noiseRuns);
  if (runs < 2)
    throw new UserError(`--runs ${runs}: a study needs at least 2 runs of each commit for a standard error`);
  return { tag, records, config, env, budgetS, timeoutS, runs };
}

/** Runs (or continues) the study and returns its result. */
export async function runTransferStudy(o: StudyOptions): Promise<StudyResult> {
  const s = resolveStudy(o);
  const paths = studyPaths(o.dir, s.tag);
  const store = new StudyStore(paths, s.records);
  const chain = keptChain(s.records);
  if (chain.length <= 1) {
    // Written all the same, so a reader can show that there was nothing to study.
    store.writeSummary();
    return { summary: store.summary(), stopped: false, ran: 0 };
  }
  const first = store.records.find(r => r.type === 'study_start');
  if (first?.type === 'study_start' && (!sameEnv(first.env, s.env) || first.budget_s !== s.budgetS)) {
    const was = Object.entries(first.env)
      .map(([k, v]) => `${k}=${v}`)
      .join(' ');
    throw new UserError(
      `${paths.root} holds a study of run ${s.tag} at ${was}, budget ${first.budget_s} s; rerun with those settings to continue it, or delete that folder to start another`,
    );
  }
  assertNoOtherEngine(o.dir);
  // The workspace's engine lock: no run starts on the machine while the study measures, and a
  // training run a killed study left behind is killed by the next one, as a resumed run does.
  const left = acquireEngineLock(o.dir, s.tag, 'transfer');
  const main = new Repo(o.dir);
  let ran = 0;
  try {
    await o.executor.reclaim?.(left, o.dir);
    await main.removeWorktree(paths.worktree);
    await main.raw([
      'worktree',
      'add',
      '-q',
      '--detach',
      '--force',
      '--force',
      paths.worktree,
      chain[0].commit as string,
    ]);
    const wt = new Repo(paths.worktree);
    store.append({
      type: 'study_start',
      ts: new Date().toISOString(),
      tag: s.tag,
      env: s.env,
      budget_s: s.budgetS,
      timeout_s: s.timeoutS,
      runs: s.runs,
      ablate: o.ablate,
      executor: o.executor.name,
      resume: first !== undefined,
      engine_version: ENGINE_VERSION,
      pid: process.pid,
    });
    const ctx = (kind: StudyKind): StudyRunContext => ({
      dir: o.dir,
      worktree: paths.worktree,
      config: s.config,
      executor: o.executor,
      python: o.python,
      signal: o.signal,
      tag: s.tag,
      ...(kind === 'transfer'
        ? { budgetS: s.budgetS, timeoutS: s.timeoutS, env: s.env }
        : { budgetS: s.config.budget_s, timeoutS: s.config.timeout_s, env: {} }),
    });
    const measureTarget = async (kind: StudyKind, commit: string, reverted: string | null, n: number) => {
      const key = reverted ?? commit;
      const done = () => studyRunsOf(store.records, kind, key).filter(r => r.commit === commit);
      const state = stateOf(paths.worktree, s.config.editable);
      const hashes = hashFiles(paths.worktree, s.config.readonly);
      for (let k = done().length + 1; k <= s.runs; k++) {
        const run = await runStudyOnce(
          ctx(kind),
          { kind, commit, reverted, state, k, seed: seedFor(n, k), hashes },
          paths.log(kind, key, k),
        );
        if (!run) return false;
        store.append(run);
        ran++;
      }
      const warn = budgetWarning(kind === 'transfer' ? s.budgetS : s.config.budget_s, done());
      if (warn) o.onNote?.(`${commit.slice(0, 7)}: ${warn.message}`);
      return true;
    };
    for (const e of chain) {
      const commit = e.commit as string;
      if (studyRunsOf(store.records, 'transfer', commit).length >= s.runs) continue;
      await checkoutClean(wt, commit);
      checkFiles(paths.worktree, s.config, commit);
      if (!(await measureTarget('transfer', commit, null, e.n))) return stop(store, ran);
    }
    if (o.ablate) {
      const best = chain[chain.length - 1];
      const bestCommit = best.commit as string;
      for (const e of chain.slice(1)) {
        const c = e.commit as string;
        const runs = studyRunsOf(store.records, 'ablate', c).filter(r => r.commit === bestCommit);
        const conflicted = store.records.some(
          r => r.type === 'revert_conflict' && r.reverted === c && r.commit === bestCommit,
        );
        if (conflicted || runs.length >= s.runs) continue;
        await checkoutClean(wt, bestCommit);
        const conflict = await revertAlone(wt, c);
        if (conflict !== null) {
          store.append({
            type: 'revert_conflict',
            ts: new Date().toISOString(),
            commit: bestCommit,
            reverted: c,
            message: conflict,
          });
          o.onNote?.(`reverting ${c.slice(0, 7)} (${e.description}) from the best conflicts: ${conflict}`);
          await checkoutClean(wt, bestCommit);
          continue;
        }
        // The best's own runs' seeds, so a removal is compared on the draws the best had.
        if (!(await measureTarget('ablate', bestCommit, c, best.n))) return stop(store, ran);
      }
    }
    store.append({ type: 'study_end', ts: new Date().toISOString(), reason: 'done', message: null });
    await main.removeWorktree(paths.worktree);
    return { summary: store.summary(), stopped: false, ran };
  } finally {
    releaseEngineLock(o.dir);
  }
}

function stop(store: StudyStore, ran: number): StudyResult {
  store.append({
    type: 'study_end',
    ts: new Date().toISOString(),
    reason: 'signal',
    message: 'stopped; rerun the same command to continue',
  });
  return { summary: store.summary(), stopped: true, ran };
}

function sameEnv(a: Record<string, string>, b: Record<string, string>): boolean {
  const keys = Object.keys(a);
  return keys.length === Object.keys(b).length && keys.every(k => a[k] === b[k]);
}

/** The worktree at `commit`, exactly: what a training run wrote there before is gone. */
async function checkoutClean(wt: Repo, commit: string): Promise<void> {
  await wt.raw(['revert', '--quit']).catch(() => undefined);
  await wt.raw(['checkout', '-q', '--detach', '--force', commit]);
  await wt.raw(['clean', '-q', '-fd']);
}

/** A worktree has only what git tracks: a file the run needs and git does not is missing there. */
function checkFiles(wtDir: string, config: RunConfig, commit: string): void {
  const missing = [...config.editable, ...config.readonly].filter(f => !fs.existsSync(path.join(wtDir, f)));
  if (missing.length) {
    throw new UserError(
      `${missing.join(', ')} is not committed at ${commit.slice(0, 7)}, and the study checks each commit out in a git worktree: commit it and rerun the study`,
    );
  }
}

/** Reverts one commit into the work tree, uncommitted; says what conflicted when it cannot apply alone, else null. */
async function revertAlone(wt: Repo, commit: string): Promise<string | null> {
  try {
    await wt.raw(['revert', '--no-commit', '--no-edit', commit]);
    return null;
  } catch (e) {
    // git's stderr is mostly hints; the unmerged files say what happened.
    const unmerged = (await wt.raw(['diff', '--name-only', '--diff-filter=U']).catch(() => ''))
      .split('\n')
      .filter(Boolean);
    if (unmerged.length) return `conflicts in ${unmerged.join(', ')}: a later kept change rewrote the same lines`;
    const lines = String((e as Error).message).split('\n');
    return (lines.find(l => l.startsWith('error:')) ?? lines[0] ?? 'git revert failed').slice(0, 200);
  }
}
