/** The proposers the engine knows, by name. */
import type { Prices } from '../../core/pricing';
import { PROPOSER_NAMES, type ProposerName } from '../../core/run-options';
import { ClaudeProposer } from './claude';
import { OfflineProposer } from './offline';
import type { Proposer } from './types';
import { UserError } from '../workspace';

/** Their names and needs (an API key, a model) are declared with the run options, for the panel too. */
export const PROPOSERS = PROPOSER_NAMES;

export interface ProposerOptions {
  seed: number;
  /** The workspace's Python (the claude proposer syntax-checks each edit with it). */
  python?: string;
  /** claude: the model id (default: DEFAULT_MODEL in ./claude). */
  model?: string;
  /** claude: the key; defaults to $ANTHROPIC_API_KEY. */
  apiKey?: string;
  /** claude: the API's address; defaults to $ANTHROPIC_BASE_URL, else the public API. */
  baseURL?: string;
  /** claude: price overrides by model id, $/MTok. */
  prices?: Record<string, Prices>;
}

/** The proposer used when none is named: claude when an API key is set, else offline. */
export function defaultProposer(env: NodeJS.ProcessEnv = process.env): ProposerName {
  return env.ANTHROPIC_API_KEY ? 'claude' : 'offline';
}

/** Builds the named proposer. */
export function createProposer(name: string, opts: ProposerOptions): Proposer {
  switch (name) {
    case 'offline':
      return new OfflineProposer({ seed: opts.seed });
    case 'claude': {
      const apiKey = opts.apiKey ?? process.env.ANTHROPIC_API_KEY;
      if (!apiKey) {
        throw new UserError('the claude proposer needs an API key: set ANTHROPIC_API_KEY, or use --proposer offline');
      }
      return new ClaudeProposer({
        apiKey,
        baseURL: opts.baseURL,
        model: opts.model,
        python: opts.python ?? 'python3',
        prices: opts.prices,
      });
    }
    default:
      throw new UserError(`unknown proposer "${name}"; available: ${PROPOSERS.join(', ')}`);
  }
}
