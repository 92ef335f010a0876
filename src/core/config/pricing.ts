/**
 * What tokens cost: a per-model price table in US dollars per million tokens
 * (MTok), and the cost of one request's usage.
 *
 * Source: Anthropic's pricing page (platform.claude.com/docs/en/about-claude/pricing)
 * and the model overview pages, as of November 2026. `cache_write` is the 5-minute
 * rate (1.25 × input); a 1-hour write costs 2 × input (`cache_write_1h`), which the claude
 * proposer asks for when proposals come further apart than the 5-minute lifetime; cache
 * reads are "cache hits and refreshes". Sonnet 5.5's cache read is $0.10 since 2026-10-07
 * (cut from $0.20). Haiku 5.5 has a higher tier for prompts over 100k tokens. Fable 5.2 (released
 * 2026-11-09) lists at $8 in, $40 out, $10 / $16 cache writes, $0.20 cache reads; Mythos shares
 * Fable's prices in every generation so far, so Mythos 5.2 gets Fable 5.2's row.
 * Every id in the installed SDK's `Model` list has a row (test/pricing.test.ts reads that list).
 * Prices change: a run can override any model's row (ClaudeProposer's `prices`).
 */
import type { Usage } from '../journal/journal';

export interface Prices {
  /** $/MTok of uncached input. */
  input: number;
  output: number;
  /** $/MTok written to the prompt cache (5-minute TTL). */
  cache_write: number;
  /** $/MTok written to the prompt cache with the 1-hour TTL; absent: 2 × input, Anthropic's rule. */
  cache_write_1h?: number;
  /** $/MTok read from the prompt cache. */
  cache_read: number;
  /** A dearer tier for long prompts (input + cache reads + cache writes above the threshold), on every token of that request. */
  long_prompt?: { threshold_tokens: number } & Omit<Prices, 'long_prompt'>;
}

const row = (input: number, output: number, cache_write: number, cache_read: number): Prices => ({
  input,
  output,
  cache_write,
  cache_read,
});

/** Prices of every model in the SDK's `Model` list (dated snapshots are priced by their alias). */
export const PRICES: Readonly<Record<string, Prices>> = {
  'claude-fable-5-2': row(8, 40, 10, 0.2),
  // No published row: priced as its sibling Fable 5.2, as every earlier Mythos was priced as its Fable.
  'claude-mythos-5-2': row(8, 40, 10, 0.2),
  'claude-fable-5-1': row(10, 50, 12.5, 0.25),
  'claude-mythos-5-1': row(10, 50, 12.5, 0.25),
  'claude-fable-5': row(10, 50, 12.5, 1),
  'claude-mythos-5': row(10, 50, 12.5, 1),
  // A research preview (deprecated; the SDK warns) with no published price: priced as Mythos 5, the
  // nearest sibling, since a model without a row would be refused outright.
  'claude-mythos-preview': row(10, 50, 12.5, 1),
  'claude-opus-5-5': row(4, 20, 5, 0.2),
  'claude-opus-5': row(5, 25, 6.25, 0.5),
  'claude-opus-4-8': row(5, 25, 6.25, 0.5),
  'claude-opus-4-7': row(5, 25, 6.25, 0.5),
  'claude-opus-4-6': row(5, 25, 6.25, 0.5),
  'claude-opus-4-5': row(5, 25, 6.25, 0.5),
  'claude-sonnet-5-5': row(2, 10, 2.5, 0.1),
  'claude-sonnet-5': row(2, 10, 2.5, 0.2),
  'claude-sonnet-4-6': row(3, 15, 3.75, 0.3),
  'claude-sonnet-4-5': row(3, 15, 3.75, 0.3),
  'claude-haiku-5-5': {
    ...row(0.1, 0.5, 0.125, 0.01),
    long_prompt: { threshold_tokens: 100_000, ...row(0.5, 2.5, 0.625, 0.05) },
  },
  'claude-haiku-4-5': row(1, 5, 1.25, 0.1),
};

/** A model with no price: the ledger would be wrong, so the run refuses to start. */
export class UnknownModelPrice extends Error {
  constructor(readonly model: string) {
    super(
      `no price is known for model "${model}"; pick one of ${Object.keys(PRICES).join(', ')} or give its prices ($/MTok for input, output, cache_write, cache_read)`,
    );
  }
}

/**
 * The prices of a model: an override first, then the table. A dated snapshot id
 * (`claude-haiku-4-5-20251001`) is priced like its alias, which Anthropic prices identically.
 */
export function pricesFor(model: string, overrides: Record<string, Prices> = {}): Prices {
  const alias = model.replace(/-\d{8}$/, '');
  const found = overrides[model] ?? overrides[alias] ?? PRICES[model] ?? PRICES[alias];
  if (!found) {
    throw new UnknownModelPrice(model);
  }
  return found;
}

/** The dollar cost of one request's usage. Throws UnknownModelPrice for a model without a price. */
export function costOf(model: string, usage: Usage, overrides: Record<string, Prices> = {}): number {
  const base = pricesFor(model, overrides);
  const prompt = usage.input_tokens + usage.cache_creation_input_tokens + usage.cache_read_input_tokens;
  const p = base.long_prompt && prompt > base.long_prompt.threshold_tokens ? base.long_prompt : base;
  // The 1-hour part of the writes is a part of cache_creation_input_tokens, never more than it.
  const hour = Math.min(usage.cache_creation_1h_input_tokens ?? 0, usage.cache_creation_input_tokens);
  return (
    (usage.input_tokens * p.input +
      usage.output_tokens * p.output +
      (usage.cache_creation_input_tokens - hour) * p.cache_write +
      hour * (p.cache_write_1h ?? 2 * p.input) +
      usage.cache_read_input_tokens * p.cache_read) /
    1e6
  );
}

/** The sum of two usages (the 1-hour writes kept only where either has them). */
export function addUsage(a: Usage, b: Usage): Usage {
  const hour = (a.cache_creation_1h_input_tokens ?? 0) + (b.cache_creation_1h_input_tokens ?? 0);
  return {
    input_tokens: a.input_tokens + b.input_tokens,
    output_tokens: a.output_tokens + b.output_tokens,
    cache_creation_input_tokens: a.cache_creation_input_tokens + b.cache_creation_input_tokens,
    cache_read_input_tokens: a.cache_read_input_tokens + b.cache_read_input_tokens,
    ...(a.cache_creation_1h_input_tokens !== undefined || b.cache_creation_1h_input_tokens !== undefined
      ? { cache_creation_1h_input_tokens: hour }
      : {}),
  };
}

/**
 * The share of a usage's prompt tokens read from the cache: reads ÷ (reads + writes + uncached
 * input). Null when there was no prompt (a proposer that asks no model).
 */
export function cacheHitRate(usage: Usage): number | null {
  const prompt = usage.input_tokens + usage.cache_creation_input_tokens + usage.cache_read_input_tokens;
  return prompt > 0 ? usage.cache_read_input_tokens / prompt : null;
}
