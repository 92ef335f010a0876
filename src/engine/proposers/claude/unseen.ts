/**
 * What has finished that the model has not yet been told about, derived from the journal alone so
 * that a resumed run agrees with the one that wrote it. Under pipelining a proposal is drafted
 * while the previous experiment trains, so "the last record" is the wrong question: the crash to
 * show is the newest one no prompt has shown yet (a rejected proposal or another worker's result
 * may have landed after it), and the lesson to ask for is about an experiment that has just
 * finished and has no lesson yet, once each.
 */
import * as z from 'zod/mini';
import { proposalNotes, type ExperimentRecord } from '../../../core/journal/journal';
import { englishMessages } from '../../../core/journal/zod-english';
import { RECENT_FULL } from './history';
import type { ProposalContext } from '../types';

englishMessages();

const Shown = z.looseObject({ crash_shown: z.optional(z.int()) });

/** What a proposal knows it was told: the metas of every proposal in the journal and of those in flight. */
type Known = Pick<ProposalContext, 'history' | 'running' | 'inFlight'>;

function metas(ctx: Known): unknown[] {
  return [
    ...ctx.history.map(r => r.proposal_meta),
    ...(ctx.running?.meta !== undefined ? [ctx.running.meta] : []),
    ...(ctx.inFlight ?? []).map(e => e.meta),
  ];
}

/** The crash a proposal's prompt showed (its meta's crash_shown), if any. */
export function crashShown(meta: unknown): number | undefined {
  const m = Shown.safeParse(meta);
  return m.success ? m.data.crash_shown : undefined;
}

const finished = (r: ExperimentRecord) => r.status === 'keep' || r.status === 'discard' || r.status === 'crash';

/**
 * The newest crash that no prompt has shown (no proposal's meta says crash_shown = its n), or null.
 * Only the last RECENT_FULL records are looked at: those are shown in full (the crash's diff with
 * them), and a journal written before crash_shown existed must not bring an old crash back.
 */
export function unseenCrash(ctx: Known): ExperimentRecord | null {
  const crash = newest(ctx.history, r => r.status === 'crash');
  if (!crash) return null;
  return metas(ctx).some(m => crashShown(m) === crash.n) ? null : crash;
}

/**
 * The experiment to ask a lesson about: the newest of the last RECENT_FULL records that finished
 * (kept, discarded or crashed) and that no proposal, recorded or in flight, drew a lesson from; null
 * when there is none (then no lesson is asked). Each experiment is thus asked about once.
 */
export function lessonTarget(ctx: Known): ExperimentRecord | null {
  const taught = new Set(metas(ctx).flatMap(m => proposalNotes(m).lesson?.about ?? []));
  return newest(ctx.history, r => finished(r) && !taught.has(r.n));
}

/** The newest of the last RECENT_FULL records that passes `test`. */
function newest(history: ExperimentRecord[], test: (r: ExperimentRecord) => boolean): ExperimentRecord | null {
  for (let i = history.length - 1; i >= Math.max(0, history.length - RECENT_FULL); i--) {
    if (test(history[i])) return history[i];
  }
  return null;
}
