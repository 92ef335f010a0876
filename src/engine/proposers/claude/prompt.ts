/**
 * What a claude proposal request says, in cache order: what changes least first. The system
 * blocks: the engine's role and rules, then the run's facts and the read-only files (marked). The
 * user turn: the history (folded summaries, then full chunks of one line per experiment, the last
 * marked), which only grows; program.md, which the researcher may edit mid-run; the model's
 * notes, rewritten every few dozen experiments; every keep and the editable files at the best
 * (marked), which change on a keep; then what moves (the chunk still filling, where the run stands
 * with today's σ and the one floor, the keeps and the near-misses in today's σ, the directions
 * tried, the latest lessons, the last experiments in full, a crash's log tail, what is training
 * now). An edit of program.md or new notes thus re-sends only what follows them, never the history.
 */
import * as fs from 'node:fs';
import type { TextBlockParam } from '@anthropic-ai/sdk/resources/messages';
import type { ExperimentRecord } from '../../../core/journal/journal';
import { fmtNoise, keepFloor, measuresNoise, runsVs } from '../../../core/rule/noise';
import { mark, type Ttl } from './cache';
import { leftLine, stableFacts } from './facts';
import {
  directionTally,
  fixOf,
  fullEntry,
  historyChunks,
  keepsBlock,
  keepSigmas,
  LINE_LEGEND,
  nearMissBlock,
  predictionLine,
  RECENT_FULL,
  recentLessons,
} from './history';
import { notesAsk, notesBlock, type NotesDue } from './notes';
import { searchBlock } from './search-prompt';
import { EDITOR, FINISH, FIX, MOVE, VIEW_LOG } from './tool-defs';
import { lessonTarget } from './unseen';
import type { ProposalContext } from '../types';
import { openStateFile } from '../../workspace/workspace-files';

/** Reviewer rejections listed with their notes (step mode). */
const REVIEWER_NOTES = 20;
/** Fix attempts allowed per crashed idea. */
export const MAX_FIX_ATTEMPTS = 2;
const LOG_TAIL_BYTES = 3000;

/** The system prompt's rules: the role the engine gives the model (program.md follows the history, in the user turn). */
export function systemText(ctx: Pick<ProposalContext, 'metric' | 'direction' | 'noise'>): string {
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
    `- ${VIEW_LOG} reads a past experiment's training log (read-only, at most 200 lines a call), for what its line and diagnostics do not say.`,
    `- The engine may offer moves it prepared (re-test a near-miss, combine two changes, ablate a keep): take one with ${MOVE}`,
    `  and call ${FINISH}, with or without further edits. On a plateau a proposal may start from a near-miss instead of the best.`,
    '',
    'Work as a careful researcher: read the history before choosing (every experiment is in it, one line each), do not repeat what it',
    'already rules out, and read the diagnostics, not only the metric: under a fixed time budget an idea that slows each step loses steps,',
    'so a loss may come from fewer steps rather than a worse idea. Prefer one change small enough to judge from one run. Predict its effect',
    'honestly; your predictions are compared with the outcomes.',
    LINE_LEGEND,
    "The researcher's instructions (program.md) follow the history, in the first user message; they take precedence over",
    'your own preferences, never over these rules.',
  ].join('\n');
}

/**
 * The system blocks: the rules, then what holds for the whole run (its facts, the read-only files),
 * marked for the cache. Neither changes during a run, so every proposal reads both from the cache.
 */
export function systemBlocks(ctx: ProposalContext, ttl: Ttl = '5m'): TextBlockParam[] {
  return [
    { type: 'text', text: systemText(ctx) },
    { type: 'text', text: stableFacts(ctx), cache_control: mark(ttl) },
  ];
}

/** program.md as the researcher wrote it; after the history, so an edit mid-run leaves the history cached. */
export function programBlock(program: string): string {
  return `# The researcher's instructions (program.md)\n\n${program.trim()}`;
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

/**
 * The fix the next proposal may make of `crash` (by default the last record), or null: only of a
 * crash, and at most MAX_FIX_ATTEMPTS per idea (the crashed fixes of its idea anywhere in history
 * count, since under pipelining other records may land between them).
 */
export function fixOffer(
  history: ExperimentRecord[],
  crash: ExperimentRecord | null | undefined = history[history.length - 1],
): FixOffer | null {
  if (!crash || crash.status !== 'crash' || !crash.commit || crash.diff.trim() === '') return null;
  const root = fixOf(crash) ?? crash.n;
  const done = history.filter(r => r.status === 'crash' && fixOf(r) === root).length;
  return done < MAX_FIX_ATTEMPTS ? { record: crash, root, attempt: done + 1 } : null;
}

export interface PromptOptions {
  fix: FixOffer | null;
  logTail: string | null;
  /** The crash the log tail is of (the newest the model has not seen); default: the last record. */
  crash?: number;
  /** The stable breakpoints' lifetime (claude/cache.ts); 5 minutes unless said. */
  ttl?: Ttl;
  /** The research notes are due in this proposal (./notes.ts): the moving part asks for them. */
  notesDue?: NotesDue | null;
}

/**
 * The user message's content, the most stable first (Anthropic's caching guidance): the history's
 * folded summaries and full chunks, which never change (the last one marked); program.md and the
 * notes, which change seldom; the keeps and the editable files at the best, which change on a keep (marked);
 * then the moving part, unmarked (the proposer marks the newest block of each turn). A keep, an
 * edit of program.md or new notes re-send what follows them, never the history.
 */
export function userContent(ctx: ProposalContext, opts: PromptOptions): TextBlockParam[] {
  const ttl = opts.ttl ?? '5m';
  const h = ctx.history;
  const { folds, full, filling } = historyChunks(h, ctx.direction);
  const memory = [...folds, ...full];
  const head = h.length ? '# Every experiment so far, the oldest first' : '# No experiment has finished yet';
  const blocks: TextBlockParam[] = [head, ...memory].map(text => ({ type: 'text', text }));
  // The last full memory block carries the history's breakpoint; with none yet, the files' alone covers it.
  if (memory.length) blocks[blocks.length - 1].cache_control = mark(ttl);
  blocks.push({ type: 'text', text: programBlock(ctx.program) });
  const notes = notesBlock(h);
  if (notes) blocks.push({ type: 'text', text: notes });
  // The keeps change only on a keep, as the files do: cached with them, their σ-multiples in the moving part.
  const keeps = keepsBlock(h);
  if (keeps) blocks.push({ type: 'text', text: keeps });
  const files = Object.entries(ctx.files)
    .map(([f, text]) => `## ${f}\n\`\`\`${f.endsWith('.py') ? 'python' : ''}\n${text}\n\`\`\``)
    .join('\n\n');
  blocks.push({ type: 'text', text: `# The editable files at the best commit\n\n${files}`, cache_control: mark(ttl) });
  const latest = filling ? `# The latest experiments, continuing the list above\n${filling}` : '';
  blocks.push({ type: 'text', text: [latest, ...movingParts(ctx, opts)].filter(Boolean).join('\n\n') });
  return blocks;
}

function movingParts(ctx: ProposalContext, opts: PromptOptions): string[] {
  const h = ctx.history;
  const sigma = todaySigma(ctx);
  const parts = [standing(ctx)];
  const keeps = keepSigmas(h, sigma, ctx.noise?.keepSigma ?? 2);
  if (keeps) parts.push(keeps);
  const misses = nearMissBlock(h, ctx.direction, sigma);
  if (misses) parts.push(misses);
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
    parts.push(
      `## The log tail of #${opts.crash ?? h[h.length - 1].n}, which crashed\n\`\`\`\n${opts.logTail}\n\`\`\``,
    );
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
  const search = searchBlock(ctx);
  if (search) parts.push(search);
  if (opts.notesDue) parts.push(notesAsk(opts.notesDue));
  // Only about an experiment that has just finished and taught nothing yet (finishNotes records the same).
  const about = lessonTarget(ctx)?.n;
  parts.push(
    `# Your turn\nPropose exactly one experiment: edit with ${EDITOR}, then call ${FINISH} with description, rationale, ` +
      `expected_delta (the change of ${ctx.metric} you expect, negative for lower)${about !== undefined ? ` and lesson (what #${about} taught)` : ''}.`,
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
    const fd = openStateFile(file);
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
    predictionLine(h, todaySigma(ctx)),
  ]
    .filter((l): l is string => l !== null)
    .join('\n');
}

/** σ of one run as the run measures it now, for every σ-multiple of the prompt; null under the strict rule or before it is known. */
function todaySigma(ctx: ProposalContext): number | null {
  const n = ctx.noise;
  return n && measuresNoise(n) && n.sigma ? n.sigma : null;
}

/**
 * σ and the floor a gain must clear, in numbers, once the noise has been measured: keepFloor, the
 * judge's own, for the runs named (a first run's reason quotes the one-run floor, a keep's the two-run one).
 */
function noiseLines(ctx: ProposalContext): string[] {
  const n = ctx.noise;
  if (!n || !measuresNoise(n)) return [];
  if (n.sigma === null) return [`Noise: not measured yet (the baseline runs ${n.noiseRuns} times first).`];
  if (n.sigma === 0) return ['Noise: none measured (repeated runs give the same metric), so any improvement is kept.'];
  const best = Math.max(1, n.bestRuns);
  // The runs a keep needs (two, one when confirm_runs is 0), then one run and the most a candidate gets.
  const keepRuns = n.confirmRuns === 0 ? 1 : 2;
  const counts = [...new Set([keepRuns, 1, 1 + n.confirmRuns])];
  const floors = counts.map(
    runs =>
      `${fmtNoise(keepFloor(n.sigma as number, n.keepSigma, runs, best))} for ${runsVs(runs, best)}${runs === keepRuns ? ' (what a keep needs)' : ''}`,
  );
  return [
    `Noise: σ = ${fmtNoise(n.sigma)} per run today (${n.df} degrees of freedom); every σ-multiple in this prompt uses it.`,
    `A kept change must beat the best's mean (${best} runs) by more than the floor, ${n.keepSigma}σ of the difference, as the judge's reasons state it:`,
    `${floors.join(', ')}. Differences smaller than that are noise, not findings. Prefer changes whose`,
    'expected effect is larger than the floor; changing a random seed is never a finding.',
  ];
}

function fmt(v: number | null): string {
  return v === null ? '—' : v.toFixed(6);
}
