/**
 * What a claude proposal request says, in cache order. The system block: the engine's role and
 * rules, then program.md verbatim. The user turn: first what never changes (the run's facts, the
 * read-only files' constants, every experiment as one line in append-only chunks), then what
 * changes only on a keep (the editable files at the best), then what moves (the chunk still
 * filling, where the run stands and what is left, the directions tried, the latest lessons, the
 * last experiments in full, a crash's log tail, what is training now). Nothing is forgotten: at
 * 1,400 experiments every description is still there, most of it read from the cache.
 */
import * as fs from 'node:fs';
import type { TextBlockParam } from '@anthropic-ai/sdk/resources/messages';
import type { ExperimentRecord } from '../../../core/journal/journal';
import { differenceError, fmtNoise, measuresNoise } from '../../../core/rule/noise';
import { mark, type Ttl } from './cache';
import { leftLine, stableFacts } from './facts';
import {
  directionTally,
  fixOf,
  fullEntry,
  historyChunks,
  lastResult,
  LINE_LEGEND,
  predictionLine,
  RECENT_FULL,
  recentLessons,
} from './history';
import { notesAsk, notesBlock, type NotesDue } from './notes';
import { EDITOR, FINISH, FIX } from './tool-defs';
import type { ProposalContext } from '../types';
import { openNoFollow } from '../../workspace/workspace-files';

/** Reviewer rejections listed with their notes (step mode). */
const REVIEWER_NOTES = 20;
/** Fix attempts allowed per crashed idea. */
export const MAX_FIX_ATTEMPTS = 2;
const LOG_TAIL_BYTES = 3000;

/** The system prompt: the role the engine gives the model, then program.md as the researcher wrote it. */
export function systemText(ctx: Pick<ProposalContext, 'program' | 'metric' | 'direction' | 'noise'>): string {
  const n = ctx.noise;
  const rule =
    n && measuresNoise(n)
      ? [
          `trains for a fixed time budget and reads the metric ${ctx.metric} (${ctx.direction} is better). Runs are noisy, so the engine measured the`,
          `noise (the baseline ran ${n.noiseRuns} times) and keeps a commit only when the mean of its runs beats the best's mean by more than`,
          `${n.keepSigma} standard errors of the difference, on at least two runs: a result no better than the best is discarded after one run,`,
          `a promising one is re-run (up to ${n.confirmRuns} more times) until it clears that bar or is discarded as within noise;`,
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
    '  view also reads the read-only files, to check what they fix (the data, the evaluation, the constants);',
    `- then call ${FINISH} with a one-line description, your rationale, the delta of ${ctx.metric} you expect, and the lesson the`,
    '  last finished experiment taught. That ends your turn.',
    `- If the last experiment crashed from a trivial bug, you may be offered to fix it instead (${FIX}).`,
    '',
    'Work as a careful researcher: read the history before choosing (every experiment is in it, one line each), do not repeat what it',
    'already rules out, and read the diagnostics, not only the metric: under a fixed time budget an idea that slows each step loses steps,',
    'so a loss may come from fewer steps rather than a worse idea. Prefer one change small enough to judge from one run. Predict its effect',
    'honestly; your predictions are compared with the outcomes.',
    LINE_LEGEND,
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

export interface PromptOptions {
  fix: FixOffer | null;
  logTail: string | null;
  /** The stable breakpoints' lifetime (claude/cache.ts); 5 minutes unless said. */
  ttl?: Ttl;
  /** The research notes are due in this proposal (./notes.ts): the moving part asks for them. */
  notesDue?: NotesDue | null;
}

/**
 * The user message's content, the most stable first (Anthropic's caching guidance): the run's
 * facts and the full history chunks, which never change (the last chunk marked, or the facts
 * while there is none); the editable files at the best, which change only on a keep (marked);
 * then the moving part, unmarked (the proposer marks the newest block of each turn). A keep thus
 * rewrites the files and the moving part, never the history.
 */
export function userContent(ctx: ProposalContext, opts: PromptOptions): TextBlockParam[] {
  const ttl = opts.ttl ?? '5m';
  const h = ctx.history;
  const { full, filling } = historyChunks(h);
  const head = [
    stableFacts(ctx),
    h.length ? '# Every experiment so far, one line each, the oldest first' : '# No experiment has finished yet',
  ].join('\n\n');
  const blocks: TextBlockParam[] = [{ type: 'text', text: head, ...(full.length ? {} : { cache_control: mark(ttl) }) }];
  full.forEach((text, i) =>
    blocks.push({ type: 'text', text, ...(i === full.length - 1 ? { cache_control: mark(ttl) } : {}) }),
  );
  const files = Object.entries(ctx.files)
    .map(([f, text]) => `## ${f}\n\`\`\`${f.endsWith('.py') ? 'python' : ''}\n${text}\n\`\`\``)
    .join('\n\n');
  // The notes change only when rewritten: just before the files, the files' breakpoint caches them.
  const notes = notesBlock(h);
  if (notes) blocks.push({ type: 'text', text: notes });
  blocks.push({ type: 'text', text: `# The editable files at the best commit\n\n${files}`, cache_control: mark(ttl) });
  const latest = filling ? `# The latest experiments, continuing the list above\n${filling}` : '';
  blocks.push({ type: 'text', text: [latest, ...movingParts(ctx, opts)].filter(Boolean).join('\n\n') });
  return blocks;
}

function movingParts(ctx: ProposalContext, opts: PromptOptions): string[] {
  const h = ctx.history;
  const parts = [standing(ctx)];
  const tally = directionTally(h, ctx.direction);
  if (tally) parts.push(tally);
  const lessons = recentLessons(h);
  if (lessons) parts.push(lessons);
  const vetoes = reviewerNotes(h);
  if (vetoes) parts.push(vetoes);
  const recent = h.slice(-RECENT_FULL);
  if (recent.length)
    parts.push(`## The last ${recent.length} experiment(s) in full\n\n${recent.map(fullEntry).join('\n\n')}`);
  if (opts.logTail !== null && h.length) {
    parts.push(`## The log tail of #${h[h.length - 1].n}, which crashed\n\`\`\`\n${opts.logTail}\n\`\`\``);
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
  if (opts.notesDue) parts.push(notesAsk(opts.notesDue));
  const last = lastResult(h);
  parts.push(
    `# Your turn\nPropose exactly one experiment: edit with ${EDITOR}, then call ${FINISH} with description, rationale, ` +
      `expected_delta (the change of ${ctx.metric} you expect, negative for lower)${last ? ` and lesson (what #${last.n} taught)` : ''}.`,
  );
  return parts;
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
    const fd = openNoFollow(file);
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
    leftLine(ctx),
    predictionLine(h),
  ]
    .filter((l): l is string => l !== null)
    .join('\n');
}

/** σ and the floor a gain must clear, in numbers, once the noise has been measured. */
function noiseLines(ctx: ProposalContext): string[] {
  const n = ctx.noise;
  if (!n || !measuresNoise(n)) return [];
  if (n.sigma === null) return [`Noise: not measured yet (the baseline runs ${n.noiseRuns} times first).`];
  if (n.sigma === 0) return ['Noise: none measured (repeated runs give the same metric), so any improvement is kept.'];
  const floor = n.keepSigma * differenceError(n.sigma, 2, Math.max(1, n.bestRuns));
  return [
    `Noise: σ = ${fmtNoise(n.sigma)} per run (${n.df} degrees of freedom). A kept change must beat the best's mean (${n.bestRuns} runs) by more than`,
    `${fmtNoise(floor)} on two runs (${n.keepSigma}σ of the difference); differences smaller than that are noise, not findings. Prefer changes whose`,
    'expected effect is larger than the floor; changing a random seed is never a finding.',
  ];
}

function fmt(v: number | null): string {
  return v === null ? '—' : v.toFixed(6);
}
