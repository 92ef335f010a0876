/**
 * The facts a researcher states before asking a colleague for the next experiment: the budget
 * and what a slower step costs under it, where training runs, the read-only files whole, and (in
 * the part that moves) what is left of the run. Also what each run's log
 * tells that its summary block does not: the final training loss and the device it trained on.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { ExperimentRecord } from '../../../core/journal/journal';
import { DEFAULTS } from '../../../core/config/program';
import type { ProposalContext } from '../types';
import { openStateFile } from '../../workspace/workspace-files';
import { READONLY_READ_BYTES, readonlyText } from './text';

/** The most of one read-only file the prompt shows, and of them all together. */
export const MAX_READONLY_CHARS = 40_000;
const MAX_READONLY_TOTAL = 100_000;
const HEAD_BYTES = 4096;
const TAIL_BYTES = 8192;

/** What a run's log says beyond its summary block. */
export interface LogFacts {
  /** The last training loss it printed (`loss 1.92`, `loss: 3.25`, `train_loss=…`), before the summary. */
  loss: number | null;
  /** Its first line that names the device (`device cuda | params 50.3M | …`). */
  device: string | null;
}

const logCache = new Map<string, LogFacts>();

/** The loss and device of a finished run's log, read once (a log does not change once its record exists). */
export function logFacts(file: string | null): LogFacts {
  if (!file) return { loss: null, device: null };
  const known = logCache.get(file);
  if (known) return known;
  let facts: LogFacts = { loss: null, device: null };
  try {
    const fd = openStateFile(file);
    try {
      const size = fs.fstatSync(fd).size;
      const head = Buffer.alloc(Math.min(HEAD_BYTES, size));
      fs.readSync(fd, head, 0, head.length, 0);
      const tail = Buffer.alloc(Math.min(TAIL_BYTES, size));
      fs.readSync(fd, tail, 0, tail.length, size - tail.length);
      facts = { loss: lastLoss(tail.toString('utf8')), device: deviceLine(head.toString('utf8')) };
    } finally {
      fs.closeSync(fd);
    }
  } catch {
    return facts;
  }
  logCache.set(file, facts);
  return facts;
}

/** The last training loss printed before the `---` summary; validation losses do not count. */
export function lastLoss(text: string): number | null {
  const cut = text.lastIndexOf('\n---');
  const body = cut >= 0 ? text.slice(0, cut) : text;
  const re = /(?<![A-Za-z_])(?<!val_)(?<!val )(?:train_)?loss\s*[:=]?\s*(-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)/g;
  let found: number | null = null;
  for (let m = re.exec(body); m !== null; m = re.exec(body)) {
    const v = Number(m[1]);
    if (Number.isFinite(v)) found = v;
  }
  return found;
}

function deviceLine(text: string): string | null {
  const line = text.split('\n').find(l => /\bdevice\b/i.test(l));
  return line ? clip(line, 200) : null;
}

/** The read-only files of the run (program.md's `readonly`), those that exist in the workspace. */
export function readonlyFiles(ctx: Pick<ProposalContext, 'run' | 'workdir'>): string[] {
  const list = ctx.run?.readonly ?? [...DEFAULTS.readonly];
  return list.filter(f => {
    try {
      return fs.lstatSync(path.join(ctx.workdir, f)).isFile();
    } catch {
      return false;
    }
  });
}

/** The part of the facts that holds for the whole run: it goes in the cached prefix. */
export function stableFacts(ctx: ProposalContext): string {
  const run = ctx.run;
  const lines = ['# The run'];
  if (run) {
    lines.push(
      `- Each experiment trains for ${run.budgetS} s of wall-clock time (AUTORESEARCH_BUDGET_S); a run past ${run.timeoutS} s is killed and counts as a crash.`,
      '  Under a fixed time budget a slower step means fewer steps: compare num_steps and the tokens seen before crediting an idea.',
      run.executor === 'subprocess'
        ? `- Training runs on the engine's machine: ${run.machine ?? 'not described'}.`
        : "- Training runs in a Jupyter kernel, which may be on another machine; the engine knows of it only what the runs' logs say.",
      run.workers > 1
        ? `- ${run.workers} workers train at once, each experiment from the best as it is when it starts.`
        : '- One experiment trains at a time.',
    );
  }
  const base = ctx.history.find(r => r.n === 0);
  const device = base ? logFacts(base.log_path).device : null;
  if (device) lines.push(`- The baseline's log says: \`${device}\``);
  const ro = readonlyFiles(ctx);
  lines.push(
    `- Editable: ${Object.keys(ctx.files).join(', ')}. Read-only (you may view them, never edit them): ${ro.join(', ') || 'none'}.`,
  );
  const whole = readonlyFilesText(ctx);
  if (whole) lines.push('', whole);
  return lines.join('\n');
}

/**
 * Every read-only file whole (program.md's `readonly`: the data, the evaluation, the constants),
 * each cut at MAX_READONLY_CHARS with a note, for the cached prefix: a regular file of the
 * workspace only, never through a link. Null when there is none. The engine hash-checks these
 * files around every run, so the text does not change during a run.
 */
export function readonlyFilesText(ctx: Pick<ProposalContext, 'run' | 'workdir'>): string | null {
  const parts: string[] = [];
  let total = 0;
  for (const f of readonlyFiles(ctx)) {
    const text = readonlyText(ctx.workdir, f);
    if (text === null) continue;
    if (total >= MAX_READONLY_TOTAL) {
      parts.push(
        `## ${f} (read-only)\nNot shown: the read-only files above fill the space for them; view it with the editor.`,
      );
      continue;
    }
    if (text.includes('\u0000')) {
      parts.push(`## ${f} (read-only)\nA binary file, not shown.`);
      continue;
    }
    const room = Math.min(MAX_READONLY_CHARS, MAX_READONLY_TOTAL - total);
    const shown = text.length > room ? text.slice(0, room) : text;
    total += shown.length;
    const cut =
      shown.length < text.length
        ? `\n… (cut at ${shown.length} characters${text.length >= READONLY_READ_BYTES ? '' : ` of ${text.length}`}; view the rest with the editor's view_range)`
        : '';
    const budget =
      ctx.run && text.includes('AUTORESEARCH_BUDGET_S')
        ? `\nNote: the engine sets AUTORESEARCH_BUDGET_S to ${ctx.run.budgetS} s for every run, and this file reads it: that, not a budget constant written below, is each run's training time.`
        : '';
    const fence = text.includes('```') ? '````' : '```';
    parts.push(
      `## ${f} (read-only)${budget}\n${fence}${f.endsWith('.py') ? 'python' : ''}\n${shown.trimEnd()}${cut}\n${fence}`,
    );
  }
  return parts.length ? ['# The read-only files, whole', ...parts].join('\n\n') : null;
}

/** What is left of the run's limits, in one line; null when none was set or the facts are unknown. */
export function leftLine(ctx: ProposalContext, now = Date.now()): string | null {
  const run = ctx.run;
  if (!run) return null;
  const parts: string[] = [];
  if (run.experimentsLeft !== null) parts.push(`${run.experimentsLeft} experiment(s) (--max-experiments)`);
  if (run.deadline !== null) parts.push(`${(Math.max(0, run.deadline - now) / 3600_000).toFixed(1)} h (--hours)`);
  if (run.maxDollars !== null)
    parts.push(
      `$${Math.max(0, run.maxDollars - run.spentUsd).toFixed(2)} of $${run.maxDollars.toFixed(2)} (--max-dollars; $${run.spentUsd.toFixed(2)} spent)`,
    );
  return parts.length
    ? `Left: ${parts.join(', ')}. Plan so the best ideas fit in what is left.`
    : `No limit on experiments, time or spending was set; $${run.spentUsd.toFixed(2)} spent on proposals so far.`;
}

/** The loss an experiment's log ended on, or null. */
export function lossOf(r: ExperimentRecord): number | null {
  return logFacts(r.log_path).loss;
}

export function clip(text: string, n: number): string {
  const one = text.replace(/\s+/g, ' ').trim();
  return one.length > n ? one.slice(0, n - 1) + '…' : one;
}
