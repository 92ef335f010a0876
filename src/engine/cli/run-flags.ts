/** `autoresearch run`'s flags, built from the declaration in src/core/config/run-options.ts. */
import { type Command, InvalidArgumentError, Option } from 'commander';
import {
  type OptionKind,
  RUN_OPTIONS,
  runOptionList,
  type RunOptionKey,
  type RunOptionValues,
} from '../../core/config/run-options';
import { ruleOf } from '../../core/config/run-option-checks';
import { orList, PROPOSER_NAMES } from '../../core/config/proposers';
import { PROPOSER_REGISTRY } from '../proposers';

/** The flags given, by the declaration's keys (budget_s, not commander's budget). */
export type RunFlags = Partial<RunOptionValues>;

const NUMBER_TESTS: Partial<Record<OptionKind, (n: number) => boolean>> = {
  positive: n => n > 0,
  nonnegative: n => n >= 0,
  'positive-int': n => Number.isInteger(n) && n >= 1,
  count: n => Number.isInteger(n) && n >= 0,
};

/**
 * commander's check of a numeric argument of this kind: parsed and bounded, worded as the
 * declaration's rule (ruleOf). Every numeric flag of the CLI uses it: run's from the declaration,
 * init's --budget and stop's --wait by kind, so no flag has a rule of its own.
 */
export function numberParser(kind: OptionKind, max = Infinity): (v: string) => number {
  const test = NUMBER_TESTS[kind] ?? (() => false);
  return v => {
    const n = Number(v);
    // Number('') is 0, which would make an empty argument a valid count.
    if (!v.trim() || !Number.isFinite(n) || !test(n) || n > max) {
      throw new InvalidArgumentError(`must be ${ruleOf({ kind, max: max === Infinity ? undefined : max })}`);
    }
    return n;
  };
}

/** commander's check of an argument: numbers are parsed and bounded, choices must be one of them. */
function parserFor(
  kind: OptionKind,
  choices: readonly string[] = [],
  max = Infinity,
): ((v: string) => unknown) | undefined {
  if (NUMBER_TESTS[kind]) {
    return numberParser(kind, max);
  }
  if (kind === 'choice') {
    return v => {
      if (!choices.includes(v)) {
        throw new InvalidArgumentError(`must be ${orList(choices)}`);
      }
      return v;
    };
  }
  return undefined;
}

/** 'claude-sonnet-5-5', or 'a: m1; b: m2' once several proposers have a model. */
function defaultModels(): string {
  const models = PROPOSER_NAMES.flatMap(name => {
    const model = PROPOSER_REGISTRY[name].defaultModel;
    return model ? [[name, model]] : [];
  });
  return models.length === 1 ? models[0][1] : models.map(([name, model]) => `${name}: ${model}`).join('; ');
}

/** The flag that sets an option, for messages: '--kernel-id'. */
export function flagOf(key: RunOptionKey): string {
  return RUN_OPTIONS[key].flag.split(' ')[0];
}

/**
 * Adds every run option to `cmd`, in the declaration's order. Returns a reader that turns
 * commander's parsed options into RunFlags; absent flags stay absent, so defaults (and front
 * matter, which a flag overrides) apply later, in one place each.
 */
export function addRunOptions(cmd: Command): (parsed: Record<string, unknown>) => RunFlags {
  const keyOf = new Map<string, RunOptionKey>();
  for (const spec of runOptionList()) {
    // The default model lives with its proposer's code, which the browser-safe declaration cannot import.
    const help = spec.key === 'model' ? `${spec.help} (default: ${defaultModels()})` : spec.help;
    const option = new Option(spec.flag, help);
    const parse = parserFor(spec.kind, spec.choices, spec.max);
    if (parse) {
      option.argParser(parse);
    }
    cmd.addOption(option);
    keyOf.set(option.attributeName(), spec.key);
  }
  return parsed => {
    const flags: Record<string, unknown> = {};
    for (const [attr, value] of Object.entries(parsed)) {
      const key = keyOf.get(attr);
      if (key !== undefined && value !== undefined) {
        flags[key] = value;
      }
    }
    return flags as RunFlags;
  };
}
