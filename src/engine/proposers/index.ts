/**
 * The proposers the engine knows, by name: how each is built and what it needs from the
 * environment. What each is (its label, key, model and options) is declared with the run options,
 * in src/core/config/run-options.ts's PROPOSER_INFO, which the server and the panel read too; the CLI
 * names no proposer, it asks here.
 */
import type { Prices } from '../../core/config/pricing';
import { type Effort, PROPOSER_INFO } from '../../core/config/run-options';
import { KEYLESS_PROPOSER, PROPOSER_NAMES, PROPOSER_PREFERENCE, type ProposerName } from '../../core/config/proposers';
import { withSecrets, withSecretsInEnv } from '../executor/secrets';
import { UserError } from '../user-error';
import { ClaudeProposer, DEFAULT_MODEL } from './claude/proposer';
import { OfflineProposer } from './offline/proposer';
import type { Proposer } from './types';

/** What building a proposer may use: the resolved run config's parts, each proposer taking those it needs. */
export interface ProposerConfig {
  seed: number;
  /** The workspace's Python (the claude proposer syntax-checks each edit with it). */
  python?: string;
  /** The model id, for a proposer with hasModel (default: its entry's defaultModel). */
  model?: string;
  /** How hard a thinking model thinks (program.md's effort, --effort); the claude proposer's default when absent. */
  effort?: Effort;
  /** Price overrides by model id, $/MTok. */
  prices?: Record<string, Prices>;
  /** Where the proposer's notes go (waiting out an outage): the CLI prints them above its live line. */
  onNote?: (text: string) => void;
}

export interface ProposerEntry {
  /** Builds it; called only once check() found nothing missing. */
  create(config: ProposerConfig, env: NodeJS.ProcessEnv): Proposer;
  /** What the environment lacks for it (a key), as the message a user acts on; null when nothing. */
  check(env: NodeJS.ProcessEnv): string | null;
  /** The model used when none is given (hasModel proposers): `--model`'s help names it. */
  defaultModel?: string;
}

/** "the claude proposer needs an API key: set ANTHROPIC_API_KEY, or use --proposer offline", or null. */
function keyCheck(name: ProposerName, env: NodeJS.ProcessEnv): string | null {
  const needed = PROPOSER_INFO[name].keyEnv[0];
  if (!PROPOSER_INFO[name].needsKey || env[needed]) {
    return null;
  }
  return `the ${name} proposer needs an API key: set ${needed}, or use --proposer ${KEYLESS_PROPOSER}`;
}

/** One entry per declared proposer: a name missing here, or here and not declared, does not compile. */
export const PROPOSER_REGISTRY: Readonly<Record<ProposerName, ProposerEntry>> = {
  offline: {
    create: config => new OfflineProposer({ seed: config.seed }),
    check: () => null,
  },
  claude: {
    // The SDK's client reads ANTHROPIC_BASE_URL and the rest of its settings from process.env, which no longer holds them.
    create: (config, env) =>
      withSecretsInEnv(
        () =>
          new ClaudeProposer({
            apiKey: env[PROPOSER_INFO.claude.keyEnv[0]] as string,
            model: config.model,
            effort: config.effort,
            python: config.python ?? 'python3',
            prices: config.prices,
            onNote: config.onNote,
          }),
      ),
    check: env => keyCheck('claude', env),
    defaultModel: DEFAULT_MODEL,
  },
};

function entryOf(name: string): ProposerEntry | undefined {
  return (PROPOSER_NAMES as string[]).includes(name) ? PROPOSER_REGISTRY[name as ProposerName] : undefined;
}

/**
 * The proposer used when none is named: the first in PROPOSER_PREFERENCE (those needing a key,
 * then the rest) that the environment allows, so claude when ANTHROPIC_API_KEY is set, else offline.
 */
export function defaultProposer(env: NodeJS.ProcessEnv = withSecrets()): ProposerName {
  return PROPOSER_PREFERENCE.find(name => PROPOSER_REGISTRY[name].check(env) === null) ?? KEYLESS_PROPOSER;
}

/** Builds the named proposer, or says what it lacks (a UserError). */
export function createProposer(name: string, config: ProposerConfig, env: NodeJS.ProcessEnv = withSecrets()): Proposer {
  const entry = entryOf(name);
  if (!entry) {
    throw new UserError(`unknown proposer "${name}"; available: ${PROPOSER_NAMES.join(', ')}`);
  }
  const missing = entry.check(env);
  if (missing) {
    throw new UserError(missing);
  }
  return entry.create(config, env);
}
