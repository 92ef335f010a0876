/**
 * Step mode's routes: the proposal awaiting review (GET review), a reviewer's decision (POST
 * review) and switching step mode while a run goes on (POST runs/step). Every answer is checked
 * with zod (src/core/api/tool-answers.ts): the pending proposal's schema is the engine's own
 * (src/core/step-mode/review.ts).
 */
import { ServerConnection } from '@jupyterlab/services';
import * as z from 'zod/mini';
import { DecisionAnswer, ReviewAnswer, StepAnswer } from '../../core/api/tool-answers';
import type { PendingReview } from '../../core/step-mode/review';
import { post, query, requestAPI } from './server';
import { englishMessages } from '../../core/journal/zod-english';

englishMessages();

/**
 * What a reviewer sends: approve (with `files`, the edited version; with `all`, leaving step
 * mode) or reject (with a note).
 */
export interface IDecision {
  n: number;
  decision: 'approve' | 'reject';
  note?: string;
  all?: boolean;
  files?: Record<string, string>;
}

/** Parses an answer, or says which route sent something the panel cannot read. */
function checked<T>(schema: z.ZodMiniType<T>, data: unknown, route: string): T {
  const parsed = schema.safeParse(data);
  if (!parsed.success) {
    throw new Error(`autoresearch: ${route} answered something unexpected: ${z.prettifyError(parsed.error)}`);
  }
  return parsed.data;
}

/** The proposal awaiting review in run `tag`, or null when none does (or the run is gone: 404). */
export async function fetchReview(
  settings: ServerConnection.ISettings,
  path: string,
  tag: string,
): Promise<PendingReview | null> {
  try {
    const data = await requestAPI<unknown>(`review${query({ path, tag })}`, settings);
    return checked(ReviewAnswer, data, 'GET review').pending;
  } catch (error) {
    if (error instanceof ServerConnection.ResponseError && error.response.status === 404) {
      return null;
    }
    throw error;
  }
}

/** Hands the waiting engine a decision on proposal n (202: written, the engine takes it next). */
export async function decideReview(
  settings: ServerConnection.ISettings,
  path: string,
  tag: string,
  decision: IDecision,
): Promise<z.infer<typeof DecisionAnswer>> {
  return checked(DecisionAnswer, await post<unknown>('review', settings, { path, tag, ...decision }), 'POST review');
}

/** Turns step mode on or off for the run an engine works on; the engine applies it from its next proposal. */
export async function setStepMode(
  settings: ServerConnection.ISettings,
  path: string,
  tag: string,
  step: boolean,
): Promise<z.infer<typeof StepAnswer>> {
  return checked(StepAnswer, await post<unknown>('runs/step', settings, { path, tag, step }), 'POST runs/step');
}
