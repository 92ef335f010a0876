/**
 * A run as a Jupyter notebook (nbformat 4.5): program.md as the first markdown
 * cell, a one-line summary, the progress chart, the search tree when the run
 * went beyond greedy, then one output per experiment, each version of the
 * model's research notes before the experiment whose proposal wrote it.
 * Outputs sit in code cells with an empty, hidden source and
 * `display_data` outputs: a notebook has no other place for rich output, and
 * nothing here needs a kernel to show. Pure: the caller reads the files.
 */
import { experimentBundle } from './bundle';
import { progressChart, VEGALITE_MIME } from './chart';
import { progressChartSvg } from './chart-svg';
import { experimentsOf, type ExperimentRecord, type JournalRecord } from '../journal/journal';
import { literalDollars, markdownLiteral } from './markdown-text';
import { searchTreeMarkdown } from './search-tree-markdown';
import { notesOf } from '../journal/research-notes';
import { notesMarkdown } from './notes-markdown';
import { runBranch } from '../journal/layout';
import type { TransferSummary } from '../study/transfer';
import { transferChartBundle, transferTableBundle } from './transfer-view';
import type { Direction } from '../rule/noise';
import {
  bestWords,
  hasRepeats,
  noiseSummary,
  perMilliWords,
  perProposerWords,
  sigmaWords,
  trustRunsWords,
} from '../rule/noise-words';

export interface NotebookInput {
  /** program.md's text. */
  program: string;
  /** The run's journal records (run_start gives the metric and direction). */
  records: JournalRecord[];
  tag: string;
  /** The chart as SVG; drawn with `progressChartSvg` when not given. */
  chartSvg?: string;
  /** Crashed experiments' log text by experiment number. */
  logs?: Record<number, string>;
  /**
   * The run's transfer study (transfer/summary.json), its own section after the chart; or, when
   * the file could not be read, the problem in words, which the section states instead.
   */
  transfer?: TransferSummary | string | null;
}

type Output = { output_type: 'display_data'; data: Record<string, unknown>; metadata: Record<string, unknown> };
type Cell =
  | { cell_type: 'markdown'; id: string; metadata: Record<string, unknown>; source: string[] }
  | {
      cell_type: 'code';
      id: string;
      metadata: Record<string, unknown>;
      source: string[];
      execution_count: null;
      outputs: Output[];
    };

export interface Notebook {
  nbformat: 4;
  nbformat_minor: 5;
  metadata: Record<string, unknown>;
  cells: Cell[];
}

/** Splits text into lines that keep their newline, the way Jupyter stores multi-line strings. */
export function toLines(text: string): string[] {
  return text.split(/(?<=\n)/).filter(l => l.length > 0);
}

const FRONT_MATTER = /^---[ \t]*\r?\n([\s\S]*?)\r?\n---[ \t]*(?:\r?\n|$)/;

/**
 * program.md as markdown: front matter shown as a YAML block, since as raw
 * markdown its `---` lines would render as a rule and a heading.
 */
export function programMarkdown(text: string): string {
  const m = FRONT_MATTER.exec(text);
  if (!m) {
    return text;
  }
  return `\`\`\`yaml\n${m[1]}\n\`\`\`\n\n${text.slice(m[0].length)}`;
}

function summaryMarkdown(tag: string, records: JournalRecord[], metric: string, direction: Direction): string {
  const exps = experimentsOf(records);
  const counts = new Map<string, number>();
  exps.forEach(e => counts.set(e.status, (counts.get(e.status) ?? 0) + 1));
  const kept = exps.filter(e => e.status === 'keep' && e.metric !== null);
  const best = kept[kept.length - 1];
  const baseline = kept[0];
  const cost = exps.reduce((s, e) => s + e.cost_usd, 0);
  // Only a run measured with repeats has σ and a trust cost to report; older runs read as they did.
  const noise = hasRepeats(records) ? noiseSummary(records, direction) : null;
  const parts = [
    `${exps.length} experiments${counts.size ? ` (${[...counts].map(([k, v]) => `${v} ${k}`).join(', ')})` : ''}`,
  ];
  if (best) {
    const change = baseline && baseline !== best ? `, from ${baseline.metric!.toFixed(6)} at the baseline` : '';
    const value = noise?.best && noise.best.n === best.n ? bestWords(noise.best) : best.metric!.toFixed(6);
    parts.push(
      `best ${metric} ${value} (#${best.n}${best.commit ? `, \`${best.commit.slice(0, 7)}\`` : ''}${change}; ${direction} is better)`,
    );
  }
  if (noise) {
    parts.push(sigmaWords(noise));
  }
  if (cost > 0) {
    parts.push(`proposals cost $${cost.toFixed(4)}`);
  }
  if (noise) {
    const proposers = perProposerWords(noise.trust);
    parts.push(
      `trust: ${trustRunsWords(noise.trust)}; ${perMilliWords(noise.trust)}${proposers.length ? ` (${proposers.join('; ')})` : ''}`,
    );
  }
  // Backticks in a tag would break the inline code; tags are branch names, so this is rare.
  // A notebook reads top to bottom, so the experiments run oldest first (the panel, a live
  // view, puts the newest on top); the summary says so, since the two orders differ.
  const order = exps.length > 1 ? `\n\nThe experiments below are in the order they ran, #${exps[0].n} first.\n` : '\n';
  // Two dollar amounts in one cell (a cost and a trust figure) would be a formula to every
  // notebook renderer, and `\$` is no escape in JupyterLab: see ./markdown-text.
  const text = literalDollars(parts.join(' · '));
  return `## Run \`${tag.replace(/`/g, '')}\` on branch \`${runBranch(tag.replace(/`/g, ''))}\`\n\n${text}.${order}`;
}

function outputCell(id: string, ...data: Record<string, unknown>[]): Cell {
  // The empty source is hidden so JupyterLab shows just the output.
  return {
    cell_type: 'code',
    id,
    metadata: { jupyter: { source_hidden: true }, tags: ['autoresearch'] },
    source: [],
    execution_count: null,
    outputs: data.map(d => ({ output_type: 'display_data', data: d, metadata: {} })),
  };
}

/** The transfer study's section: a heading with what was replayed, then its table and chart. */
function transferCells(study: TransferSummary | string): Cell[] {
  if (typeof study === 'string') {
    return [
      // The problem in words quotes what it read (a path, a file's text): shown as text, never markup.
      {
        cell_type: 'markdown',
        id: 'transfer',
        metadata: {},
        source: toLines(`## Transfer study\n\n${markdownLiteral(study)}\n`),
      },
    ];
  }
  const env = Object.entries(study.env)
    // In code, where `$` is no maths; a backtick would end the code early, so it goes (as in the tag).
    .map(([k, v]) => `\`${`${k}=${v}`.replace(/`/g, '')}\``)
    .join(' ');
  const intro =
    `## Transfer study\n\nThe baseline and every kept commit replayed in order at ${study.scale}` +
    ` (${env || 'no environment change'}, ${study.budget_s} s budget, ${study.runs} runs each), against the search` +
    ` scale (${study.search_budget_s} s). A change *transferred* when its gain kept its direction and exceeded` +
    ` ${study.keep_sigma} standard errors at the new scale.${study.summary.complete ? '' : ' The study is not complete: some replays are still to run.'}\n`;
  return [
    { cell_type: 'markdown', id: 'transfer', metadata: {}, source: toLines(literalDollars(intro)) },
    outputCell('transfer-results', mimeData(transferTableBundle(study)), mimeData(transferChartBundle(study))),
  ];
}

/** Text values as Jupyter writes them (lists of lines); JSON values stay objects. */
function mimeData(bundle: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(bundle).map(([k, v]) => [k, typeof v === 'string' ? toLines(v) : v]));
}

/** The chart's output bundle: Vega-Lite for JupyterLab, SVG for GitHub and nbviewer, text for the rest. */
export function chartBundle(
  exps: ExperimentRecord[],
  metric: string,
  direction: Direction,
  svg?: string,
): Record<string, unknown> {
  const shown = exps.filter(e => e.status === 'keep' || e.status === 'discard' || e.status === 'crash').length;
  return {
    [VEGALITE_MIME]: progressChart(exps, { metric, direction }),
    'image/svg+xml': svg ?? progressChartSvg(exps, { metric, direction }),
    'text/plain': `<progress chart: ${metric} over ${shown} experiments>`,
  };
}

/** The metric and direction of a run: its last run_start's config, else the defaults. */
export function runMetric(records: JournalRecord[]): { metric: string; direction: Direction } {
  const start = [...records].reverse().find(r => r.type === 'run_start');
  return start?.type === 'run_start'
    ? { metric: start.config.metric, direction: start.config.direction }
    : { metric: 'val_bpb', direction: 'lower' };
}

/** The run as an nbformat 4.5 notebook (a JSON-ready object). */
export function buildNotebook(input: NotebookInput): Notebook {
  const { metric, direction } = runMetric(input.records);
  const exps = experimentsOf(input.records);
  const cells: Cell[] = [
    // program.md is the researcher's own markdown, typed in the panel's markdown cell: it renders as
    // it does there, maths included (docs/notebook-markdown.md); only generated text is kept literal.
    { cell_type: 'markdown', id: 'program', metadata: {}, source: toLines(programMarkdown(input.program)) },
    {
      cell_type: 'markdown',
      id: 'summary',
      metadata: {},
      source: toLines(summaryMarkdown(input.tag, input.records, metric, direction)),
    },
    outputCell('chart', mimeData(chartBundle(exps, metric, direction, input.chartSvg))),
    ...(input.transfer ? transferCells(input.transfer) : []),
  ];
  // Only a run that searched beyond greedy has a tree worth a section (issue 28).
  const tree = searchTreeMarkdown(exps);
  if (tree) cells.push({ cell_type: 'markdown', id: 'search-tree', metadata: {}, source: toLines(tree) });
  const ids = new Set<string>();
  for (const e of exps) {
    const bundle = experimentBundle(e, { metric, direction, log: input.logs?.[e.n] ?? null });
    // Cell ids must be unique; a journal never repeats a number, but a hand-merged one might.
    let id = `experiment-${e.n}`;
    for (let i = 2; ids.has(id); i++) id = `experiment-${e.n}-${i}`;
    ids.add(id);
    // Each version of the model's research notes, before the experiment whose proposal wrote them.
    const notes = notesOf(e.proposal_meta);
    if (notes) {
      cells.push({
        cell_type: 'markdown',
        id: `notes-${id}`,
        metadata: {},
        source: toLines(notesMarkdown({ ...notes, n: e.n })),
      });
    }
    cells.push(outputCell(id, mimeData({ ...bundle })));
  }
  return {
    nbformat: 4,
    nbformat_minor: 5,
    // An empty kernelspec: the notebook holds outputs only and names no kernel to start. It is
    // written rather than left out because JupyterLab adds exactly this one to a notebook that
    // lacks it, which would mark the file modified the moment it opens.
    metadata: {
      kernelspec: { name: '', display_name: '' },
      language_info: { name: 'python' },
      autoresearch: { tag: input.tag, metric, direction },
    },
    cells,
  };
}
