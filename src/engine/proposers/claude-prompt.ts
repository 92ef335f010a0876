/**
 * What a claude proposal request says: the system block (the engine's role,
 * then program.md verbatim) and the user content (a stable summary of older
 * experiments, then what changes: the latest results in full, a crash's log
 * tail, the files at the best commit). The size stays bounded however long
 * the run: older experiments shrink to one line each, then to a digest.
 */
import * as fs from 'node:fs';
import type { TextBlockParam } from '@anthropic-ai/sdk/resources/messages';
import { z } from 'zod';
import type { ExperimentRecord } from '../../core/journal';
import { fmtNoise } from '../../core/noise';
import type { ProposalContext } from './types';
import { EDITOR, FINISH, FIX } from './claude-tools';

/** Reviewer rejections listed with their notes (step mode). */
const REVIEWER_NOTES = 20;
/** Experiments shown in full (diff, rationale, reason). */
export const RECENT_FULL = 8;
/** The summary block grows in steps of this many experiments, so its cached prefix is reused between steps. */
export const SUMMARY_STEP = 25;
/** Past this many summarised experiments, the summary becomes a digest of bounded size. */
export const MAX_SUMMARY_LINES = 150;
/** Fix attempts allowed per crashed idea. */
export const MAX_FIX_ATTEMPTS = 2;
const DIFF_CHARS = 3000;
const LOG_TAIL_BYTES = 3000;

const ProposalMeta = z.object({ fix_of: z.number().int().optional() }).loose();

/** The fix_of recorded in a record's proposal meta, if any. */
export function fixOf(r: ExperimentRecord): number | undefined {
  const m = ProposalMeta.safeParse(r.proposal_meta);
  return m.success ? m.data.fix_of : undefined;
}

/** The system prompt: the role the engine gives the model, then program.md as the researcher wrote it. */
export function systemText(ctx: Pick<ProposalContext, 'program' | 'metric' | 'direction' | 'noise'>): string {
  const n = ctx.noise;
  const rule =
    n && n.noiseRuns > 1
      ? [
          `trains for a fixed time budget and reads the metric ${ctx.metric} (${ctx.direction} is better). Runs are noisy, so the engine measured the`,
          `noise (the baseline ran ${n.noiseRuns} times) and keeps a commit only when the mean of its runs beats the best's mean by more than`,
          `${n.keepSigma} standard errors of the difference, reproduced on at least two runs (a promising result is re-run up to ${n.confirmRuns} more times);`,
          'otherwise it resets to the best. You do not run anything; the engine runs, commits and judges.',
        ]
      : [
          `trains for a fixed time budget, reads the metric ${ctx.metric} (${ctx.direction} is better), keeps the commit if it beats the best so far`,
          'and otherwise resets to the best. You do not run anything; the engine runs, commits and judges.',
        ];
  return [
    'You are the researcher in an automated research loop. An engine owns the loop: after each of your turns it commits your edit,',
    ...rule,
    '',
    'Each turn you propose exactly one experiment:',
    `- edit the editable files only with the ${EDITOR} tool (view, str_replace, insert; str_replace must match exactly one place);`,
    `- then call ${FINISH} with a one-line description and your rationale. That ends your turn.`,
    `- If the last experiment crashed from a trivial bug, you may be offered to fix it instead (${FIX}).`,
    'Prefer ideas the history does not already rule out; a change small enough to judge from one run is easier to learn from.',
    '',
    "The researcher's instructions (program.md) follow.",
    '',
    ctx.program.trim(),
  ].join('\n');
}

/** A crashed experiment the next proposal may fix instead of trying a new idea. */
export interface FixOffer {
  /** The crashed experiment. */
  record: ExperimentRecord;
  /** The experiment whose idea is being fixed (the first of the chain). */
  root: number;
  /** Which attempt this would be (1-based). */
  attempt: number;
}

/** The fix the next proposal may make, or null: only after a crash, and at most MAX_FIX_ATTEMPTS per idea. */
export function fixOffer(history: ExperimentRecord[]): FixOffer | null {
  const last = history[history.length - 1];
  if (!last || last.status !== 'crash' || !last.commit || last.diff.trim() === '') return null;
  const root = fixOf(last) ?? last.n;
  let done = 0;
  for (let i = history.length - 1; i >= 0 && history[i].status === 'crash' && fixOf(history[i]) === root; i--) done++;
  return done < MAX_FIX_ATTEMPTS ? { record: last, root, attempt: done + 1 } : null;
}

/** The user message's content: a cached summary of older experiments (when there are any), then the changing part. */
export function userContent(
  ctx: ProposalContext,
  opts: { fix: FixOffer | null; logTail: string | null },
): TextBlockParam[] {
  const h = ctx.history;
  const recentStart = Math.max(0, h.length - RECENT_FULL);
  const boundary = Math.floor(recentStart / SUMMARY_STEP) * SUMMARY_STEP;
  const blocks: TextBlockParam[] = [];
  if (boundary > 0) {
    blocks.push({
      type: 'text',
      text: summaryText(h.slice(0, boundary), ctx.direction),
      cache_control: { type: 'ephemeral' },
    });
  }
  const parts = [standing(ctx)];
  if (recentStart > boundary) {
    parts.push(
      `## Experiments #${h[boundary].n}–#${h[recentStart - 1].n}, one line each\n${h.slice(boundary, recentStart).map(oneLine).join('\n')}`,
    );
  }
  if (h.length) {
    parts.push(
      `## The last ${h.length - recentStart} experiment(s) in full\n\n${h.slice(recentStart).map(full).join('\n\n')}`,
    );
  }
  const vetoes = reviewerNotes(h);
  if (vetoes) parts.push(vetoes);
  if (opts.logTail !== null) {
    const last = h[h.length - 1];
    parts.push(`## The log tail of #${last.n}, which crashed\n\`\`\`\n${opts.logTail}\n\`\`\``);
  }
  if (opts.fix) {
    parts.push(
      `You may fix experiment #${opts.fix.record.n} instead of trying a new idea: call ${FIX} to start from its files (its diff is above), ` +
        `fix the bug, then call ${FINISH}. This would be fix attempt ${opts.fix.attempt} of ${MAX_FIX_ATTEMPTS} for the idea of #${opts.fix.root}. ` +
        'Fix it only if the bug is simple; otherwise propose something new.',
    );
  }
  if (ctx.running) {
    parts.push(
      `## Experiment #${ctx.running.n} is training right now (not in the results yet)\n${ctx.running.description}\n\`\`\`diff\n${ctx.running.diff}\n\`\`\`\n` +
        'Propose a different experiment: if this one is kept, your edit will be re-applied on top of it.',
    );
  }
  const others = (ctx.inFlight ?? []).filter(e => e.n !== ctx.running?.n);
  if (others.length) {
    // Several workers: these run on other accelerators now; a duplicate would waste one of them.
    const lines = others.map(e => `- #${e.n} (worker ${e.worker}): ${e.description}`);
    parts.push(
      `## Experiments other workers are running right now (not in the results yet)\n${lines.join('\n')}\n\nPropose something different from each of them.`,
    );
  }
  parts.push(
    `# The editable files at the best commit\n\n${Object.entries(ctx.files)
      .map(([f, text]) => `## ${f}\n\`\`\`${f.endsWith('.py') ? 'python' : ''}\n${text}\n\`\`\``)
      .join('\n\n')}`,
  );
  parts.push(`# Your turn\nPropose exactly one experiment: edit with ${EDITOR}, then call ${FINISH}.`);
  blocks.push({ type: 'text', text: parts.join('\n\n') });
  return blocks;
}

/** Step mode: the human reviewer's rejections, each note verbatim (the teacher's words are the point), the latest last. */
function reviewerNotes(history: ExperimentRecord[]): string | null {
  const vetoed = history.filter(r => r.review?.action === 'reject').slice(-REVIEWER_NOTES);
  if (!vetoed.length) return null;
  const lines = vetoed.map(r => `- #${r.n} ${r.description}: ${r.reason ?? 'rejected by reviewer'}`);
  return `## Proposals the human reviewer rejected before they ran\n${lines.join('\n')}\n\nTake the reviewer's notes into account: do not propose these again, nor what the notes rule out.`;
}

/** The last bytes of a log, decoded as text; null when it can't be read. */
export function readLogTail(file: string | null, bytes = LOG_TAIL_BYTES): string | null {
  if (!file) return null;
  try {
    const fd = fs.openSync(file, 'r');
    try {
      const size = fs.fstatSync(fd).size;
      const buf = Buffer.alloc(Math.min(bytes, size));
      fs.readSync(fd, buf, 0, buf.length, size - buf.length);
      const text = buf.toString('utf8');
      // A cut-off first line is noise: start at the next whole line.
      return size > bytes ? '…' + text.slice(text.indexOf('\n')) : text;
    } finally {
      fs.closeSync(fd);
    }
  } catch {
    return null;
  }
}

function standing(ctx: ProposalContext): string {
  const h = ctx.history;
  const keeps = h.filter(r => r.status === 'keep' && r.metric !== null);
  const best = keeps[keeps.length - 1];
  const counts = new Map<string, number>();
  h.forEach(r => counts.set(r.status, (counts.get(r.status) ?? 0) + 1));
  return [
    '# Where the run stands',
    `Metric: ${ctx.metric}, ${ctx.direction} is better.`,
    best
      ? `Best so far: ${fmt(best.metric)} at #${best.n}; baseline ${fmt(keeps[0].metric)} at #${keeps[0].n}.`
      : 'No baseline yet.',
    `Experiments so far: ${h.length} (${[...counts].map(([k, v]) => `${v} ${k}`).join(', ')}).`,
    ...noiseLines(ctx),
  ].join('\n');
}

/** σ and the floor a gain must clear, in numbers, once the noise has been measured. */
function noiseLines(ctx: ProposalContext): string[] {
  const n = ctx.noise;
  if (!n || n.noiseRuns <= 1) return [];
  if (n.sigma === null) return [`Noise: not measured yet (the baseline runs ${n.noiseRuns} times first).`];
  if (n.sigma === 0) return ['Noise: none measured (repeated runs give the same metric), so any improvement is kept.'];
  const floor = n.keepSigma * n.sigma * Math.sqrt(1 / 2 + 1 / Math.max(1, n.bestRuns));
  return [
    `Noise: σ = ${fmtNoise(n.sigma)} per run (${n.df} degrees of freedom). A kept change must beat the best's mean (${n.bestRuns} runs) by more than`,
    `${fmtNoise(floor)} on two runs (${n.keepSigma}σ of the difference); differences smaller than that are noise, not findings. Prefer changes whose`,
    'expected effect is larger than the floor; changing a random seed is never a finding.',
  ];
}

/** The summary of older experiments: one line each, or past MAX_SUMMARY_LINES a digest of bounded size. */
export function summaryText(records: ExperimentRecord[], direction: 'lower' | 'higher'): string {
  const range = `#${records[0].n}–#${records[records.length - 1].n}`;
  if (records.length <= MAX_SUMMARY_LINES) {
    return `# Earlier experiments (${range}), one line each\n${records.map(oneLine).join('\n')}`;
  }
  const counts = new Map<string, number>();
  records.forEach(r => counts.set(r.status, (counts.get(r.status) ?? 0) + 1));
  const keeps = records.filter(r => r.status === 'keep');
  const sign = direction === 'lower' ? 1 : -1;
  const misses = records
    .filter(r => r.status === 'discard' && r.delta !== null)
    .sort((a, b) => sign * ((a.delta as number) - (b.delta as number)));
  const failures = records.filter(r => r.status === 'crash' || r.status === 'rejected');
  const shownKeeps = keeps.slice(-60);
  return [
    `# Earlier experiments (${range}), digested: ${[...counts].map(([k, v]) => `${v} ${k}`).join(', ')}`,
    `## Kept (each beat the best of its time)${keeps.length > shownKeeps.length ? `, the last ${shownKeeps.length} of ${keeps.length}` : ''}`,
    ...shownKeeps.map(oneLine),
    `## The ${Math.min(15, misses.length)} closest misses (discarded)`,
    ...misses.slice(0, 15).map(oneLine),
    `## The last ${Math.min(10, failures.length)} crashed or rejected`,
    ...failures.slice(-10).map(oneLine),
    `The other ${records.length - shownKeeps.length - Math.min(15, misses.length) - Math.min(10, failures.length)} were discarded or failed and are not listed.`,
  ].join('\n');
}

/** One experiment in one line: number, status, metric and delta, description (and why, for a failure). */
export function oneLine(r: ExperimentRecord): string {
  const metric =
    r.metric !== null ? `${fmt(r.metric)}${spread(r)}${r.delta !== null ? ` (${signed(r.delta)})` : ''}` : '—';
  const why = (r.status === 'crash' || r.status === 'rejected') && r.reason ? ` [${clip(r.reason, 80)}]` : '';
  return `#${r.n} ${r.status} ${metric} ${clip(r.description, 120)}${why}`;
}

function full(r: ExperimentRecord): string {
  const fixNote = fixOf(r) !== undefined ? ` (fix attempt for #${fixOf(r)})` : '';
  const metric =
    r.metric !== null
      ? `${fmt(r.metric)}${spread(r)}${r.delta !== null ? ` (${signed(r.delta)} vs best ${fmt(r.best_before)})` : ''}`
      : '—';
  const lines = [`### #${r.n} ${r.status}${fixNote}: ${metric}`, `Description: ${r.description}`];
  if (r.rationale) lines.push(`Rationale: ${clip(r.rationale, 500)}`);
  if (r.reason) lines.push(`Reason: ${clip(r.reason, 300)}`);
  if (r.diff.trim()) {
    const diff =
      r.diff.length > DIFF_CHARS
        ? `${r.diff.slice(0, DIFF_CHARS)}\n… (diff cut at ${DIFF_CHARS} of ${r.diff.length} characters)`
        : r.diff;
    lines.push('```diff\n' + diff.trimEnd() + '\n```');
  }
  return lines.join('\n');
}

/** ` ±0.0021 (3 runs)` for a metric measured more than once; empty otherwise. */
function spread(r: ExperimentRecord): string {
  const runs = r.runs?.filter(x => x.metric !== null).length ?? 1;
  if (runs <= 1) return '';
  return `${r.verdict?.se ? ` ±${fmtNoise(r.verdict.se)}` : ''} (${runs} runs)`;
}

function fmt(v: number | null): string {
  return v === null ? '—' : v.toFixed(6);
}

function signed(v: number): string {
  return (v >= 0 ? '+' : '') + v.toFixed(6);
}

function clip(text: string, n: number): string {
  const one = text.replace(/\s+/g, ' ').trim();
  return one.length > n ? one.slice(0, n - 1) + '…' : one;
}
