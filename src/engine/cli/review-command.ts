/**
 * Step mode from a terminal: `autoresearch review` prints the proposal awaiting review,
 * `approve` and `reject` answer it from another shell by writing the decision file the waiting
 * engine takes (step-review.ts), `step on|off` switches the mode of a run going on (review-mode.ts),
 * and `ttyAsker` is the prompt `run` shows when it has a terminal.
 */
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as readline from 'node:readline';
import type { Command } from 'commander';
import type { RunStartRecord } from '../../core/journal/journal';
import { knobRulesOfMeta, knobRuleWords } from '../../core/step-mode/knob-notes';
import type { PendingReview, ReviewDecision, ReviewMode } from '../../core/step-mode/review';
import { isEngineAlive, readEngineInfo } from '../run/engine-lock';
import { JournalStore } from '../store/journal-store';
import { modePath, severalWorkersMessage } from '../step-mode/review-mode';
import { readPending, reviewPaths, writeJsonAtomic, type Asker } from '../step-mode/step-review';
import { checkTag, latestTag, runPaths } from '../workspace/workspace';
import { UserError } from '../user-error';
import { readRegularText } from '../workspace/workspace-files';

/** The run's folder and its pending proposal; a UserError naming why there is none. */
function pendingOf(dir: string, tagOpt?: string): { tag: string; root: string; pending: PendingReview } {
  const tag = tagOpt ?? latestTag(dir);
  if (!tag) throw new UserError(`no run in ${dir}`);
  checkTag(tag);
  const root = runPaths(dir, tag).root;
  const pending = readPending(root);
  if (!pending) throw new UserError(`no proposal awaits review in run ${tag} (step mode: autoresearch run --step)`);
  return { tag, root, pending };
}

/** The pending proposal as `review` prints it. */
export function reviewText(dir: string, tag?: string): string {
  const { tag: t, pending: p } = pendingOf(dir, tag);
  const lines = [
    `#${p.n} awaits review (run ${t}, since ${p.since}, proposed by ${p.proposer})`,
    `description: ${p.description}`,
    `rationale:   ${p.rationale}`,
    ...(p.why ? [`why:         ${p.why}`] : []),
    ...knobRulesOfMeta(p.meta).map(rule => `rule:        ${knobRuleWords(rule)}`),
    ...(p.refused ? [`refused:     ${p.refused.message} (${p.refused.ts})`] : []),
    '',
    p.diff.trimEnd(),
    '',
    `decide: autoresearch approve ${dir} [--all] | autoresearch reject ${dir} [--note TEXT]`,
  ];
  return lines.join('\n');
}

/**
 * Writes a decision for the pending proposal; with an engine running, waits (up to waitS) for it
 * to be taken and reports whether it was used or refused.
 */
export async function decide(
  dir: string,
  o: { tag?: string; n?: number; note?: string; all?: boolean; files?: Record<string, string>; waitS?: number },
  decision: 'approve' | 'reject',
): Promise<string> {
  const { tag, root, pending } = pendingOf(dir, o.tag);
  if (o.n !== undefined && o.n !== pending.n) {
    throw new UserError(`#${o.n} is not awaiting review; #${pending.n} is (${pending.description})`);
  }
  const record: ReviewDecision = {
    n: pending.n,
    decision,
    source: 'cli',
    ts: new Date().toISOString(),
    ...(o.note !== undefined ? { note: o.note } : {}),
    ...(o.all ? { all: true } : {}),
    ...(o.files ? { files: o.files } : {}),
  };
  const file = reviewPaths(root).decision;
  writeJsonAtomic(file, record);
  const verb = decision === 'approve' ? 'approved' : 'rejected';
  const engine = readEngineInfo(dir);
  if (!engine || engine.tag !== tag || !isEngineAlive(engine)) {
    return `${verb} #${pending.n}; no engine is running on run ${tag}: it applies on autoresearch run ${dir} --resume`;
  }
  const until = Date.now() + (o.waitS ?? 10) * 1000;
  while (fs.existsSync(file) && Date.now() < until) await new Promise(r => setTimeout(r, 100));
  if (fs.existsSync(file)) return `${verb} #${pending.n}; the engine has not taken it yet`;
  const after = readPending(root);
  if (after?.n === pending.n && after.refused && after.refused.ts >= record.ts) {
    throw new UserError(`the engine refused the decision for #${pending.n}: ${after.refused.message}`);
  }
  return `${verb} #${pending.n} (${pending.description})`;
}

/**
 * Turns step mode on or off for the run an engine is running now (the mode file, atomically); a
 * UserError when no engine runs on it, or when `step` is on and the run has several workers.
 */
export function setStepMode(dir: string, o: { tag?: string; step: boolean }): string {
  const engine = readEngineInfo(dir);
  const tag = o.tag ?? engine?.tag ?? latestTag(dir);
  if (!tag) throw new UserError(`no run in ${dir}`);
  checkTag(tag);
  if (!engine || engine.tag !== tag || engine.kind === 'transfer' || !isEngineAlive(engine)) {
    throw new UserError(`no engine is running on run ${tag}; start it in step mode: autoresearch run ${dir} --step`);
  }
  const paths = runPaths(dir, tag);
  const records = fs.existsSync(paths.journal) ? new JournalStore(paths.journal).read() : [];
  const start = records.filter((r): r is RunStartRecord => r.type === 'run_start').at(-1);
  const workers = start?.config.workers ?? 1;
  if (o.step && workers > 1) throw new UserError(severalWorkersMessage(workers));
  const mode: ReviewMode = { step: o.step, source: 'cli', ts: new Date().toISOString() };
  fs.mkdirSync(paths.root, { recursive: true });
  writeJsonAtomic(modePath(paths.root), mode);
  return o.step
    ? `step mode on for run ${tag}: from the next proposal on, each awaits autoresearch approve / reject`
    : `step mode off for run ${tag}: the next proposals are not reviewed (one awaiting review now still is)`;
}

/** The prompt of `run` on a terminal: [a]pprove / [r]eject / [e]dit in $EDITOR. */
export function ttyAsker(dir: string, print: (text: string) => void): Asker {
  return (pending, signal) =>
    new Promise<ReviewDecision>(resolve => {
      const rl = readline.createInterface({ input: process.stdin, output: process.stdout });
      // Ctrl-C at the prompt stops the run as it does anywhere else.
      rl.on('SIGINT', () => process.kill(process.pid, 'SIGINT'));
      signal.addEventListener('abort', () => rl.close(), { once: true });
      const answer = (d: Omit<ReviewDecision, 'n' | 'source' | 'ts'>) => {
        rl.close();
        resolve({ n: pending.n, source: 'tty', ts: new Date().toISOString(), ...d });
      };
      print(`\n#${pending.n}: ${pending.description}\n${pending.rationale}\n${pending.diff.trimEnd()}`);
      const ask = () => {
        if (signal.aborted) return;
        rl.question(`#${pending.n} [a]pprove / [A]pprove all / [r]eject / [e]dit in $EDITOR? `, key => {
          if (key === 'a') answer({ decision: 'approve' });
          else if (key === 'A') answer({ decision: 'approve', all: true });
          else if (key === 'r')
            rl.question('note for the next proposal (empty: none): ', note => answer({ decision: 'reject', note }));
          else if (key === 'e') {
            const files = editInEditor(dir, pending);
            if (files) answer({ decision: 'approve', files });
            else ask();
          } else ask();
        });
      };
      ask();
    });
}

/** Opens the proposed files (in the work tree, where they are applied) in $EDITOR; their contents after, or null. */
function editInEditor(dir: string, pending: PendingReview): Record<string, string> | null {
  const editor = process.env.VISUAL || process.env.EDITOR || 'vi';
  const files = pending.editable.filter(f => fs.existsSync(path.join(dir, f)));
  const r = spawnSync(editor, files, { cwd: dir, stdio: 'inherit', shell: process.platform === 'win32' });
  if (r.status !== 0) return null;
  return Object.fromEntries(files.map(f => [f, readRegularText(dir, f)]));
}

/** `review`, `approve`, `reject` and `step`. */
export function registerReviewCommands(program: Command, abs: (dir: string) => string): void {
  const numberOf = (v: string) => {
    const n = Number(v);
    if (!Number.isInteger(n) || n < 0) throw new UserError('--n must be a whole number of 0 or more');
    return n;
  };
  program
    .command('review')
    .description('step mode: print the proposal awaiting review (description, rationale, diff)')
    .argument('<dir>', 'workspace')
    .option('--tag <tag>', 'run (default: the latest)')
    .action((dir: string, o: { tag?: string }) => {
      process.stdout.write(reviewText(abs(dir), o.tag) + '\n');
    });
  program
    .command('approve')
    .description('step mode: approve the proposal awaiting review; it is committed and trains')
    .argument('<dir>', 'workspace')
    .option('--tag <tag>', 'run (default: the latest)')
    .option('--n <n>', 'refuse unless this is the number awaiting review', numberOf)
    .option('--all', 'approve it and review nothing more in this run')
    .option('--note <text>', 'for the record and the next proposal (a knob it names may be left alone)')
    .action(async (dir: string, o: { tag?: string; n?: number; all?: boolean; note?: string }) => {
      process.stdout.write((await decide(abs(dir), o, 'approve')) + '\n');
    });
  program
    .command('reject')
    .description(
      'step mode: reject the proposal awaiting review; it never trains, and the note reaches the next proposal',
    )
    .argument('<dir>', 'workspace')
    .option('--tag <tag>', 'run (default: the latest)')
    .option('--n <n>', 'refuse unless this is the number awaiting review', numberOf)
    .option('--note <text>', 'why, for the record and the next proposal')
    .action(async (dir: string, o: { tag?: string; n?: number; note?: string }) => {
      process.stdout.write((await decide(abs(dir), o, 'reject')) + '\n');
    });
  program
    .command('step')
    .description('step mode while a run goes on: on, each next proposal awaits review; off, none does')
    .argument('<dir>', 'workspace')
    .argument('<on|off>', 'on or off')
    .option('--tag <tag>', 'run (default: the running one)')
    .action((dir: string, state: string, o: { tag?: string }) => {
      if (state !== 'on' && state !== 'off') throw new UserError(`step takes on or off, not ${JSON.stringify(state)}`);
      process.stdout.write(setStepMode(abs(dir), { tag: o.tag, step: state === 'on' }) + '\n');
    });
}
