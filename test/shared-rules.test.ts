/**
 * The rules of src/core the server follows over the case table its side is tested with too
 * (test/python/test_shared_rules.py): the server reads them from engine/layout.json and
 * engine/rules.json, so a rule changed on one side only fails one of the two.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ENV_NAME } from '../src/core/study/transfer-journal';
import { defaultTag, freeTag, layout, runBranch, runLogName, validTag } from '../src/core/journal/layout';

interface Cases {
  tags: Array<{ tag: string; valid: boolean }>;
  logs: Array<{ n: number; run: number; name: string }>;
  default_tags: Array<{ year: number; month: number; day: number; tag: string }>;
  free_tags: Array<{ journals: string[]; branches: string[]; tag: string }>;
  branches: Array<{ tag: string; branch: string }>;
  env_names: Array<{ name: string; valid: boolean }>;
}

const CASES = JSON.parse(fs.readFileSync(path.join(__dirname, 'cases', 'shared-rules.json'), 'utf8')) as Cases;

describe('the rules the server shares, as the case table states them', () => {
  it.each(CASES.env_names)('environment variable $name: valid $valid', ({ name, valid }) => {
    expect(ENV_NAME.test(name)).toBe(valid);
  });

  it.each(CASES.tags)('tag $tag: valid $valid', ({ tag, valid }) => {
    expect(validTag(tag)).toBe(valid);
  });

  it.each(CASES.logs)('experiment $n, run $run: $name', ({ n, run, name }) => {
    expect(runLogName(n, run)).toBe(name);
  });

  it.each(CASES.default_tags)('$year-$month-$day: $tag', ({ year, month, day, tag }) => {
    // Local time, as the engine takes the day the researcher started the run; late evening tests the day.
    expect(defaultTag(new Date(year, month - 1, day, 23, 59))).toBe(tag);
  });

  it.each(CASES.free_tags)('journals $journals, branches $branches: $tag', ({ journals, branches, tag }) => {
    const today = 'dec4';
    const held = [...journals, ...branches].map(t => t.replace('{today}', today));
    expect(freeTag(t => held.includes(t), today)).toBe(tag.replace('{today}', today));
  });

  it.each(CASES.branches)('run $tag: branch $branch', ({ tag, branch }) => {
    expect(runBranch(tag)).toBe(branch);
  });

  it('the table covers what layout.json hands the server', () => {
    const shared = layout();
    expect(CASES.tags.some(c => c.tag.length === shared.tag_max && c.valid)).toBe(true);
    expect(CASES.tags.some(c => c.tag.length === shared.tag_max + 1 && !c.valid)).toBe(true);
    expect(new Set(CASES.default_tags.map(c => c.tag.replace(/\d+$/, ''))).size).toBeGreaterThan(3);
    expect(shared.month_tags).toHaveLength(12);
  });
});
