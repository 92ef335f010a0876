import { describe, expect, it } from 'vitest';
import { formatPythonNumber, parseConstants, rewriteConstant } from '../src/engine/proposers/offline/python-constants';

// Shaped like autoresearch's train.py, with the traps a line regex alone falls into.
const TRAIN_PY = `"""
Pretraining script.
FAKE_IN_DOCSTRING = 1
"""
import math
import torch

# Model
DEPTH = 8
ASPECT_RATIO = 64  # model_dim = depth * aspect_ratio
HEAD_DIM=128
WINDOW_PATTERN = "SSSL"
TOTAL_BATCH_SIZE = 2**19
ADAM_BETAS = (0.8, 0.95)
MATRIX_LR = 0.04
UNEMBEDDING_LR = 4e-3   # note the spaces
WEIGHT_DECAY = .2
WARMUP_RATIO = 0.0
NEG_SCALE = -1.5
MAX_STEPS = 1_000
SENTINEL = -1
ANNOTATED: float = 0.5
lowercase_lr = 0.1
HEX_MASK = 0xFF
TWICE = 1
TWICE = 2
AUGMENTED = 3
AUGMENTED *= 2
COMPLEX = 1j
EQUALITY_LINE = 1 == 1
CHAINED = OTHER = 3
CONFIG = dict(
INSIDE_BRACKETS = 3
)
TEMPLATE = '''
INSIDE_STRING = 7
'''
QUOTES = "'''"
AFTER_QUOTES = 5
CONTINUED = 1 + \\
2

def build(depth):
    INDENTED = 3
    return depth

if torch.cuda.is_available():
    DEVICE_BATCH = 64
class Config:
    CLASS_ATTR = 1e-3
FINAL_LR_FRAC = 1.
`;

describe('parseConstants', () => {
  const constants = parseConstants(TRAIN_PY);
  const byName = Object.fromEntries(constants.map(c => [c.name, c]));

  it('finds exactly the module-level numeric literal constants, in file order', () => {
    expect(constants.map(c => c.name)).toEqual([
      'DEPTH',
      'ASPECT_RATIO',
      'HEAD_DIM',
      'MATRIX_LR',
      'UNEMBEDDING_LR',
      'WEIGHT_DECAY',
      'WARMUP_RATIO',
      'NEG_SCALE',
      'MAX_STEPS',
      'AFTER_QUOTES',
      'FINAL_LR_FRAC',
    ]);
  });

  it('reads values, int-ness and the literal as written', () => {
    expect(byName.DEPTH).toMatchObject({ value: 8, isInt: true, literal: '8', line: 9 });
    expect(byName.UNEMBEDDING_LR).toMatchObject({ value: 0.004, isInt: false, literal: '4e-3' });
    expect(byName.WEIGHT_DECAY).toMatchObject({ value: 0.2, isInt: false, literal: '.2' });
    expect(byName.WARMUP_RATIO).toMatchObject({ value: 0, isInt: false });
    expect(byName.NEG_SCALE).toMatchObject({ value: -1.5, isInt: false, literal: '-1.5' });
    expect(byName.MAX_STEPS).toMatchObject({ value: 1000, isInt: true, literal: '1_000' });
    expect(byName.FINAL_LR_FRAC).toMatchObject({ value: 1, isInt: false, literal: '1.' });
    for (const c of constants) {
      expect(TRAIN_PY.slice(c.start, c.end)).toBe(c.literal);
    }
  });

  it('handles CRLF line endings and a byte-order mark', () => {
    const src = '\uFEFFLR = 3e-4\r\nDEPTH = 4  # layers\r\n';
    const found = parseConstants(src);
    expect(found.map(c => [c.name, c.value])).toEqual([
      ['LR', 3e-4],
      ['DEPTH', 4],
    ]);
    expect(src.slice(found[1].start, found[1].end)).toBe('4');
  });
});

describe('rewriteConstant', () => {
  it('changes only the literal, keeping the comment, spacing and every other byte', () => {
    const src = TRAIN_PY.replace(/\n/g, '\r\n');
    const lr = parseConstants(src).find(c => c.name === 'UNEMBEDDING_LR')!;
    const out = rewriteConstant(src, lr, '8e-3');
    expect(out).toContain('UNEMBEDDING_LR = 8e-3   # note the spaces\r\n');
    expect(out.length).toBe(src.length);
    expect(out.slice(0, lr.start)).toBe(src.slice(0, lr.start));
    expect(out.slice(lr.end)).toBe(src.slice(lr.end));
    // The rewritten file parses to the same constants, one value changed.
    const again = parseConstants(out);
    expect(again.map(c => c.name)).toEqual(parseConstants(src).map(c => c.name));
    expect(again.find(c => c.name === 'UNEMBEDDING_LR')!.value).toBe(0.008);
  });

  it('refuses a stale position rather than corrupting the file', () => {
    const c = parseConstants('A = 1\nB = 2\n')[1];
    expect(() => rewriteConstant('A = 10\nB = 2\n', c, '3')).toThrow(/B is no longer at line 2/);
  });
});

describe('formatPythonNumber', () => {
  it('writes compact literals that stay ints or floats', () => {
    expect(formatPythonNumber(0.002, false)).toBe('0.002');
    expect(formatPythonNumber(0.0006, false)).toBe('6e-4');
    expect(formatPythonNumber(0.002, false, '1e-3')).toBe('2e-3');
    expect(formatPythonNumber(2, false)).toBe('2.0');
    expect(formatPythonNumber(100, false)).toBe('100.0');
    expect(formatPythonNumber(2e6, false)).toBe('2e6');
    expect(formatPythonNumber(0.975, false)).toBe('0.975');
    expect(formatPythonNumber(-0.5, false)).toBe('-0.5');
    expect(formatPythonNumber(1e-10, false)).toBe('1e-10');
    expect(formatPythonNumber(1.5e21, false)).toBe('1.5e21');
    expect(formatPythonNumber(16, true)).toBe('16');
    expect(formatPythonNumber(2000000, true, '1_000_000')).toBe('2_000_000');
  });

  it('round-trips: the literal parses back to the same value', () => {
    let x = 1.2345e-7;
    for (let i = 0; i < 200; i++) {
      x *= 1.37;
      const literal = formatPythonNumber(x, false);
      expect(literal).toMatch(/[.e]/);
      expect(Number(literal)).toBe(x);
      expect(parseConstants(`X = ${literal}\n`)[0].value).toBe(x);
    }
  });
});
