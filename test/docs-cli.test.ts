/**
 * docs/cli.md's generated part (scripts/docs-cli.mjs) is the run-option declaration as it is now
 * (src/core/config/run-options.ts): a flag, default or front matter key added there shows here;
 * and every other command's `--help`, as the built engine prints it.
 */
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { RUN_OPTIONS, runOptionList } from '../src/core/config/run-options';
// @ts-expect-error: a plain JavaScript module without types
import { BEGIN, END, FIX, generated, render, withGenerated } from '../scripts/docs-cli.mjs';
import { ENGINE } from './helpers/workspace';

const ROOT = path.resolve(__dirname, '..');

describe('docs/cli.md', () => {
  it('is what node scripts/docs-cli.mjs writes from the declaration now', async () => {
    const { current, wanted } = await render();
    expect(current === wanted, `docs/cli.md is stale against src/core/config/run-options.ts: ${FIX}`).toBe(true);
  });

  it('lists every flag with its default, and each front matter key and POST runs key', async () => {
    const part: string = await generated();
    for (const o of runOptionList()) {
      const row = part.split('\n').find(line => line.startsWith(`| \`${o.flag}\` |`));
      expect(row, o.flag).toBeDefined();
      if (o.kind !== 'switch' && o.default !== undefined) {
        expect(row!.trimEnd().endsWith(`| \`${o.default}\` |`), `${o.flag}'s default`).toBe(true);
      }
    }
    expect(part).toContain(`| \`--budget\` | \`budget_s\` | ${RUN_OPTIONS.budget_s.setting.title} | \`budget_s\` |`);
    // --token is a flag only: in the table of flags, not in the table of other places.
    expect(part).toContain('| `--token <t>` |');
    expect(part).not.toContain('| `--token` |');
  });

  it('is found stale when a generated row no longer matches the declaration', async () => {
    const { current } = await render();
    const edited = current.replace('| `--workers <n>` |', '| `--workers <count>` |');
    expect(edited).not.toBe(current);
    expect(withGenerated(edited, await generated())).toBe(current);
    expect(() => withGenerated(edited.replace(BEGIN, ''), '')).toThrow(/lacks the markers/);
    expect(current.indexOf(END)).toBeGreaterThan(current.indexOf(BEGIN));
  });

  it("holds every other command's --help as the built engine prints it", () => {
    const help = spawnSync(process.execPath, [ENGINE, '--help'], { encoding: 'utf8' }).stdout;
    const names = [...help.split('\nCommands:\n')[1].matchAll(/^ {2}(\S+)/gm)]
      .map(m => m[1])
      .filter(name => name !== 'run' && name !== 'help');
    expect(names).toEqual(expect.arrayContaining(['init', 'status', 'export', 'transfer', 'review', 'step']));
    const doc = fs.readFileSync(path.join(ROOT, 'docs/cli.md'), 'utf8');
    for (const name of names) {
      expect(doc, name).toContain(`#### \`${name}\`\n\n\`\`\`text\nUsage: autoresearch ${name} `);
    }
  });

  it('has a --check that passes on the committed file', () => {
    const done = spawnSync(process.execPath, ['scripts/docs-cli.mjs', '--check'], { cwd: ROOT, encoding: 'utf8' });
    expect(done.status, done.stderr).toBe(0);
  });
});
