/** What the notebook's HTML fallbacks may contain: plain markup that GitHub and nbviewer keep. */
import { expect } from 'vitest';

/** Tags the fallback HTML may use. */
const ALLOWED_TAGS = new Set(['div', 'p', 'b', 'i', 'code', 'pre', 'table', 'tr', 'th', 'td', 'details', 'summary']);

/** Fails on anything a sanitiser strips (scripts, styles, style attributes) or a reader could be attacked with. */
export function expectStaticHtml(html: string): void {
  expect(html).not.toMatch(/<script/i);
  expect(html).not.toMatch(/<style/i);
  const tags = [...html.matchAll(/<\/?([a-zA-Z][\w-]*)([^>]*)>/g)];
  expect(tags.map(m => m[1].toLowerCase()).filter(t => !ALLOWED_TAGS.has(t))).toEqual([]);
  // Attributes: only <details open>; no style, no event handlers, no links.
  expect(tags.map(m => m[2].trim()).filter(a => a !== '' && a !== 'open')).toEqual([]);
}
