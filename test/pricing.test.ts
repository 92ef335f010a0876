/** The price table and the cost of a request's usage. */
import * as fs from 'node:fs';
import { createRequire } from 'node:module';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { addUsage, costOf, PRICES, pricesFor, UnknownModelPrice } from '../src/core/config/pricing';
import { DEFAULT_MODEL } from '../src/engine/proposers/claude/proposer';

const usage = (input: number, output: number, write = 0, read = 0) => ({
  input_tokens: input,
  output_tokens: output,
  cache_creation_input_tokens: write,
  cache_read_input_tokens: read,
});

describe('pricing', () => {
  it('prices each kind of token at its own rate', () => {
    // Sonnet 5.5: $2 in, $10 out, $2.50 cache write, $0.10 cache read per MTok.
    expect(costOf('claude-sonnet-5-5', usage(1_000_000, 0))).toBeCloseTo(2, 10);
    expect(costOf('claude-sonnet-5-5', usage(0, 1_000_000))).toBeCloseTo(10, 10);
    expect(costOf('claude-sonnet-5-5', usage(0, 0, 1_000_000))).toBeCloseTo(2.5, 10);
    expect(costOf('claude-sonnet-5-5', usage(0, 0, 0, 1_000_000))).toBeCloseTo(0.1, 10);
    expect(costOf('claude-sonnet-5-5', usage(1000, 500, 2000, 10_000))).toBeCloseTo(
      (1000 * 2 + 500 * 10 + 2000 * 2.5 + 10_000 * 0.1) / 1e6,
      12,
    );
  });

  it('writes the 5-minute cache at 1.25 × input and the 1-hour cache at 2 × input, in every row and tier', () => {
    const rows = Object.entries(PRICES).flatMap(([id, p]) => [
      [id, p] as const,
      ...(p.long_prompt ? [[`${id} (long prompt)`, p.long_prompt] as const] : []),
    ]);
    for (const [id, p] of rows) expect(p.cache_write, id).toBeCloseTo(1.25 * p.input, 10);
    for (const [model, p] of Object.entries(PRICES)) {
      // 10k tokens: under Haiku 5.5's long-prompt threshold.
      const hour = { ...usage(0, 0, 10_000), cache_creation_1h_input_tokens: 10_000 };
      expect(costOf(model, hour), model).toBeCloseTo((10_000 * 2 * p.input) / 1e6, 12);
      // The 1-hour part is never counted twice, nor more than the writes.
      const odd = { ...usage(0, 0, 10_000), cache_creation_1h_input_tokens: 30_000 };
      expect(costOf(model, odd), model).toBeCloseTo((10_000 * 2 * p.input) / 1e6, 12);
    }
  });

  it('has a price for every model id the installed SDK lists', () => {
    // Read from the SDK itself at test time, so that an SDK upgrade that adds a model fails here.
    const sdk = path.dirname(createRequire(import.meta.url).resolve('@anthropic-ai/sdk'));
    const dts = fs.readFileSync(path.join(sdk, 'resources', 'messages', 'messages.d.ts'), 'utf8');
    const union = /^export type Model = (.*);$/m.exec(dts)?.[1];
    expect(union, 'the SDK no longer declares its Model union where this test looks').toBeDefined();
    const ids = [...union!.matchAll(/'([^']+)'/g)].map(m => m[1]);
    expect(ids).toContain('claude-fable-5-2');
    expect(ids.length).toBeGreaterThan(10);
    const unpriced = ids.filter(id => {
      try {
        pricesFor(id);
        return false;
      } catch {
        return true;
      }
    });
    expect(unpriced).toEqual([]);
    for (const id of ids) expect(costOf(id, usage(1_000_000, 0)), id).toBeGreaterThan(0);
  });

  it('has a price for the default model', () => {
    expect(PRICES[DEFAULT_MODEL]).toBeDefined();
  });

  it('prices a dated snapshot like its alias, and takes overrides first', () => {
    expect(pricesFor('claude-haiku-4-5-20251001')).toEqual(PRICES['claude-haiku-4-5']);
    const mine = { input: 1, output: 1, cache_write: 1, cache_read: 1 };
    expect(costOf('claude-sonnet-5-5', usage(1_000_000, 1_000_000), { 'claude-sonnet-5-5': mine })).toBeCloseTo(2, 10);
    expect(costOf('my-proxy-model', usage(1_000_000, 0), { 'my-proxy-model': mine })).toBeCloseTo(1, 10);
  });

  it('refuses a model without a price, naming the fix', () => {
    expect(() => costOf('claude-unknown-9', usage(1, 1))).toThrow(UnknownModelPrice);
    expect(() => pricesFor('claude-unknown-9')).toThrow(
      /no price is known for model "claude-unknown-9".*give its prices/,
    );
  });

  it('uses the long-prompt tier of Haiku 5.5 above 100k prompt tokens, output included', () => {
    expect(costOf('claude-haiku-5-5', usage(100_000, 1_000_000))).toBeCloseTo(
      (100_000 * 0.1 + 1_000_000 * 0.5) / 1e6,
      12,
    );
    expect(costOf('claude-haiku-5-5', usage(60_000, 1_000_000, 0, 40_001))).toBeCloseTo(
      (60_000 * 0.5 + 1_000_000 * 2.5 + 40_001 * 0.05) / 1e6,
      12,
    );
  });

  it('adds usages field by field', () => {
    expect(addUsage(usage(1, 2, 3, 4), usage(10, 20, 30, 40))).toEqual(usage(11, 22, 33, 44));
  });
});
