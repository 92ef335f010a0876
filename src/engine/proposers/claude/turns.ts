/**
 * The pieces of a claude proposal's conversation that are not the loop itself: how a reply's
 * blocks are sent back, what the model is told when a reply was cut off or called no tool, the
 * crashed experiment's files a fix starts from, what a finished proposal records, and the run's
 * stop after too many abandoned proposals in a row.
 */
import type { ContentBlock, ContentBlockParam, ToolResultBlockParam } from '@anthropic-ai/sdk/resources/messages';
import type { ExperimentRecord } from '../../../core/journal/journal';
import { exec } from '../../git/exec';
import { guardedEnv } from '../../git/git-guard';
import { fixOffer, type FixOffer } from './prompt';
import type { MalformedToolInput } from './request';
import type { Finish } from './tool-defs';
import { lessonTarget } from './unseen';
import type { ProposalContext } from '../types';

/** Abandoned proposals in a row after which the run stops: a model that keeps failing should not keep costing. */
export const MAX_ABANDONED_IN_A_ROW = 5;

export const NO_TOOL_NUDGE =
  'Use str_replace_based_edit_tool to make your edit, then call finish_experiment; only finish_experiment ends your turn.';

export const CUT_OFF_ASK =
  'Your reply was cut off at the output limit before it ended, so none of its tool calls was run. Make a smaller edit: one str_replace of a few lines, and think less before each call.';

/** A response block as it must be sent back (thinking blocks included, with their signatures). */
export function toParam(b: ContentBlock): ContentBlockParam | null {
  switch (b.type) {
    case 'text':
      return { type: 'text', text: b.text };
    case 'tool_use':
      return { type: 'tool_use', id: b.id, name: b.name, input: b.input };
    case 'thinking':
      // A thinking block cut before its signature cannot be sent back: the API checks signatures.
      return b.signature ? { type: 'thinking', thinking: b.thinking, signature: b.signature } : null;
    case 'redacted_thinking':
      return { type: 'redacted_thinking', data: b.data };
    default:
      return null;
  }
}

/** The result of a tool call that was not run, because the reply it came in was cut off. */
export function notRun(id: string): ToolResultBlockParam {
  return {
    type: 'tool_result',
    tool_use_id: id,
    content: 'not run: the reply was cut off at the output limit, so this call may be incomplete',
    is_error: true,
  };
}

/** What the model is told of a tool call whose input was not valid JSON (a failed edit; the reply's other calls were not run). */
export function malformedAnswer(bad: MalformedToolInput): {
  assistant: ContentBlockParam[];
  user: ToolResultBlockParam[];
} {
  const before = bad.before.map(toParam).filter((b): b is ContentBlockParam => b !== null);
  // The call goes back with an empty input: its own never parsed, and the API takes only an object.
  const call: ContentBlockParam = { type: 'tool_use', id: bad.id, name: bad.toolName, input: {} };
  const others = before.flatMap(b =>
    b.type === 'tool_use'
      ? [
          {
            type: 'tool_result' as const,
            tool_use_id: b.id,
            content:
              'not run: a later tool call in the same reply had input that was not valid JSON; make this call again',
            is_error: true,
          },
        ]
      : [],
  );
  const answer: ToolResultBlockParam = {
    type: 'tool_result',
    tool_use_id: bad.id,
    content: `your tool input was not valid JSON (${bad.detail}); call ${bad.toolName} again with a JSON object as its input`,
    is_error: true,
  };
  return { assistant: [...before, call], user: [...others, answer] };
}

/** An abandoned proposal of this proposer (a reviewer's rejection is no failure of the model). */
function isAbandoned(r: ExperimentRecord, proposer: string): boolean {
  return r.status === 'rejected' && r.proposer === proposer && (r.reason ?? '').startsWith('proposal abandoned');
}

/** Refuses to go on after MAX_ABANDONED_IN_A_ROW abandoned proposals: the run stops, saying why. */
export function checkAbandoned(history: ExperimentRecord[], proposer: string): void {
  let n = 0;
  for (let i = history.length - 1; i >= 0 && isAbandoned(history[i], proposer); i--) n++;
  if (n < MAX_ABANDONED_IN_A_ROW) return;
  throw new Error(
    `${n} proposals in a row were abandoned, so the run stops rather than keep paying for more (the last: ${history[history.length - 1].reason}); check the model, the effort and program.md, then go on with --resume`,
  );
}

/**
 * The meta a finish_experiment call adds: the prediction, the lesson (about the experiment the
 * prompt asked about, lessonTarget; one given unasked is dropped, as it is about nothing new) and the idea.
 */
export function finishNotes(
  ctx: Pick<ProposalContext, 'history' | 'running' | 'inFlight'>,
  finish: Finish,
): Record<string, unknown> {
  const { expected_delta, lesson, direction } = finish;
  const about = lessonTarget(ctx);
  return {
    ...(expected_delta !== undefined ? { expected_delta } : {}),
    ...(lesson && about ? { lesson: { about: about.n, text: lesson } } : {}),
    ...(direction ? { direction } : {}),
  };
}

/** The files of `crash` when a fix of it is on offer, read from its commit (git objects outlive the reset). */
export async function loadFix(
  ctx: ProposalContext,
  crash: ExperimentRecord | null,
): Promise<{ offer: FixOffer; files: Record<string, string> } | null> {
  if (!crash) return null;
  const offer = fixOffer(ctx.history, crash);
  if (!offer?.record.commit) return null;
  // With several workers the best may have moved since the crash started: a fix made from its
  // files would undo the newer keep, so it is proposed afresh instead.
  if (ctx.bestCommit !== undefined && offer.record.parent_commit !== ctx.bestCommit) return null;
  try {
    const files: Record<string, string> = {};
    for (const f of Object.keys(ctx.files)) files[f] = await gitShow(ctx.workdir, `${offer.record.commit}:${f}`);
    return { offer, files };
  } catch {
    return null;
  }
}

async function gitShow(cwd: string, spec: string): Promise<string> {
  const r = await exec('git', ['show', '--no-textconv', spec], { cwd, env: guardedEnv() });
  if (r.code !== 0) throw new Error(`git show ${spec} failed: ${r.stderr.trim()}`);
  return r.stdout;
}
