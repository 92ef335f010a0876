// bench/run-state: what rewriting state.json costs the engine after every journal append on a long
// run. deriveRunState (src/core/journal/run-state.ts) reads every record again each time, so its
// cost must grow with the run no faster than reading the journal does.
// Figures, each against a baseline measured in the same run:
// - derive_vs_parse at 1,000 experiments: one deriveRunState over the records / one JSON.parse of
//   the journal's lines (the reading it interprets). Target ≤ 1.0.
// - scaling_ratio: per-experiment cost at 4,000 / per-experiment cost at 1,000. Target ≤ 1.5 (linear;
//   a quadratic step would read ~4). Small runs are left out: below ~1,000 experiments the JIT's
//   warm-up, not the work, sets the time.
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { coreModule } from '../scripts/core-module.mjs';
import { makeWorkspace } from './panel-journal.mjs';

const { deriveRunState } = await coreModule('src/core/journal/run-state.ts');

/** The journal of a synthetic run of `count` experiments, as text and as records. */
function journalOf(count) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `ar-bench-state-${count}-`));
  makeWorkspace(dir, count);
  const file = path.join(dir, '.autoresearch', 'bench', 'journal.jsonl');
  const text = fs.readFileSync(file, 'utf8');
  fs.rmSync(dir, { recursive: true, force: true });
  return {
    text,
    records: text
      .trim()
      .split('\n')
      .map(line => JSON.parse(line)),
  };
}

/** The median time of `fn` in ms over `rounds` rounds, after a warm-up. */
function median(fn, rounds = 30) {
  for (let i = 0; i < 5; i++) fn();
  const times = [];
  for (let i = 0; i < rounds; i++) {
    const t = performance.now();
    fn();
    times.push(performance.now() - t);
  }
  times.sort((a, b) => a - b);
  return times[Math.floor(times.length / 2)];
}

const larger = journalOf(4000);
const large = journalOf(1000);
const derive = j => median(() => deriveRunState(j.records, j.text.length, 'bench'));
const parse = j =>
  median(() =>
    j.text
      .trim()
      .split('\n')
      .map(line => JSON.parse(line)),
  );
const deriveLarge = derive(large);
const parseLarge = parse(large);
const deriveLarger = derive(larger);
const figures = {
  derive_ms_1000: Number(deriveLarge.toFixed(2)),
  parse_ms_1000: Number(parseLarge.toFixed(2)),
  derive_vs_parse: Number((deriveLarge / parseLarge).toFixed(3)),
  derive_ms_4000: Number(deriveLarger.toFixed(2)),
  scaling_ratio: Number((deriveLarger / 4000 / (deriveLarge / 1000)).toFixed(3)),
};
for (const [k, v] of Object.entries(figures)) console.log(`${k}: ${v}`);
const ok = figures.derive_vs_parse <= 1.0 && figures.scaling_ratio <= 1.5;
console.log(ok ? 'run-state: targets met' : 'run-state: TARGET MISSED');
process.exitCode = ok ? 0 : 1;
