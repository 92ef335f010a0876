/**
 * program.md's YAML front matter, split from its prose: the panel's cell edits the prose, the
 * settings block is kept byte for byte and shown beside it. No YAML parser in the browser: the
 * engine validates the front matter; the panel only shows its lines.
 */

export interface IProgramText {
  /** The front matter block including its `---` fences and trailing newline; '' when there is none. */
  frontMatter: string;
  body: string;
}

const FENCED = /^---[ \t]*\r?\n([\s\S]*?)\r?\n---[ \t]*(?:\r?\n|$)/;

export function splitProgram(text: string): IProgramText {
  const match = FENCED.exec(text);
  if (!match) {
    return { frontMatter: '', body: text };
  }
  return { frontMatter: match[0], body: text.slice(match[0].length).replace(/^\r?\n/, '') };
}

export function joinProgram(parts: IProgramText): string {
  if (!parts.frontMatter) {
    return parts.body;
  }
  const fm = parts.frontMatter.endsWith('\n') ? parts.frontMatter : `${parts.frontMatter}\n`;
  return `${fm}\n${parts.body}`;
}

/**
 * The front matter's top-level `key: value` lines, for display. A key whose value is a block
 * under it (`transfer:` then `  env:` and `    AUTORESEARCH_SCALE: 2`) shows that block on one
 * line, `env: AUTORESEARCH_SCALE: 2`, a list's items as `a, b`; comments are left out.
 */
export function frontMatterEntries(frontMatter: string): Array<[string, string]> {
  const out: Array<[string, string]> = [];
  let block: string[] | null = null; // the indented lines under the last key without a value
  const close = () => {
    if (block && block.length) {
      const items = block.every(line => line.startsWith('- '));
      out[out.length - 1][1] = block.map(line => (items ? line.slice(2) : line)).join(items ? ', ' : ' ');
    }
    block = null;
  };
  for (const line of frontMatter.split(/\r?\n/)) {
    const m = /^([A-Za-z_][\w-]*):\s*(.*)$/.exec(line);
    if (m) {
      close();
      out.push([m[1], m[2]]);
      block = m[2].trim() === '' ? [] : null;
    } else if (block && /^\s+\S/.test(line) && !/^\s*#/.test(line)) {
      block.push(line.trim());
    }
  }
  close();
  return out;
}

/** A top-level number in the front matter (budget_s, say), or null. */
export function frontMatterNumber(frontMatter: string, key: string): number | null {
  const entry = frontMatterEntries(frontMatter).find(([k]) => k === key);
  const value = entry ? Number(entry[1]) : NaN;
  return Number.isFinite(value) ? value : null;
}

/** A top-level `key: true` / `key: false` in the front matter (step, say); false when absent or otherwise. */
export function frontMatterFlag(frontMatter: string, key: string): boolean {
  const entry = frontMatterEntries(frontMatter).find(([k]) => k === key);
  return entry?.[1].trim() === 'true';
}
