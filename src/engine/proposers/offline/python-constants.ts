/**
 * Finds the module-level UPPER_CASE numeric constants of a Python file
 * (`LEARNING_RATE = 3e-4  # comment`) and rewrites exactly one literal,
 * leaving every other byte of the file as it was. A small line lexer, not a
 * Python parser: it tracks strings, brackets and backslash continuations only
 * so that it knows which lines begin a statement at module level.
 */

/** One `NAME = <number>` line at module level. */
export interface PyConstant {
  name: string;
  /** The value Python gives the literal. */
  value: number;
  /** True for an int literal (no `.`, no exponent); it must stay an int. */
  isInt: boolean;
  /** The literal exactly as written, sign included (`-1e-3`, `1_000`). */
  literal: string;
  /** Offsets of the literal in the source: source.slice(start, end) === literal. */
  start: number;
  end: number;
  /** 1-based line number, for messages. */
  line: number;
}

// Python's own numeric-literal grammar (decimal only; hex, octal, binary and
// complex literals are left alone).
const DIGITS = String.raw`\d(?:_?\d)*`;
const POINT = String.raw`(?:${DIGITS})?\.${DIGITS}|${DIGITS}\.`;
const FLOAT = String.raw`(?:${POINT}|${DIGITS})[eE][+-]?${DIGITS}|${POINT}`;
const INT = String.raw`0(?:_?0)*|[1-9](?:_?\d)*`;
// The whole line must be name, `=`, one literal and at most a comment, so
// annotated (`LR: float = 1`), computed (`2**19`) and chained assignments fail.
const CONSTANT_LINE = new RegExp(String.raw`^([A-Z][A-Z0-9_]*)([ \t]*=[ \t]*)(-?(?:${FLOAT}|${INT}))[ \t]*(?:#.*)?$`);
// Any module-level binding of a name: plain, annotated or augmented assignment.
const ANY_ASSIGNMENT = /^([A-Za-z_][A-Za-z0-9_]*)[ \t]*(?::[^=]*)?(?:\*\*|\/\/|>>|<<|[-+*/%&|^@])?=(?!=)/;

interface StatementLine {
  text: string;
  offset: number;
  line: number;
}

/** Lines that begin a statement at module level: column 0, outside strings, brackets and continuations. */
function moduleStatementLines(source: string): StatementLine[] {
  const out: StatementLine[] = [];
  let quote: string | null = null;
  let depth = 0;
  let continued = false;
  let offset = 0;
  const lines = source.split('\n');
  lines.forEach((raw, index) => {
    const text = raw.endsWith('\r') ? raw.slice(0, -1) : raw;
    // A byte-order mark is not part of the first statement.
    const bom = index === 0 && text.startsWith('\uFEFF') ? 1 : 0;
    if (quote === null && depth === 0 && !continued) {
      out.push({ text: text.slice(bom), offset: offset + bom, line: index + 1 });
    }
    continued = false;
    for (let j = bom; j < text.length; j++) {
      const ch = text[j];
      if (quote !== null) {
        if (ch === '\\') {
          j++; // an escaped character (or newline) never closes the string
        } else if (text.startsWith(quote, j)) {
          j += quote.length - 1;
          quote = null;
        }
        continue;
      }
      if (ch === '#') {
        break;
      } else if (ch === '"' || ch === "'") {
        quote = text.startsWith(ch.repeat(3), j) ? ch.repeat(3) : ch;
        j += quote.length - 1;
      } else if ('([{'.includes(ch)) {
        depth++;
      } else if (')]}'.includes(ch)) {
        depth = Math.max(0, depth - 1);
      } else if (ch === '\\' && j === text.length - 1) {
        continued = true;
      }
    }
    // A one-quote string ends with its line unless the line ends in a backslash;
    // recovering here keeps a syntax error from hiding the rest of the file.
    if (quote !== null && quote.length === 1 && !text.endsWith('\\')) {
      quote = null;
    }
    offset += raw.length + 1;
  });
  return out;
}

/**
 * The module-level UPPER_CASE numeric constants of a Python source, in file order.
 * A name bound more than once at module level (`LR = 1e-3` then `LR = 2e-3`, or
 * `LR *= 2`) is skipped: editing one of its assignments may change nothing or
 * something unexpected. Negative ints are skipped too: they are usually sentinels
 * (`MAX_STEPS = -1`), not quantities.
 */
export function parseConstants(source: string): PyConstant[] {
  const lines = moduleStatementLines(source);
  const bindings = new Map<string, number>();
  for (const { text } of lines) {
    const m = ANY_ASSIGNMENT.exec(text);
    if (m) {
      bindings.set(m[1], (bindings.get(m[1]) ?? 0) + 1);
    }
  }
  const out: PyConstant[] = [];
  for (const { text, offset, line } of lines) {
    const m = CONSTANT_LINE.exec(text);
    if (!m || bindings.get(m[1]) !== 1) {
      continue;
    }
    const literal = m[3];
    const isInt = !/[.eE]/.test(literal);
    const value = Number(literal.replace(/_/g, ''));
    const usable = isInt ? Number.isSafeInteger(value) && value >= 0 : Number.isFinite(value);
    if (!usable) {
      continue;
    }
    const start = offset + m[1].length + m[2].length;
    out.push({ name: m[1], value, isInt, literal, start, end: start + literal.length, line });
  }
  return out;
}

/** The source with one constant's literal replaced; every other byte is kept. */
export function rewriteConstant(source: string, constant: PyConstant, literal: string): string {
  if (source.slice(constant.start, constant.end) !== constant.literal) {
    throw new Error(`${constant.name} is no longer at line ${constant.line}; parse the file again`);
  }
  return source.slice(0, constant.start) + literal + source.slice(constant.end);
}

/**
 * A short Python literal for a number: ints as ints (grouped with `_` when the
 * original was), floats as decimals unless scientific form is clearly shorter,
 * always with a `.` or an exponent so they stay floats. JavaScript and Python both
 * print and parse floats with correct rounding, so Python reads back the same value.
 */
export function formatPythonNumber(value: number, isInt: boolean, original = ''): string {
  if (isInt) {
    const digits = String(Math.round(value));
    return original.includes('_') ? digits.replace(/\B(?=(\d{3})+(?!\d))/g, '_') : digits;
  }
  const exponent = value.toExponential().replace('e+', 'e');
  let plain = String(value);
  if (plain.includes('e')) {
    return exponent; // JavaScript only switches to exponents where decimals get long
  }
  if (!plain.includes('.')) {
    plain += '.0';
  }
  // Decimals read more easily, so an exponent must save two characters (0.002
  // but 6e-4), or merely not cost any where the original was written that way.
  const saving = /[eE]/.test(original) ? 0 : 2;
  const magnitude = Math.abs(value);
  const exponentFits = magnitude < 1 || magnitude >= 1e6 || saving === 0;
  return exponentFits && plain.length - exponent.length >= saving ? exponent : plain;
}
