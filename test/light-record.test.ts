// @vitest-environment jsdom
/**
 * The light form of an experiment the event stream's replay sends the panel: the chart, its best
 * line and the filter read the same from it as from the whole record, and the server lightens
 * with the same field list (engine/layout.json, written by the build).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { progressChart } from '../src/core/views/chart';
import { chartRows, chartRuns } from '../src/core/views/chart-rows';
import type { ExperimentRecord, JournalRecord } from '../src/core/journal/journal';
import { isLight, LIGHT_EXPERIMENT_FIELDS, LIGHT_META_FIELDS, lightExperiment } from '../src/core/journal/light-record';
import { bestTimeline } from '../src/core/rule/measurements';
import { ExperimentFilter } from '../src/lab/panel/list/experiment-filter';
import { noisyJournal } from './helpers/noisy-journal';
import { record } from './helpers/records';

// jsdom has no DragEvent, which @lumino/dragdrop (under the filter bar's widgets) touches on import.
vi.hoisted(() => {
  const g = globalThis as unknown as { DragEvent?: unknown; MouseEvent: typeof MouseEvent };
  g.DragEvent ??= class DragEvent extends g.MouseEvent {};
});

const light = (records: readonly JournalRecord[]) =>
  records.map(r => (r.type === 'experiment' ? lightExperiment(r) : r));

/** A run of every status, with long diffs and summaries that a light record leaves out. */
function mixed(): ExperimentRecord[] {
  const statuses = ['keep', 'discard', 'keep', 'crash', 'rejected', 'interrupted', 'discard', 'keep'] as const;
  return statuses.map((status, n) =>
    record(n, {
      status,
      metric: status === 'crash' || status === 'rejected' || status === 'interrupted' ? null : 1 - n * 0.01,
      description: `change ${n}`,
      rationale: `because of lesson ${n}`,
      diff: `--- a/train.py\n+++ b/train.py\n@@ -1 +1 @@\n-X = ${n}\n+X = ${n + 1}\n`,
    }),
  );
}

describe('light experiment records', () => {
  it('keep only the listed fields, and say they are light', () => {
    const whole = mixed()[1];
    const l = lightExperiment(whole);
    expect(isLight(l)).toBe(true);
    expect(isLight(whole)).toBe(false);
    expect(Object.keys(l).sort()).toEqual(
      [...Object.keys(whole).filter(k => (LIGHT_EXPERIMENT_FIELDS as readonly string[]).includes(k)), 'light'].sort(),
    );
    expect(l).not.toHaveProperty('diff');
    expect(l).not.toHaveProperty('summary');
  });

  it('draw the same chart and best line as whole ones, noise-aware runs included', () => {
    for (const records of [mixed() as JournalRecord[], noisyJournal()]) {
      expect(chartRows(light(records))).toEqual(chartRows(records));
      expect(chartRuns(light(records))).toEqual(chartRuns(records));
      expect(bestTimeline(light(records))).toEqual(bestTimeline(records));
      const opts = { metric: 'val_bpb', direction: 'lower' as const };
      expect(progressChart(light(records), opts)).toEqual(progressChart(records, opts));
    }
  });

  it('pass the filter as whole ones do', () => {
    const filter = new ExperimentFilter();
    for (const [statuses, search] of [
      [[], 'lesson 3'],
      [['keep'], ''],
      [['crash', 'discard'], 'change'],
    ] as const) {
      filter.clear();
      statuses.forEach(s => filter.toggle(s));
      filter.setSearch(search);
      expect(filter.apply(light(mixed()) as ExperimentRecord[]).map(r => r.n)).toEqual(
        filter.apply(mixed()).map(r => r.n),
      );
    }
  });

  it('are the ones the server makes: the build writes the same field list into layout.json', () => {
    const layout = JSON.parse(
      fs.readFileSync(
        path.join(__dirname, '..', 'jupyter_server_ext', 'jupyterlab_autoresearch', 'engine', 'layout.json'),
        'utf8',
      ),
    );
    expect(layout.light_experiment_fields).toEqual([...LIGHT_EXPERIMENT_FIELDS]);
    expect(layout.light_meta_fields).toEqual([...LIGHT_META_FIELDS]);
  });
});
