/**
 * The run options' one declaration (src/core/config/run-options.ts) and what is derived from it: the
 * CLI's flags, the front matter, the committed settings schema, the server's option list.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { spawnSync } from 'node:child_process';
import Ajv from 'ajv';
import { Command } from 'commander';
import { describe, expect, it } from 'vitest';
import { parseProgram, resolveConfig } from '../src/core/config/program';
import { RUN_OPTIONS, runOptionList, serverOptions } from '../src/core/config/run-options';
import { runSettingDefaults, settingsSchema } from '../src/core/config/run-option-schemas';
import { frontMatterValues, zodOf } from '../src/core/config/run-option-checks';
import { buildProgram } from '../src/engine/cli/cli';
import { addRunOptions } from '../src/engine/cli/run-flags';
import { ENGINE } from './helpers/workspace';

const ROOT = path.resolve(__dirname, '..');
const SCHEMA = path.join(ROOT, 'schema', 'plugin.json');

/** Parses `args` as `autoresearch run ws …` would, without running anything. */
function parseRun(...args: string[]): Record<string, unknown> {
  const cmd = new Command('run')
    .argument('<dir>')
    .exitOverride()
    .configureOutput({ writeErr: () => undefined });
  const read = addRunOptions(cmd);
  let flags: Record<string, unknown> = {};
  cmd.action((_dir: string, o: Record<string, unknown>) => {
    flags = read(o);
  });
  cmd.parse(['ws', ...args], { from: 'user' });
  return flags;
}

describe('the run options, declared once', () => {
  it('give `autoresearch run` exactly its flags, in order', () => {
    const run = buildProgram(() => undefined).commands.find(c => c.name() === 'run');
    expect(run?.options.map(o => o.flags)).toEqual(runOptionList().map(o => o.flag));
  });

  it('parse flags into the keys of program.md and the server', () => {
    const flags = parseRun(
      '--noise-runs',
      '1',
      '--keep-sigma',
      '0',
      '--confirm-runs',
      '0',
      '--budget',
      '60',
      '--no-pipeline',
      '--kernel-id',
      'k1',
    );
    expect(flags).toEqual({
      noise_runs: 1,
      keep_sigma: 0,
      confirm_runs: 0,
      budget_s: 60,
      pipeline: false,
      kernel_id: 'k1',
    });
    // The flags that are front matter keys override program.md; the rest are the engine's.
    expect(frontMatterValues(flags)).toEqual({ noise_runs: 1, keep_sigma: 0, confirm_runs: 0, budget_s: 60 });
    expect(parseRun()).toEqual({ pipeline: true });
  });

  it.each([
    [['--noise-runs', '0'], /--noise-runs <k>.*must be a whole number above 0/],
    [['--keep-sigma', '-1'], /--keep-sigma <z>.*must be a number of 0 or more/],
    [['--confirm-runs', '1.5'], /--confirm-runs <k>.*must be a whole number of 0 or more/],
    [['--max-experiments', ''], /must be a whole number of 0 or more/],
    [['--proposer', 'gpt'], /must be offline or claude/],
    [['--ship', 'sometimes'], /must be auto, always or never/],
  ])('refuse a bad value on the command line: %j', (args, message) => {
    expect(() => parseRun(...args)).toThrow(message);
  });

  it('make the front matter keys, checked with the same words', () => {
    const { frontMatter } = parseProgram('---\nnoise_runs: 1\nkeep_sigma: 0.5\nconfirm_runs: 0\n---\nGo.\n');
    expect(resolveConfig(frontMatter)).toMatchObject({ noise_runs: 1, keep_sigma: 0.5, confirm_runs: 0 });
    expect(resolveConfig(frontMatter, { noise_runs: 5 }).noise_runs).toBe(5);
    expect(resolveConfig({})).toMatchObject({
      noise_runs: RUN_OPTIONS.noise_runs.default,
      keep_sigma: 2,
      confirm_runs: 2,
    });
    expect(() => parseProgram('---\nnoise_runs: 0\n---\nx')).toThrow(/"noise_runs" must be a whole number above 0/);
    expect(() => parseProgram('---\nkeep_sigma: "2"\n---\nx')).toThrow(/"keep_sigma" must be a number of 0 or more/);
    expect(() => parseProgram('---\nconfirm_runs: -1\n---\nx')).toThrow(/"confirm_runs"/);
    // A CLI-only option is no front matter key.
    expect(() => parseProgram('---\nworkers: 2\n---\nx')).toThrow(/unknown key "workers"/);
  });

  it('are the committed settings schema (refresh it: npx vitest run test/run-options.test.ts -u)', async () => {
    const committed = JSON.parse(fs.readFileSync(SCHEMA, 'utf8'));
    await expect(JSON.stringify(settingsSchema(committed), null, 2) + '\n').toMatchFileSnapshot(SCHEMA);
    expect(Object.keys(committed.properties)).toEqual(
      expect.arrayContaining(['noise_runs', 'keep_sigma', 'confirm_runs', 'openOnStart']),
    );
  });

  it('give settings defaults the schema accepts, and a schema that refuses what the server would', () => {
    const schema = JSON.parse(fs.readFileSync(SCHEMA, 'utf8'));
    const validate = new Ajv({ strict: false, useDefaults: false }).compile(schema);
    expect(validate({ ...runSettingDefaults(), openOnStart: true })).toBe(true);
    expect(validate({ noise_runs: 1, keep_sigma: 0, confirm_runs: 0 })).toBe(true);
    for (const bad of [
      { noise_runs: 0 },
      { keep_sigma: -1 },
      { confirm_runs: 1.5 },
      { max_dollars: 0 },
      { proposer: 'gpt' },
    ]) {
      expect(validate(bad), JSON.stringify(bad)).toBe(false);
    }
  });

  it('are what the built server package reads (engine/run-options.json)', () => {
    const built = path.join(ROOT, 'jupyter_server_ext', 'jupyterlab_autoresearch', 'engine', 'run-options.json');
    expect(JSON.parse(fs.readFileSync(built, 'utf8'))).toEqual(serverOptions());
    const keys = (serverOptions() as { options: Array<{ key: string }> }).options.map(o => o.key);
    expect(keys).toEqual(expect.arrayContaining(['noise_runs', 'keep_sigma', 'confirm_runs', 'server_url']));
    expect(keys).not.toContain('token');
  });

  it("check a tag by the layout's one rule (src/core/journal/layout.ts), as the engine and the server do", () => {
    const tag = zodOf(RUN_OPTIONS.tag);
    for (const good of ['dec1', 'nov30-gpu0', 'a.b_c', 'x'.repeat(100)]) {
      expect(tag.safeParse(good).success, good).toBe(true);
    }
    for (const bad of ['', '.', '..', '.hidden', 'a..b', 'a.', 'x.lock', 'a/b', 'x'.repeat(101)]) {
      expect(tag.safeParse(bad).success, bad).toBe(false);
    }
    expect(tag.safeParse('..').error?.issues[0].message).toMatch(
      /^must be a name of letters, digits, .*not starting with '\.'/,
    );
  });

  it('reach the built engine: a bad --noise-runs is refused before anything starts', () => {
    const r = spawnSync(process.execPath, [ENGINE, 'run', ROOT, '--noise-runs', '0'], { encoding: 'utf8' });
    expect(r.status).toBe(1);
    expect(r.stderr).toMatch(/--noise-runs <k>.*must be a whole number above 0/);
  });
});
