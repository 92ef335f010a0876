/**
 * Settings → Autoresearch (schema/plugin.json, JSON, which cannot import the declaration) says what
 * the proposers' declaration says: the same choices, each described, the model for those that take
 * one. test/run-options.test.ts keeps the whole file equal to settingsSchema(); this names the
 * proposer rules, so a proposer added to PROPOSER_INFO without a rebuilt schema fails here by name.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { PROPOSER_INFO } from '../../src/core/config/run-options';
import { PROPOSER_NAMES } from '../../src/core/config/proposers';

const schema = JSON.parse(fs.readFileSync(path.join(__dirname, '..', '..', 'schema', 'plugin.json'), 'utf8')) as {
  properties: Record<string, { enum?: unknown[]; description: string; default?: unknown }>;
};

describe('schema/plugin.json and PROPOSER_INFO', () => {
  it('offers the declared proposers, describes each, and defaults to one that needs no key', () => {
    const proposer = schema.properties.proposer;
    expect(proposer.enum).toEqual(PROPOSER_NAMES);
    for (const name of PROPOSER_NAMES) {
      expect(proposer.description).toContain(`'${name}' ${PROPOSER_INFO[name].description}`);
    }
    expect(PROPOSER_INFO[proposer.default as keyof typeof PROPOSER_INFO].needsKey).toBe(false);
  });

  it('says which proposers the model setting is for', () => {
    const model = schema.properties.model.description;
    for (const name of PROPOSER_NAMES) {
      expect(model.includes(`'${name}'`)).toBe(PROPOSER_INFO[name].hasModel);
    }
  });
});
