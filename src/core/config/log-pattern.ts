/**
 * How a run's log lines are read for its loss curve and step time. program.md may declare its
 * own format (`log_pattern: "step {step} | loss {loss} | {ms}ms"`), and program.md may have been
 * written by a training run: so a pattern is a template, never a regular expression. Its literal
 * text is matched as it is, each placeholder as one number taken whole (an atomic group: the
 * engine never backtracks into it), so matching is linear in the line; lines are cut to
 * MAX_LINE characters first. Without a pattern, fixed defaults read the common formats.
 * Data and regular expressions only: the browser (and program.md's check) imports this file too.
 */

/** The placeholders a template may use, and what each reads. */
export const LOG_FIELDS = {
  step: 'the step number',
  loss: 'the training loss',
  ms: 'milliseconds per step',
  s: 'seconds per step',
  elapsed: 'seconds of training so far (the step time is derived from it and the step)',
} as const;
export type LogField = keyof typeof LOG_FIELDS;

/** `{*}` skips anything up to the next literal text (leftmost match, no backtracking). */
export const SKIP = '{*}';
/** Longest template accepted. */
export const MAX_TEMPLATE = 200;
/** A log line is read up to this many characters (a flooded line cannot slow the match). */
export const MAX_LINE = 500;

/** What one log line says; a line counts only if it has a loss. */
export type LineFacts = Partial<Record<LogField, number>>;

/** A finite decimal, with sign and exponent, taken whole. */
const NUMBER = '[-+]?(?:\\d+(?:\\.\\d*)?|\\.\\d+)(?:[eE][-+]?\\d+)?';

/** A compiled template: reads the fields of one line, or null when the line does not match. */
export interface LogPattern {
  template: string;
  read(line: string): LineFacts | null;
}

const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');

/** Why a template cannot be used, in one line naming the fix, or null when it can. */
export function logPatternProblem(template: string): string | null {
  try {
    compileLogPattern(template);
    return null;
  } catch (e) {
    return (e as Error).message;
  }
}

/** Compiles a template into a linear matcher; throws an Error that says what is wrong and how to write it. */
export function compileLogPattern(template: string): LogPattern {
  const fields = Object.keys(LOG_FIELDS).map(f => `{${f}}`);
  const how = `write the log line with placeholders ${fields.join(', ')} and ${SKIP} (e.g. "step {step} | loss {loss} | {ms}ms")`;
  if (template.length === 0 || template.length > MAX_TEMPLATE || /[\r\n]/.test(template))
    throw new Error(`log_pattern must be one line of 1 to ${MAX_TEMPLATE} characters; ${how}`);
  const seen = new Set<string>();
  const segments = template.split(SKIP).map(segment => {
    const parts = segment.split(/(\{[^{}]*\})/);
    let source = '';
    let group = 0;
    const names: Array<LogField | null> = [];
    let previousField = false;
    for (const part of parts) {
      if (part === '') continue;
      const field = /^\{([^{}]*)\}$/.exec(part)?.[1];
      if (field !== undefined) {
        if (!Object.hasOwn(LOG_FIELDS, field))
          throw new Error(`log_pattern has an unknown placeholder {${field}}; ${how}`);
        if (seen.has(field)) throw new Error(`log_pattern uses {${field}} twice; use each placeholder at most once`);
        if (previousField)
          throw new Error(`log_pattern puts two placeholders side by side; separate them by the text between them`);
        seen.add(field);
        previousField = true;
        // (?=(N))\k: the lookahead takes the longest number, the backreference consumes it; nothing backtracks into it.
        group++;
        source += `(?=(${NUMBER}))(?:\\${group})`;
        names.push(field as LogField);
        continue;
      }
      previousField = false;
      for (const piece of part.split(/(\s+)/)) {
        if (piece === '') continue;
        if (/^\s+$/.test(piece)) {
          group++;
          source += `(?=([ \\t]*))(?:\\${group})`;
          names.push(null);
        } else source += escape(piece);
      }
    }
    return { re: new RegExp(source, 'gi'), names, empty: source === '' };
  });
  if (!seen.has('loss')) throw new Error(`log_pattern needs a {loss} placeholder; ${how}`);
  const usable = segments.filter(s => !s.empty);
  return {
    template,
    read(line: string): LineFacts | null {
      const text = line.length > MAX_LINE ? line.slice(0, MAX_LINE) : line;
      const facts: LineFacts = {};
      let at = 0;
      for (const { re, names } of usable) {
        re.lastIndex = at;
        const m = re.exec(text);
        if (!m) return null;
        names.forEach((name, i) => {
          if (name !== null) facts[name] = Number(m[i + 1]);
        });
        at = re.lastIndex;
      }
      return Object.values(facts).every(Number.isFinite) && facts.loss !== undefined ? facts : null;
    },
  };
}

// The defaults: fixed expressions, each number anchored at a number's start so a digit flood is read once.
const STEP = /(?<![A-Za-z_])(?:step|iter|iteration)[ \t]*(?:[:=#][ \t]*)?(\d+)/i;
/** A training loss: not `val_loss`, `val loss` or `eval loss`. */
const LOSS =
  /(?<![A-Za-z_])(?<!val_)(?<!val )(?:train_|train )?loss[ \t]*(?:[:=][ \t]*)?(?<![\d.])([-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)/i;
const MS = /(?<![\d.A-Za-z_])(\d+(?:\.\d+)?)[ \t]*ms(?![A-Za-z])/i;
const ELAPSED = /(?<![A-Za-z_])elapsed[ \t]*(?:[:=][ \t]*)?(?<![\d.])(\d+(?:\.\d+)?)[ \t]*s(?![A-Za-z])/i;

/** The default reader: `step 120 | loss 3.21 | 41.2 ms`, `step:120 loss=3.21 dt=41ms`, `step 00120 (12%) | loss: 3.2 | dt: 41ms`, `… elapsed 5.0s`. */
export const DEFAULT_LOG_PATTERN: LogPattern = {
  template: 'step … loss … ms / elapsed …s (the defaults)',
  read(line: string): LineFacts | null {
    const text = line.length > MAX_LINE ? line.slice(0, MAX_LINE) : line;
    const loss = LOSS.exec(text);
    if (!loss) return null;
    const facts: LineFacts = { loss: Number(loss[1]) };
    const step = STEP.exec(text);
    if (step) facts.step = Number(step[1]);
    const ms = MS.exec(text);
    if (ms) facts.ms = Number(ms[1]);
    const elapsed = ELAPSED.exec(text);
    if (elapsed) facts.elapsed = Number(elapsed[1]);
    return Number.isFinite(facts.loss) ? facts : null;
  },
};
