/**
 * The proposers, declared once: what each is called, needs and takes. run-options.ts builds the
 * `--proposer` option's choices and help from here and checks each declaration's option names;
 * the engine's registry (src/engine/proposers/index.ts) builds each one. Data only: the browser
 * imports this file too.
 */

/**
 * A proposer as every side sees it: the CLI's flags and default, the server's choices and the
 * secrets it scrubs (engine/run-options.json), the toolbar's fields. The engine's registry
 * (src/engine/proposers/index.ts) builds each one and checks its environment; adding a proposer
 * is one entry here and one there, beside its code.
 */
export interface ProposerInfo<Option extends string> {
  /** Its name in the toolbar's menu. */
  label: string;
  /** What it does, one clause after its name (the settings' description of the proposer option). */
  description: string;
  /** Whether --model (and the toolbar's model field) applies. */
  hasModel: boolean;
  /**
   * Whether it needs a credential: keyEnv[0] in the environment. When no proposer is named, the
   * first one (in PROPOSER_PREFERENCE) whose credential is set is the default.
   */
  needsKey: boolean;
  /** The environment variables holding its credentials ([] for none): training runs never see them, messages are scrubbed of them. */
  keyEnv: readonly string[];
  /**
   * Every variable its SDK may take a credential from, beyond keyEnv (a trailing `_` names a
   * prefix): src/core/config/secrets.ts keeps them all from training runs.
   */
  secretEnv: readonly string[];
  /** The run options that apply to it alone. */
  options: readonly Option[];
}

export const DECLARED = {
  offline: {
    label: 'offline (no key)',
    description: 'mutates numeric hyperparameters and needs no network or key',
    hasModel: false,
    needsKey: false,
    keyEnv: [],
    secretEnv: [],
    options: ['seed'],
  },
  claude: {
    label: 'Claude',
    description: 'asks an Anthropic model',
    hasModel: true,
    needsKey: true,
    keyEnv: ['ANTHROPIC_API_KEY', 'ANTHROPIC_AUTH_TOKEN'],
    // The whole ANTHROPIC_ family (a base URL can carry a key) and Claude Code's own login.
    secretEnv: ['ANTHROPIC_', 'CLAUDE_CODE_OAUTH_TOKEN'],
    options: ['model', 'effort', 'pipeline'],
  },
} as const;
export type ProposerName = keyof typeof DECLARED;
// RUN_OPTIONS's help texts read the declaration, so until it is typed the options are strings (PROPOSER_INFO checks them).
export const INFO: Readonly<Record<ProposerName, ProposerInfo<string>>> = DECLARED;
/** The proposers, in the order the toolbar and `--proposer`'s choices list them. */
export const PROPOSER_NAMES = Object.keys(DECLARED) as ProposerName[];
/** The order the default is picked in: those that need a key (used when it is set) before those that need none. */
export const PROPOSER_PREFERENCE: ProposerName[] = [
  ...PROPOSER_NAMES.filter(n => INFO[n].needsKey),
  ...PROPOSER_NAMES.filter(n => !INFO[n].needsKey),
];
/** The proposer that needs nothing: the settings' default, and the way out of a missing key. */
export const KEYLESS_PROPOSER: ProposerName = PROPOSER_NAMES.find(n => !INFO[n].needsKey) ?? PROPOSER_NAMES[0];

/** The proposers an option applies to alone: 'model' → ['claude']. */
export function proposersWith(option: string): ProposerName[] {
  return PROPOSER_NAMES.filter(n => INFO[n].options.includes(option));
}

/** Every proposer's credential variables: what the engine removes from the environment training runs inherit. */
export function proposerKeyEnv(): string[] {
  return [...new Set(PROPOSER_NAMES.flatMap(n => INFO[n].keyEnv))];
}

/** 'a', 'a or b', 'a, b or c'. */
export function orList(words: readonly string[]): string {
  return words.length > 1 ? `${words.slice(0, -1).join(', ')} or ${words[words.length - 1]}` : words.join('');
}
