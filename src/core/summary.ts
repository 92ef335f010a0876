/**
 * The summary block train.py prints at the end: a line `---`, then one
 * `key: value` a line. Only the last block in the output counts, so a script
 * may print `---` elsewhere without confusing the parser.
 */

export type Summary = Record<string, number | string>;

const KEY_VALUE = /^([A-Za-z_][\w.]*):\s*(.*?)\s*$/;

/** Parses the last summary block of a log; null when there is none. */
export function parseSummary(log: string): Summary | null {
  const lines = log.split(/\r?\n/);
  for (let start = lines.length - 1; start >= 0; start--) {
    if (lines[start].trim() !== '---') {
      continue;
    }
    const summary: Summary = {};
    for (const line of lines.slice(start + 1)) {
      const m = KEY_VALUE.exec(line.trim());
      if (!m) {
        continue;
      }
      summary[m[1]] = toValue(m[2]);
    }
    if (Object.keys(summary).length > 0) {
      return summary;
    }
  }
  return null;
}

function toValue(text: string): number | string {
  // Number('') is 0 and Number('0x10') is 16: only plain decimal literals count as numbers.
  if (/^[-+]?(\d+\.?\d*|\.\d+)(e[-+]?\d+)?$/i.test(text)) {
    return Number(text);
  }
  // NaN and inf stay strings: JSON (the journal) cannot hold them as numbers.
  return text;
}

/** The metric from a summary, or a reason it is unusable. */
export function readMetric(summary: Summary | null, metric: string): { value: number } | { error: string } {
  if (!summary) {
    return { error: 'no summary block (a line "---" followed by key: value lines) in the output' };
  }
  if (!(metric in summary)) {
    return { error: `the summary block has no "${metric}" line` };
  }
  const value = summary[metric];
  if (typeof value !== 'number') {
    if (/^[-+]?nan$/i.test(value)) return { error: `${metric} is NaN` };
    if (/^[-+]?inf(inity)?$/i.test(value)) return { error: `${metric} is infinite` };
    return { error: `${metric} is not a number: "${value}"` };
  }
  return { value };
}

/** Peak memory in GB from the summary's peak_vram_mb, the way the original results.tsv reports it. */
export function memoryGb(summary: Summary | null): number {
  const mb = summary?.peak_vram_mb;
  return typeof mb === 'number' && Number.isFinite(mb) && mb > 0 ? mb / 1024 : 0;
}
