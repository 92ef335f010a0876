/** `autoresearch export` on a real run: a valid nbformat notebook that reads well without the extension. */
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { EXPERIMENT_MIME } from '../src/core/views/bundle';
import { VEGALITE_MIME } from '../src/core/views/chart';
import { programMarkdown } from '../src/core/views/notebook';
import {
  cli,
  crashingThirdRun,
  experiments,
  makeWorkspace,
  ROOT,
  STAND_IN_PROGRAM as PROGRAM,
} from './helpers/workspace';
import { expectStaticHtml } from './helpers/static-html';

/** A Python with nbformat: the project's venv (jupyter brings it), else the system's. */
function python(): string {
  const venv = path.join(ROOT, '.venv', 'bin', 'python');
  return fs.existsSync(venv) ? venv : 'python3';
}

type Cell = {
  cell_type: string;
  id: string;
  source: string[];
  outputs?: Array<{ output_type: string; data: Record<string, unknown> }>;
};
const text = (v: unknown): string => (Array.isArray(v) ? v.join('') : String(v));

describe('autoresearch export', () => {
  let dir: string;
  let nb: { nbformat: number; metadata: Record<string, unknown>; cells: Cell[] };

  beforeAll(async () => {
    const counter = fs.mkdtempSync(path.join(os.tmpdir(), 'ar-count-'));
    dir = makeWorkspace({ program: PROGRAM, train: crashingThirdRun(counter) });
    const run = await cli([
      'run',
      dir,
      '--tag',
      't1',
      '--max-experiments',
      '3',
      '--proposer',
      'offline',
      '--noise-runs',
      '1',
    ]); // the third run (experiment 2) crashes
    expect(run.code, run.stderr).toBe(0);
    const r = await cli(['export', dir]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toBe(`wrote ${path.join(dir, 't1.ipynb')} (run t1, 4 experiments)\n`);
    nb = JSON.parse(fs.readFileSync(path.join(dir, 't1.ipynb'), 'utf8'));
  });

  it('writes <tag>.ipynb atomically: no temp file is left beside it', () => {
    expect(fs.readdirSync(dir).filter(f => f.includes('ipynb'))).toEqual(['t1.ipynb']);
  });

  it('passes nbformat.validate', () => {
    const out = execFileSync(
      python(),
      [
        '-c',
        'import sys, nbformat; nb = nbformat.read(sys.argv[1], as_version=4); nbformat.validate(nb); print("valid", nb.nbformat, nb.nbformat_minor)',
        path.join(dir, 't1.ipynb'),
      ],
      { encoding: 'utf8' },
    );
    expect(out.trim()).toBe('valid 4 5');
  });

  it('opens with program.md as a markdown cell, front matter as a YAML block', () => {
    expect(nb.cells[0].cell_type).toBe('markdown');
    expect(text(nb.cells[0].source)).toBe(programMarkdown(PROGRAM));
    expect(text(nb.cells[0].source)).toBe(
      '```yaml\nbudget_s: 1\ntimeout_s: 20\n```\n\n# Tune the stand-in\n\nMake val_bpb lower.\n',
    );
    expect(nb.metadata).toMatchObject({
      language_info: { name: 'python' },
      autoresearch: { tag: 't1', metric: 'val_bpb', direction: 'lower' },
    });
    // No kernel named, but the key present: JupyterLab would add it on opening (a modified file).
    expect(nb.metadata.kernelspec).toEqual({ name: '', display_name: '' });
  });

  it('has the chart with Vega-Lite, a static SVG and text', () => {
    const chart = nb.cells.find(c => c.id === 'chart');
    const data = chart!.outputs![0].data;
    expect(chart!.outputs).toHaveLength(1);
    expect((data[VEGALITE_MIME] as { $schema: string }).$schema).toContain('vega-lite/v5');
    expect(text(data['image/svg+xml'])).toMatch(/^<svg [\s\S]*<\/svg>$/);
    expect(text(data['text/plain'])).toContain('val_bpb');
  });

  it('has one output per experiment, each with its JSON, static HTML and plain text', () => {
    const exps = experiments(dir, 't1');
    const cells = nb.cells.filter(c => c.id.startsWith('experiment-'));
    expect(cells.map(c => c.id)).toEqual(exps.map(e => `experiment-${e.n}`));
    for (const [i, cell] of cells.entries()) {
      expect(cell.cell_type).toBe('code');
      expect(cell.source).toEqual([]);
      expect(cell.outputs).toHaveLength(1);
      const data = cell.outputs![0].data;
      expect(cell.outputs![0].output_type).toBe('display_data');
      expect(data[EXPERIMENT_MIME]).toMatchObject({
        n: exps[i].n,
        status: exps[i].status,
        description: exps[i].description,
      });
      const html = text(data['text/html']);
      expectStaticHtml(html);
      expect(html).toContain(`<b>#${exps[i].n}</b> <code>${exps[i].status}</code>`);
      expect(text(data['text/plain'])).toMatch(new RegExp(`^#${exps[i].n} ${exps[i].status} `));
    }
  });

  it("shows a crash's log tail, escaped, from its log file", () => {
    const crash = experiments(dir, 't1').find(e => e.status === 'crash');
    expect(crash, 'the third run crashes').toBeDefined();
    const html = text(nb.cells.find(c => c.id === `experiment-${crash!.n}`)!.outputs![0].data['text/html']);
    expect(html).toContain('<details open><summary>log tail</summary>');
    expect(html).toContain('RuntimeError: &lt;stand-in&gt; &amp; boom');
    expect(html).toContain('line 39');
    expect(html).not.toContain('line 5\n');
  });

  it("embeds no file outside the workspace's .autoresearch, whatever a crash's log has become", async () => {
    const crash = experiments(dir, 't1').find(e => e.status === 'crash')!;
    const secret = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'ar-secret-')), 'id_ed25519');
    fs.writeFileSync(secret, 'PRIVATE KEY 0123456789\n');
    const log = crash.log_path as string;
    const kept = fs.readFileSync(log);
    try {
      fs.rmSync(log);
      fs.symlinkSync(secret, log); // a training run swapped its log for a link
      const out = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'ar-nb-')), 'x.ipynb');
      expect((await cli(['export', dir, '--tag', 't1', '--out', out])).code).toBe(0);
      const written = fs.readFileSync(out, 'utf8');
      expect(written).not.toContain('PRIVATE KEY');
      expect(written).toContain('the log is not embedded');
    } finally {
      fs.rmSync(log, { force: true });
      fs.writeFileSync(log, kept);
    }
  });

  it('--out writes elsewhere, - prints the notebook; an unknown tag is one line and exit 1', async () => {
    const out = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'ar-nb-')), 'x.ipynb');
    expect((await cli(['export', dir, '--tag', 't1', '--out', out])).code).toBe(0);
    expect(JSON.parse(fs.readFileSync(out, 'utf8'))).toEqual(nb);
    const stdout = await cli(['export', dir, '--out', '-']);
    expect(stdout.code).toBe(0);
    expect(JSON.parse(stdout.stdout)).toEqual(nb);
    const bad = await cli(['export', dir, '--tag', 'nope']);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toBe(`autoresearch: no run tagged "nope" in ${dir}\n`);
  });
});
