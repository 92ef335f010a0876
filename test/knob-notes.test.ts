/** The grammar of a reviewer's note that names a knob (src/core/step-mode/knob-notes.ts, docs/step-mode-notes.md). */
import { describe, expect, it } from 'vitest';
import type { JournalRecord } from '../src/core/journal/journal';
import { knobRules, knobRuleWords, knobsNamedIn, reviewNotesOf } from '../src/core/step-mode/knob-notes';

const KNOBS = ['HEAD_DIM', 'N_HEAD_DIM', 'LEARNING_RATE', 'MATRIX_LR', 'WARMUP_RATIO', 'DEPTH', 'N_LAYER'];

describe('knobsNamedIn', () => {
  it.each([
    ['leave HEAD_DIM alone', ['HEAD_DIM']],
    ["don't touch head_dim", ['HEAD_DIM']],
    ['Don’t touch the head dim, it is tuned', ['HEAD_DIM']],
    ['do not change Head-Dim', ['HEAD_DIM']],
    ['stop changing the learning rate', ['LEARNING_RATE']],
    ['please never tune MATRIX_LR again', ['MATRIX_LR']],
    ['freeze depth', ['DEPTH']],
    ['keep HEAD_DIM fixed and try the LR', ['HEAD_DIM']],
    ['keep HEAD_DIM at 64', ['HEAD_DIM']],
    ['keep n_layer', ['N_LAYER']],
    ['leave HEAD_DIM and warmup_ratio alone', ['HEAD_DIM', 'WARMUP_RATIO']],
    ["don't touch HEAD_DIM, WARMUP_RATIO or the depth", ['HEAD_DIM', 'WARMUP_RATIO', 'DEPTH']],
    ['hands off N_HEAD_DIM', ['N_HEAD_DIM']],
    ['no more changes to depth', ['DEPTH']],
    ['HEAD_DIM is off limits', ['HEAD_DIM']],
    ['HEAD_DIM should stay fixed', ['HEAD_DIM']],
    ['too timid. Leave DEPTH alone; try MATRIX_LR', ['DEPTH']],
  ])('%j freezes %j', (note, knobs) => {
    expect(knobsNamedIn(note, KNOBS)).toEqual(knobs);
  });

  it.each([
    'HEAD_DIM looks good, keep going',
    'try a larger HEAD_DIM',
    'keep increasing HEAD_DIM',
    'keep HEAD_DIM growing',
    "don't leave HEAD_DIM alone, go bigger",
    'no need to keep HEAD_DIM fixed',
    "don't change anything but HEAD_DIM",
    'stop changing the warmup', // names no constant: WARMUP_RATIO is not "the warmup"
    'leave the learning rate schedule alone', // the knobs must end the phrase: this is the schedule
    'too timid',
    '',
  ])('%j freezes nothing', note => {
    expect(knobsNamedIn(note, KNOBS)).toEqual([]);
  });

  it('a knob inside a longer name is not that knob', () => {
    expect(knobsNamedIn('leave N_HEAD_DIM alone', KNOBS)).toEqual(['N_HEAD_DIM']);
    expect(knobsNamedIn('leave HEAD_DIMS alone', KNOBS)).toEqual([]);
  });

  it('only names the proposer knows count', () => {
    expect(knobsNamedIn('leave HEAD_DIM alone', ['DEPTH'])).toEqual([]);
    expect(knobsNamedIn('leave HEAD_DIM alone', [])).toEqual([]);
  });
});

describe('knobRules', () => {
  const decision = (n: number, note?: string): JournalRecord => ({
    type: 'review',
    ts: new Date(0).toISOString(),
    n,
    event: 'decision',
    action: 'reject',
    source: 'panel',
    waited_s: 1,
    ...(note !== undefined ? { note } : {}),
  });

  it('reads the journal: each knob from the first note that froze it', () => {
    const records = [
      decision(2),
      decision(3, 'too timid'),
      { ...decision(4, 'leave HEAD_DIM alone'), event: 'pending' } as JournalRecord,
      decision(7, 'leave HEAD_DIM alone'),
      decision(9, "don't touch head_dim or depth"),
    ];
    const notes = reviewNotesOf(records);
    expect(notes.map(n => n.n)).toEqual([3, 7, 9]);
    const rules = knobRules(notes, KNOBS);
    expect(rules).toEqual([
      { name: 'HEAD_DIM', n: 7, note: 'leave HEAD_DIM alone' },
      { name: 'DEPTH', n: 9, note: "don't touch head_dim or depth" },
    ]);
    expect(knobRuleWords(rules[0])).toBe('Leaving HEAD_DIM alone (from your note on #7)');
  });
});
