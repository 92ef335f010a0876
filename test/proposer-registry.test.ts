/**
 * Proposers declare themselves (PROPOSER_INFO in src/core/config/run-options.ts) and the engine's
 * registry (src/engine/proposers/index.ts) builds them: the two name the same proposers, and the
 * CLI's default, its texts and the server's list all come from them.
 */
import { describe, expect, it } from 'vitest';
import { PROPOSER_INFO, RUN_OPTIONS, serverOptions } from '../src/core/config/run-options';
import { KEYLESS_PROPOSER, PROPOSER_NAMES, proposerKeyEnv } from '../src/core/config/proposers';
import { isSecretName, SECRET_NAMES, SERVER_SECRET_NAMES } from '../src/core/config/secrets';
import { createProposer, defaultProposer, PROPOSER_REGISTRY } from '../src/engine/proposers';
import { DEFAULT_MODEL } from '../src/engine/proposers/claude/proposer';
import { UserError } from '../src/engine/user-error';

const CONFIG = { seed: 0, python: 'python3' };
const KEY = 'sk-ant-test-registry-0123456789';

describe('the proposer declarations and the registry', () => {
  it('name the same proposers: one declared without an entry, or an entry never declared, fails here', () => {
    expect(Object.keys(PROPOSER_REGISTRY).sort()).toEqual([...PROPOSER_NAMES].sort());
    for (const name of PROPOSER_NAMES) {
      expect(typeof PROPOSER_REGISTRY[name].create, name).toBe('function');
      expect(typeof PROPOSER_REGISTRY[name].check, name).toBe('function');
    }
  });

  it('are consistent: a model option and a default model go with hasModel, a key variable with needsKey', () => {
    for (const name of PROPOSER_NAMES) {
      const info = PROPOSER_INFO[name];
      expect(info.options.includes('model'), name).toBe(info.hasModel);
      expect(PROPOSER_REGISTRY[name].defaultModel !== undefined, name).toBe(info.hasModel);
      expect(info.keyEnv.length > 0, name).toBe(info.needsKey);
      for (const option of info.options) {
        expect(Object.keys(RUN_OPTIONS), `${name}: ${option}`).toContain(option);
      }
    }
    expect(PROPOSER_INFO[KEYLESS_PROPOSER].needsKey).toBe(false);
  });

  it('pick the default as before: claude when ANTHROPIC_API_KEY is set (not empty), else offline', () => {
    expect(defaultProposer({})).toBe('offline');
    expect(defaultProposer({ ANTHROPIC_API_KEY: '' })).toBe('offline');
    expect(defaultProposer({ ANTHROPIC_AUTH_TOKEN: KEY })).toBe('offline');
    expect(defaultProposer({ ANTHROPIC_API_KEY: KEY })).toBe('claude');
  });

  it('say what a proposer lacks, and build it once nothing is', () => {
    expect(PROPOSER_REGISTRY.offline.check({})).toBeNull();
    expect(PROPOSER_REGISTRY.claude.check({ ANTHROPIC_API_KEY: KEY })).toBeNull();
    const missing = 'the claude proposer needs an API key: set ANTHROPIC_API_KEY, or use --proposer offline';
    expect(PROPOSER_REGISTRY.claude.check({})).toBe(missing);
    expect(() => createProposer('claude', CONFIG, {})).toThrow(new UserError(missing));
    expect(() => createProposer('gpt', CONFIG, {})).toThrow('unknown proposer "gpt"; available: offline, claude');
    expect(() => createProposer('toString', CONFIG, {})).toThrow(/unknown proposer/);

    const offline = createProposer('offline', CONFIG, {});
    expect(offline.name).toBe('offline');
    expect(offline.check).toBeUndefined();
    const claude = createProposer('claude', CONFIG, { ANTHROPIC_API_KEY: KEY });
    expect([claude.name, (claude as { model?: string }).model, typeof claude.check]).toEqual([
      'claude',
      DEFAULT_MODEL,
      'function',
    ]);
    expect(
      (
        createProposer('claude', { ...CONFIG, model: 'claude-opus-4-8' }, { ANTHROPIC_API_KEY: KEY }) as {
          model?: string;
        }
      ).model,
    ).toBe('claude-opus-4-8');
  });

  it('write the texts that used to name the proposers by hand, word for word', () => {
    expect(RUN_OPTIONS.proposer.help).toBe(
      'who proposes experiments: claude (the default when ANTHROPIC_API_KEY is set) or offline',
    );
    expect(RUN_OPTIONS.proposer.setting.description).toBe(
      "Who proposes the edits to train.py: 'offline' mutates numeric hyperparameters and needs no network or key; 'claude' asks an Anthropic model.",
    );
    expect(RUN_OPTIONS.proposer.setting.default).toBe('offline');
    expect(RUN_OPTIONS.model.help).toBe("the claude proposer's model");
    expect(RUN_OPTIONS.model.setting.description).toMatch(/^Model name for the 'claude' proposer; /);
    expect(RUN_OPTIONS.pipeline.help).toMatch(/drafting while it trains \(claude\)$/);
    expect(RUN_OPTIONS.seed.help).toBe('seed for the offline proposer');
    expect(RUN_OPTIONS.proposer.choices).toEqual(['offline', 'claude']);
  });

  it('reach the server: engine/run-options.json lists each proposer, snake_case, and every credential variable', () => {
    const { proposers } = serverOptions() as { proposers: Record<string, Record<string, unknown>> };
    expect(Object.keys(proposers)).toEqual(PROPOSER_NAMES);
    expect(proposers.claude).toEqual({
      label: 'Claude',
      description: 'asks an Anthropic model',
      has_model: true,
      needs_key: true,
      key_env: ['ANTHROPIC_API_KEY', 'ANTHROPIC_AUTH_TOKEN'],
      options: ['model', 'effort', 'pipeline'],
    });
    expect(proposers.offline).toMatchObject({ has_model: false, needs_key: false, key_env: [] });
    expect(proposerKeyEnv()).toEqual(['ANTHROPIC_API_KEY', 'ANTHROPIC_AUTH_TOKEN']);
  });

  it("every proposer's credentials are secrets no training run gets, beside the server's tokens", () => {
    for (const name of PROPOSER_NAMES) {
      for (const env of [...PROPOSER_INFO[name].keyEnv, ...PROPOSER_INFO[name].secretEnv]) {
        expect(isSecretName(env, SECRET_NAMES), `${name}: ${env}`).toBe(true);
      }
    }
    // The SDK's other variables (a base URL can carry a key) and Claude Code's login, by the claude declaration.
    expect(isSecretName('ANTHROPIC_BASE_URL', SECRET_NAMES)).toBe(true);
    expect(isSecretName('CLAUDE_CODE_OAUTH_TOKEN', SECRET_NAMES)).toBe(true);
    for (const token of SERVER_SECRET_NAMES) expect(SECRET_NAMES).toContain(token);
    // A name a prefix covers is not listed again.
    expect(SECRET_NAMES).not.toContain('ANTHROPIC_API_KEY');
    expect(isSecretName('PATH', SECRET_NAMES)).toBe(false);
  });
});
