/**
 * The sources use zod/mini, never classic zod: the lab extension's bundler takes `zod` (a shared
 * package of the extension) as one ~380 KiB block, while zod/mini's functions are tree-shaken to
 * the few the schemas use. And mini has no messages until a locale is set: every module that
 * imports it calls englishMessages() (src/core/journal/zod-english.ts) at its top, so a schema never
 * exists without English messages, whichever module a bundle or a test loads first. A source
 * check rather than an ESLint rule because ESLint's no-restricted-imports can forbid `zod` but
 * cannot require the call.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { PendingReview } from '../src/core/step-mode/review';
import { parseExperimentData } from '../src/lab/renderer/schema';

const SRC = path.join(__dirname, '..', 'src');
const LOCALE_MODULE = path.join('core', 'journal', 'zod-english.ts');

/** Every TypeScript source under src/, relative to it. */
function sources(dir = SRC): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap(e => {
    const full = path.join(dir, e.name);
    if (e.isDirectory()) return sources(full);
    return /\.tsx?$/.test(e.name) ? [path.relative(SRC, full)] : [];
  });
}

/** The zod entry points a source imports (`import … from`, `import()`, `require()`, `export … from`). */
function zodImports(text: string): string[] {
  const found = text.matchAll(
    /(?:\bfrom\s*|\bimport\s*\(\s*|\brequire\s*\(\s*|^\s*import\s+)['"](zod(?:\/[^'"]*)?)['"]/gm,
  );
  return [...found].map(m => m[1]);
}

/** The text without its type-only imports: they make no schema at run time, so they need no messages. */
function withoutTypeImports(text: string): string {
  return text.replace(/^import type [^;]*;$/gm, '');
}

describe('zod in the sources', () => {
  const files = sources().map(f => ({ file: f, text: fs.readFileSync(path.join(SRC, f), 'utf8') }));

  it('finds the sources and what they import (the check itself works)', () => {
    expect(files.length).toBeGreaterThan(50);
    expect(
      zodImports("import * as z from 'zod/mini';\nimport { z as c } from \"zod\";\nconst m = import('zod/v4');"),
    ).toEqual(['zod/mini', 'zod', 'zod/v4']);
  });

  it('imports zod/mini only: classic zod ships whole to the browser', () => {
    const classic = files.flatMap(({ file, text }) =>
      zodImports(text)
        .filter(spec => spec !== 'zod/mini')
        .map(spec => `${file} imports '${spec}'`),
    );
    expect(classic, "use `import * as z from 'zod/mini'` (z.optional(x), x.check(z.minLength(1)), …)").toEqual([]);
  });

  it('sets English messages in every module that imports zod/mini, before its schemas', () => {
    const importers = files.filter(({ text }) => zodImports(withoutTypeImports(text)).includes('zod/mini'));
    expect(importers.length).toBeGreaterThan(10);
    const silent = importers
      .filter(({ file }) => file !== LOCALE_MODULE)
      .filter(
        ({ text }) =>
          !/^import \{ englishMessages \} from '(?:\.\.?\/)+(?:core\/)?(?:journal\/)?zod-english';$/m.test(text) ||
          !/^englishMessages\(\);$/m.test(text),
      )
      .map(({ file }) => file);
    expect(
      silent,
      "add `import { englishMessages } from '…/core/journal/zod-english'` and `englishMessages();`",
    ).toEqual([]);
  });

  it('words a schema problem in English, as classic zod did', () => {
    expect(
      PendingReview.safeParse({ n: -1 })
        .error?.issues.slice(0, 2)
        .map(i => i.message),
    ).toEqual(['Too small: expected number to be >=0', 'Invalid input: expected string, received undefined']);
    const bad = parseExperimentData({ ts: 5 });
    expect(bad.ok ? '' : bad.error).toMatch(/^✖ Invalid input: expected string, received number\n {2}→ at ts\n/);
  });
});
