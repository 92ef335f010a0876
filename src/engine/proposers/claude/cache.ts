/**
 * Prompt caching that pays across proposals, not only across the turns of one. A cache entry
 * lives 5 minutes (refreshed by each hit) or, written at twice the input price instead of 1.25×,
 * 1 hour. Proposals come about one experiment apart, so with the original's 5-minute budget a
 * 5-minute entry has always expired by the next proposal and the whole prompt is written again:
 * the stable breakpoints (tools and system, the run's facts and files, the full history chunks)
 * get the 1-hour lifetime when proposals come further apart than SHORT_CACHE_S, and the moving
 * breakpoint of the turns within a proposal (seconds apart) keeps 5 minutes. The API requires
 * the longer-lived breakpoints to come first, which this order is.
 */
import type { CacheControlEphemeral } from '@anthropic-ai/sdk/resources/messages';
import type { ProposalContext } from '../types';

export type Ttl = '5m' | '1h';
/** Proposals further apart than this (a minute short of the 5-minute lifetime) get 1-hour stable entries. */
export const SHORT_CACHE_S = 240;
/** What a run spends around its budget (start, evaluation, the engine), for the estimate before any gap is seen. */
const OVERHEAD_S = 30;

/** The cache_control mark of a breakpoint: the 5-minute one is the API's default and carries no ttl. */
export function mark(ttl: Ttl): CacheControlEphemeral {
  return ttl === '1h' ? { type: 'ephemeral', ttl: '1h' } : { type: 'ephemeral' };
}

/**
 * Seconds between proposals as the run goes: the median gap between the last few results once
 * there are three, else the budget plus overhead, divided among the workers.
 */
export function proposalInterval(ctx: Pick<ProposalContext, 'history' | 'run'>): number {
  const times = ctx.history
    .slice(-6)
    .map(r => Date.parse(r.ts))
    .filter(Number.isFinite);
  const gaps = times
    .slice(1)
    .map((t, i) => (t - times[i]) / 1000)
    .filter(g => g > 0)
    .sort((a, b) => a - b);
  if (gaps.length >= 3) return gaps[Math.floor(gaps.length / 2)];
  const budget = ctx.run?.budgetS ?? 300;
  return (budget + OVERHEAD_S) / Math.max(1, ctx.run?.workers ?? 1);
}

/** The lifetime of the stable breakpoints for this proposal. */
export function stableTtl(ctx: Pick<ProposalContext, 'history' | 'run'>): Ttl {
  return proposalInterval(ctx) > SHORT_CACHE_S ? '1h' : '5m';
}
