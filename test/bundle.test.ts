/** The experiment MIME bundle: its JSON, and HTML and plain-text fallbacks that survive GitHub's sanitiser. */
import { describe, expect, it } from 'vitest';
import { EXPERIMENT_MIME, escapeHtml, experimentBundle, tailLines } from '../src/core/views/bundle';
import { noisyExperiments } from './helpers/noisy-journal';
import { record } from './helpers/records';
import { expectStaticHtml } from './helpers/static-html';

describe('experimentBundle', () => {
  it('a kept experiment: header with number, status, metric and delta vs the best before; the diff open', () => {
    const r = record(3, {
      status: 'keep',
      metric: 0.99,
      best_before: 1,
      delta: -0.01,
      description: 'lower the LR',
      rationale: 'loss was noisy',
      cost_usd: 0.0123,
    });
    const b = experimentBundle(r, { metric: 'val_bpb', direction: 'lower' });
    const html = b['text/html'];
    expect(html).toContain(
      '<b>#3</b> <code>keep</code> <b>val_bpb 0.990000</b> (-0.010000 vs best 1.000000) — lower the LR',
    );
    expect(html).toContain('<p><i>Why:</i> loss was noisy</p>');
    expect(html).toContain('<details open><summary>diff (+1 −1)</summary>');
    expect(html).toContain('-LEARNING_RATE = 0.001\n+LEARNING_RATE = 0.0040');
    expect(html).toMatch(/<td>\+1 −1<\/td><td>2\.0 GB<\/td><td>5\.0 min<\/td><td>\$0\.0123<\/td><td>bbbbbbb<\/td>/);
    expectStaticHtml(html);
    const text = b['text/plain'];
    expect(text.split('\n')[0]).toBe('#3 keep  val_bpb 0.990000  (-0.010000 vs best 1.000000)  lower the LR');
    expect(text).toContain('why: loss was noisy');
    expect(text).toContain('+LEARNING_RATE = 0.0040');
  });

  it('an experiment that ran as Slurm jobs shows its queue time beside its run time; others show none', () => {
    const queued = experimentBundle(record(6, { timings: { propose_s: 1, run_s: 300, total_s: 423, queue_s: 122 } }));
    const html = queued['text/html'];
    expect(html).toContain('<th>run time</th><th>queue time (Slurm)</th><th>cost</th>');
    expect(html).toMatch(/<td>5\.0 min<\/td><td>2\.0 min<\/td><td>—<\/td>/);
    expectStaticHtml(html);
    expect(queued['text/plain']).toContain('run time 5.0 min · queue time (Slurm) 2.0 min · cost —');
    // A job that started at once waited 0 s: still said, since it ran through Slurm.
    const atOnce = experimentBundle(record(7, { timings: { propose_s: 1, run_s: 30, total_s: 31, queue_s: 0.4 } }));
    expect(atOnce['text/plain']).toContain('queue time (Slurm) 0.4 s');
    for (const plain of [experimentBundle(record(6)), experimentBundle(record(0))]) {
      expect(plain['text/html']).not.toContain('queue time');
      expect(plain['text/plain']).not.toContain('queue time');
    }
  });

  it('other experiments keep their diff collapsed; the baseline has no comparison and no diff', () => {
    expect(experimentBundle(record(4))['text/html']).toContain('<details><summary>diff');
    const base = experimentBundle(record(0, { diff: '', lines_added: 0, lines_removed: 0, description: 'baseline' }));
    expect(base['text/html']).toContain('<b>val_bpb 1.000000</b> — baseline</p>');
    expect(base['text/html']).not.toContain('<details');
  });

  it('the JSON carries the record without proposer internals, plus metric, direction and log tail', () => {
    const r = record(2, { proposal_meta: { kind: 'offline', secret: 1 } });
    const data = experimentBundle(r, { metric: 'acc', direction: 'higher' })[EXPERIMENT_MIME];
    expect(data).not.toHaveProperty('proposal_meta');
    expect(data).not.toHaveProperty('type');
    expect(data).toMatchObject({
      n: 2,
      status: 'discard',
      diff: r.diff,
      metric_name: 'acc',
      direction: 'higher',
      log_tail: null,
    });
  });

  it('a crash shows its reason and the last 30 lines of its log, escaped', () => {
    const log = Array.from({ length: 50 }, (_, i) => `line ${i}`).join('\n') + '\nRuntimeError: <bad> & "worse"\n';
    const b = experimentBundle(record(5, { status: 'crash' }), { log });
    const html = b['text/html'];
    expect(html).toContain('<p><i>Reason:</i> exited with code 1: RuntimeError: boom</p>');
    expect(html).toContain('<details open><summary>log tail</summary>');
    expect(html).toContain('RuntimeError: &lt;bad&gt; &amp; &quot;worse&quot;');
    expect(html).toContain('line 49');
    expect(html).toContain('line 21');
    expect(html).not.toContain('line 20\n');
    expect(b[EXPERIMENT_MIME].log_tail?.split('\n')).toHaveLength(30);
    expect(b['text/plain']).toContain('log tail:\nline 21');
    expectStaticHtml(html);
  });

  it('a log is ignored unless the experiment crashed', () => {
    const b = experimentBundle(record(6), { log: 'step 1 | loss 3.2' });
    expect(b['text/html']).not.toContain('log tail');
    expect(b[EXPERIMENT_MIME].log_tail).toBeNull();
  });

  it('escapes everything a proposal writes', () => {
    const evil = '<script>alert(1)</script><img src=x onerror="alert(2)"><style>p{}</style>';
    const r = record(7, {
      description: evil,
      rationale: evil,
      diff: `+${evil}\n`,
      reason: evil,
      status: 'rejected',
      metric: null,
    });
    const html = experimentBundle(r)['text/html'];
    expectStaticHtml(html);
    expect(html).toContain('&lt;script&gt;alert(1)&lt;/script&gt;');
    expect(experimentBundle(r)['text/plain']).toContain(evil);
  });

  it('helpers: escapeHtml and tailLines', () => {
    expect(escapeHtml(`<a href="x">'&'</a>`)).toBe('&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;');
    expect(tailLines('a\nb\nc\n', 2)).toBe('b\nc');
    expect(tailLines('a\r\nb', 5)).toBe('a\nb');
  });
});

describe('experimentBundle under the noise-aware rule', () => {
  const [baseline, discard, keep, withinNoise, crash, reused] = noisyExperiments();

  it('a confirmed keep: mean ± se over its runs, each run with its seed, the floor and σ it beat', () => {
    const b = experimentBundle(keep, { metric: 'val_bpb', direction: 'lower' });
    const html = b['text/html'];
    expectStaticHtml(html);
    expect(html).toContain('<b>val_bpb 0.982000</b> ± 0.0028 (2 runs) (-0.018000 vs best 1.000000)');
    expect(html).toContain('<p><i>Reason:</i> beats the noise (−0.0180; floor 0.0073 at 2σ, 2 runs)</p>');
    expect(html).toContain(
      '<p><i>Noise:</i> σ 0.0040 per run; a gain counts beyond 0.0073 (2σ of the difference, best over 3 runs); runs spent: 1 measure, 1 confirm</p>',
    );
    expect(html).toContain('<details open><summary>2 runs: mean 0.982000 ± 0.0028, confirmed</summary>');
    expect(html).toContain('<tr><td>1</td><td>2001</td><td>0.980000</td><td>60.0 s</td></tr>');
    expect(html).toContain('<tr><td>2</td><td>2002</td><td>0.984000</td><td>60.0 s</td></tr>');
    const text = b['text/plain'];
    expect(text.split('\n')[0]).toBe(
      `#2 keep  val_bpb 0.982000 ± 0.0028 (2 runs)  (-0.018000 vs best 1.000000)  ${keep.description}`,
    );
    expect(text).toContain('noise: σ 0.0040 per run; a gain counts beyond 0.0073');
    expect(text).toContain(
      '\n2 runs: mean 0.982000 ± 0.0028, confirmed — k1 0.980000 (seed 2001) · k2 0.984000 (seed 2002)',
    );
    expect(b[EXPERIMENT_MIME]).toMatchObject({ runs: keep.runs, verdict: keep.verdict });
  });

  it('a discard within noise says so, and is not called confirmed', () => {
    const b = experimentBundle(withinNoise);
    expect(b['text/html']).toContain('within noise (−0.0013; floor 0.0065 at 2σ)');
    expect(b['text/html']).toContain('<summary>3 runs: mean 0.981000 ± 0.0023</summary>');
    expect(b['text/html']).toContain('runs spent: 1 measure, 2 confirm, 1 best');
    expect(b['text/plain']).not.toContain('confirmed');
    // Discarded at once on one run: its se is σ itself.
    expect(experimentBundle(discard)['text/plain'].split('\n')[0]).toContain(
      'val_bpb 1.010000 ± 0.0040 (1 run)  (+0.010000 vs best 1.000000)',
    );
    expect(experimentBundle(baseline)['text/html']).toContain('<b>val_bpb 1.000000</b> ± 0.0023 (3 runs) — ');
  });

  it('a reused result names the experiment it reports; its runs are marked as earlier ones', () => {
    const b = experimentBundle(reused);
    expectStaticHtml(b['text/html']);
    expect(b['text/html']).toContain(
      '<p><i>Reused:</i> same code as #2: its result is reported, nothing ran again</p>',
    );
    expect(b['text/html']).toContain('<tr><td>1 (earlier)</td><td>2001</td>');
    expect(b['text/plain']).toContain('reused: same code as #2');
    expect(b['text/plain']).toContain('k2 0.984000 (seed 2002, an earlier run of the same code)');
  });

  it('a crashed run is listed as crashed; a strict verdict says any improvement counts', () => {
    expect(experimentBundle(crash)['text/html']).toContain('<td>crashed</td>');
    const strict = {
      ...keep,
      verdict: { ...keep.verdict!, strict: true, sigma: 0, se: null, floor: null, confirmed: false },
    };
    const text = experimentBundle(strict)['text/plain'];
    expect(text).toContain('noise: strict rule (σ 0: a deterministic metric): any improvement counts');
    expect(text.split('\n')[0]).toContain('val_bpb 0.982000 (2 runs)');
    expect(text).toContain('not confirmed');
  });

  it('a record from before repeats renders exactly as it did', () => {
    const old = experimentBundle(record(3, { status: 'keep', metric: 0.99, best_before: 1, delta: -0.01 }));
    expect(old['text/html']).not.toMatch(/Noise:|Reused:|runs:|±/);
    expect(old['text/plain']).not.toMatch(/noise:|reused:|runs:|±/);
  });
});
