/**
 * The docs can be walked: every relative link in README.md, CONTRIBUTING.md, CHANGELOG.md and
 * docs/*.md reaches a file (and, for `page.md#heading`, a heading of it), every path
 * CONTRIBUTING.md names exists, and the README stays a front door of at most 300 lines.
 */
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = path.resolve(__dirname, '..');
const PAGES = [
  'README.md',
  'CONTRIBUTING.md',
  'CHANGELOG.md',
  ...fs
    .readdirSync(path.join(ROOT, 'docs'))
    .filter(f => f.endsWith('.md'))
    .map(f => `docs/${f}`),
];
/** CONTRIBUTING.md's shorthand for the Python package's folder. */
const PKG = 'jupyter_server_ext/jupyterlab_autoresearch/';

const read = (file: string) => fs.readFileSync(path.join(ROOT, file), 'utf8');

/** The page's lines outside fenced code blocks (a `# commit` line in a code block is no heading). */
function prose(text: string): string[] {
  let fenced = false;
  return text.split('\n').filter(line => {
    if (line.startsWith('```')) {
      fenced = !fenced;
      return false;
    }
    return !fenced;
  });
}

/** The anchors GitHub gives a page's headings: lower case, punctuation dropped, spaces as '-', repeats numbered. */
function anchors(text: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  for (const line of prose(text)) {
    const heading = /^#{1,6} (.+)$/.exec(line)?.[1];
    if (heading === undefined) {
      continue;
    }
    const slug = heading
      .toLowerCase()
      .replace(/[^\p{L}\p{N} _-]/gu, '')
      .replace(/ /g, '-');
    const n = seen.get(slug) ?? 0;
    seen.set(slug, n + 1);
    out.add(n === 0 ? slug : `${slug}-${n}`);
  }
  return out;
}

/** Each relative link of a page, as written: `target` or `target#anchor` or `#anchor`. */
function relativeLinks(text: string): string[] {
  const links = prose(text).flatMap(line => [...line.matchAll(/\]\(([^)\s]+)\)/g)].map(m => m[1]));
  return links.filter(link => !/^[a-z]+:/.test(link));
}

/** What is wrong with one link of `page`, or null. */
function brokenLink(page: string, link: string): string | null {
  const [target, anchor] = link.split('#');
  const file = target === '' ? page : path.posix.normalize(path.posix.join(path.posix.dirname(page), target));
  if (!fs.existsSync(path.join(ROOT, file))) {
    return `${page}: ${link} (no ${file})`;
  }
  if (anchor !== undefined && file.endsWith('.md') && !anchors(read(file)).has(anchor)) {
    return `${page}: ${link} (no heading #${anchor} in ${file})`;
  }
  return null;
}

describe('the docs', () => {
  it('README.md is a front door of at most 300 lines', () => {
    expect(read('README.md').split('\n').length).toBeLessThanOrEqual(301); // 300 lines and the final newline
  });

  it('every relative link resolves, to the heading it names', () => {
    const links = PAGES.flatMap(page => relativeLinks(read(page)).map(link => [page, link] as const));
    expect(links.length).toBeGreaterThan(50);
    expect(links.map(([page, link]) => brokenLink(page, link)).filter(Boolean)).toEqual([]);
  });

  it('finds a link that does not resolve', () => {
    expect(brokenLink('docs/README.md', 'no-such-page.md')).toMatch(/no docs\/no-such-page\.md/);
    expect(brokenLink('docs/README.md', 'cli.md#no-such-heading')).toMatch(/no heading/);
    expect(brokenLink('README.md', 'docs/cli.md#reference')).toBeNull();
    expect(anchors('# A `run`: options, and more\n```\n# not a heading\n```\n## A `run`: options, and more\n')).toEqual(
      new Set(['a-run-options-and-more', 'a-run-options-and-more-1']),
    );
  });

  it('every path CONTRIBUTING.md names exists', () => {
    const tracked = execFileSync('git', ['ls-files'], { cwd: ROOT, encoding: 'utf8' }).split('\n');
    const basenames = new Set(tracked.map(f => path.posix.basename(f)));
    // Files of a workspace (`.autoresearch/<tag>/…`) are not the repository's.
    const named = [...read('CONTRIBUTING.md').matchAll(/`([\w./-]+)`/g)]
      .map(m => m[1].replace(/^PKG\//, PKG))
      .filter(p => !p.startsWith('.autoresearch') && (p.includes('/') || /\.(ts|py|mjs|cjs|json|md)$/.test(p)));
    expect(named.length).toBeGreaterThan(30);
    const missing = named.filter(p =>
      p.includes('/') ? !fs.existsSync(path.join(ROOT, p)) : !basenames.has(p) && !fs.existsSync(path.join(ROOT, p)),
    );
    expect(missing).toEqual([]);
  });
});
