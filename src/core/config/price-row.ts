/**
 * The shape of a price override as a configuration gives it, apart from the price table and the
 * cost arithmetic of pricing.ts: the journal's run configuration records it, and pricing.ts reads
 * the journal's Usage, so each importing the other's module would make a circle.
 */
import * as z from 'zod/mini';
import { englishMessages } from '../journal/zod-english';

englishMessages();

/** A price row as a configuration gives it (program.md's `prices`): $/MTok, the four rates required, the 1-hour write optional. */
export const PriceRow = z.strictObject({
  input: z.number().check(z.nonnegative()),
  output: z.number().check(z.nonnegative()),
  cache_write: z.number().check(z.nonnegative()),
  cache_read: z.number().check(z.nonnegative()),
  cache_write_1h: z.optional(z.number().check(z.nonnegative())),
});
