/**
 * Each run option's check, worded as RULES says it: the zod schema program.md's front matter and
 * the engine apply, and which of a run's values are front matter keys.
 */
import * as z from 'zod/mini';
import { validTag } from '../journal/layout';
import { englishMessages } from '../journal/zod-english';
import { RULES, runOptionList, type FrontMatterKey, type RunOptionSpec, type RunOptionValues } from './run-options';

englishMessages();

const ONE_LINE = /^[^\0\n\r]*\S[^\0\n\r]*$/;

/** What a value of the option must be, as every side words it: RULES, and the maximum where there is one. */
export function ruleOf(spec: Pick<RunOptionSpec, 'kind' | 'max'>): string {
  return spec.max === undefined
    ? RULES[spec.kind]
    : `${RULES[spec.kind]}, at most ${spec.max} (about 24 days: the longest a timer can wait)`;
}

/** The zod check of one option's value, its messages worded as RULES. */
export function zodOf(spec: RunOptionSpec): z.ZodMiniType {
  const error = `must be ${spec.kind === 'choice' ? `one of ${spec.choices?.join(', ')}` : ruleOf(spec)}`;
  const max = spec.max ?? Infinity;
  const num = z.number({ error }).check(z.refine(n => n <= max, { error }));
  switch (spec.kind) {
    case 'positive':
      return num.check(z.refine(n => n > 0, { error }));
    case 'nonnegative':
      return num.check(z.refine(n => n >= 0, { error }));
    case 'positive-int':
      return num.check(z.refine(n => Number.isInteger(n) && n >= 1, { error }));
    case 'count':
      return num.check(z.refine(n => Number.isInteger(n) && n >= 0, { error }));
    case 'text':
      return z.string({ error }).check(z.regex(ONE_LINE, { error }));
    case 'tag':
      return z.string({ error }).check(z.refine(validTag, { error }));
    case 'choice':
      return z.enum(spec.choices as [string, ...string[]], { error });
    case 'switch':
      return z.boolean({ error });
  }
}

/** The front matter's run-option keys, for program.ts's FrontMatter object. */
export function frontMatterShape(): { [K in FrontMatterKey]: z.ZodMiniOptional<z.ZodMiniType<RunOptionValues[K]>> } {
  const entries = runOptionList()
    .filter(o => o.frontMatter)
    .map(o => [o.key, z.optional(zodOf(o))]);
  return Object.fromEntries(entries) as ReturnType<typeof frontMatterShape>;
}

/** The options among `values` that are also front matter keys: a run's overrides of program.md. */
export function frontMatterValues(values: Partial<RunOptionValues>): Partial<Pick<RunOptionValues, FrontMatterKey>> {
  const entries = runOptionList().flatMap(o =>
    o.frontMatter && values[o.key] !== undefined ? [[o.key, values[o.key]]] : [],
  );
  return Object.fromEntries(entries);
}
