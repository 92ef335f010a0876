// @vitest-environment jsdom
/**
 * The panel's research notes (src/lab/panel/notes-section.ts): the latest version from the
 * experiments as the event stream brings them, light replays included, as text only.
 */
import { nullTranslator } from '@jupyterlab/translation';
import { describe, expect, it, vi } from 'vitest';
import { lightExperiment } from '../../src/core/journal/light-record';
import { NotesSection } from '../../src/lab/panel/notes-section';
import { history, record } from '../helpers/records';

// jsdom has no DragEvent, which @lumino/dragdrop (under @lumino/widgets) touches on import.
vi.hoisted(() => {
  const g = globalThis as unknown as { DragEvent?: unknown; MouseEvent: typeof MouseEvent };
  g.DragEvent ??= class DragEvent extends g.MouseEvent {};
});

const trans = nullTranslator.load('jupyterlab_autoresearch');
const withNotes = (n: number, through: number, text: string) =>
  record(n, { proposal_meta: { model: 'm', reasoning: 'long thoughts', notes: { text, through } } });

describe('the research notes section', () => {
  it('is hidden until a record carries notes, then shows the latest, from light replays and live records', () => {
    const section = new NotesSection(trans);
    section.add(history(5).map(lightExperiment));
    expect(section.isHidden).toBe(true);
    // The replay: light records keep the meta's notes (not the reasoning).
    const replay = [withNotes(30, 29, 'first notes'), withNotes(56, 55, 'second notes'), record(57)].map(
      lightExperiment,
    );
    expect(replay[0].proposal_meta).toEqual({ notes: { text: 'first notes', through: 29 } });
    expect(replay[2]).not.toHaveProperty('proposal_meta');
    section.add(replay);
    expect(section.isHidden).toBe(false);
    expect(section.node.querySelector('summary')!.textContent).toBe(
      "The model's research notes, written by the proposal of #56 after #55 had finished",
    );
    expect(section.node.querySelector('.jp-AutoresearchNotes-text')!.textContent).toBe('second notes');
    // Live: a later version replaces them; notes written after fewer experiments (another worker's) do not.
    section.add([withNotes(83, 81, 'third notes')]);
    section.add([withNotes(84, 70, 'stale notes')]);
    expect(section.notes).toMatchObject({ n: 83, through: 81, text: 'third notes' });
    expect(section.node.dataset.through).toBe('81');
    section.clear();
    expect(section.isHidden).toBe(true);
    expect(section.notes).toBeNull();
  });

  it('shows planted markup as text', () => {
    const section = new NotesSection(trans);
    const planted = '## Findings\n<img src=x onerror="window.hit=1"><a href="javascript:alert(1)">x</a>';
    section.add([withNotes(26, 25, planted)]);
    const text = section.node.querySelector('.jp-AutoresearchNotes-text')!;
    expect(text.textContent).toBe(planted);
    expect(section.node.querySelectorAll('img, a, script')).toHaveLength(0);
    // Notes that are not the journal's form (too long) are not shown.
    section.clear();
    section.add([withNotes(27, 26, 'x'.repeat(9000))]);
    expect(section.isHidden).toBe(true);
  });
});
