/** What the notebook's HTML fallbacks may contain: plain markup that GitHub and nbviewer keep. */
import { expect } from 'vitest';
import { NO_MATH_CLASSES } from '../../src/core/views/bundle';

/** Tags the fallback HTML may use. */
const ALLOWED_TAGS = new Set(['div', 'p', 'b', 'i', 'code', 'pre', 'table', 'tr', 'th', 'td', 'details', 'summary']);

/** Fails on anything a sanitiser strips (scripts, styles, style attributes) or a reader could be attacked with. */
export function expectStaticHtml(html: string): void {
  expect(html).not.toMatch(/<script/i);
  expect(html).not.toMatch(/<style/i);
  const tags = [...html.matchAll(/<\/?([a-zA-Z][\w-]*)([^>]*)>/g)];
  expect(tags.map(m => m[1].toLowerCase()).filter(t => !ALLOWED_TAGS.has(t))).toEqual([]);
  // Attributes: only <details open> and the classes that keep MathJax out (a sanitiser that strips
  // them loses nothing else); no style, no event handlers, no links.
  const allowed = new Set(['', 'open', `class="${NO_MATH_CLASSES}"`]);
  expect(tags.map(m => m[2].trim()).filter(a => !allowed.has(a))).toEqual([]);
}
