/**
 * The summary block train.py prints at the end: a line `---`, then one
 * `key: value` a line. Only the last block in the output counts, so a script
 * may print `---` elsewhere without confusing the parser.
 *
 * Every value is kept: a number where it is a decimal literal a double holds, else the text
 * as printed (`nan`, `inf`, `1e999`, a 400-digit integer), because JSON, and so the journal,
 * holds no non-finite number. Only the metric must be a finite number; any other key may be text.
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

// Number('') is 0 and Number('0x10') is 16: only plain decimal literals count as numbers.
const DECIMAL = /^[-+]?(\d+\.?\d*|\.\d+)(e[-+]?\d+)?$/i;

function toValue(text: string): number | string {
  if (DECIMAL.test(text)) {
    const n = Number(text);
    // 1e999 and 400-digit values overflow to ±Infinity: kept as printed, like NaN and inf.
    if (Number.isFinite(n)) {
      return n;
    }
  }
  return text;
}

/** A value for a message: long ones cut, so a 400-digit value does not flood the reason. */
function shown(text: string): string {
  return text.length > 60 ? `${text.slice(0, 40)}… (${text.length} characters)` : text;
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
    if (DECIMAL.test(value)) return { error: `${metric} is not a finite number: ${shown(value)}` };
    return { error: `${metric} is not a number: "${shown(value)}"` };
  }
  // The keep rule squares metrics (the noise's variance): past this a square overflows to Infinity.
  if (Math.abs(value) >= MAX_METRIC) {
    return { error: `${metric} is too large to compare: ${value}` };
  }
  return { value };
}

/** The largest metric magnitude the noise statistics can square and sum without overflowing. */
export const MAX_METRIC = 1e150;

/** Peak memory in GB from the summary's peak_vram_mb, the way the original results.tsv reports it. */
export function memoryGb(summary: Summary | null): number {
  const mb = summary?.peak_vram_mb;
  return typeof mb === 'number' && Number.isFinite(mb) && mb > 0 ? mb / 1024 : 0;
}
