/**
 * Builds the DOM of one experiment output from its MIME data: header (number, status badge,
 * metric, delta), description and rationale, the model's prediction and lesson, resources, the
 * diff in a collapsible section, a crash's log tail and the model's reasoning, collapsed. Text goes in through textContent only: the data came from a model and a
 * training script, never trusted as markup.
 */
import type { TranslationBundle } from '@jupyterlab/translation';
import type { ExperimentBundleData } from '../../core/views/bundle';
import { fmtDelta, fmtMetric } from '../../core/views/bundle';
import { cacheHitRate } from '../../core/config/pricing';
import { parseDiff } from './diff';
import { el } from './dom';
import { noiseSections, spreadElement } from './runs-view';

/** Appends one line of Python, highlighted, to the given element; without one the diff is plain +/- coloured text. */
export type LineHighlighter = (code: string, el: HTMLElement) => Promise<void>;

/** Whether a delta is an improvement, a regression or neither, given the metric's direction. */
export function deltaQuality(delta: number | null, direction: 'lower' | 'higher'): 'better' | 'worse' | 'same' | null {
  if (delta === null) {
    return null;
  }
  if (delta === 0) {
    return 'same';
  }
  return delta < 0 === (direction === 'lower') ? 'better' : 'worse';
}

function fmtSeconds(s: number): string {
  return s >= 90 ? `${(s / 60).toFixed(1)} min` : `${s.toFixed(1)} s`;
}

/** A status in the reader's language (the translator extracts each literal). */
export function statusLabel(status: string, trans: TranslationBundle): string {
  switch (status) {
    case 'keep':
      return trans.__('keep');
    case 'discard':
      return trans.__('discard');
    case 'crash':
      return trans.__('crash');
    case 'interrupted':
      return trans.__('interrupted');
    case 'rejected':
      return trans.__('rejected');
    default:
      return status;
  }
}

function header(d: ExperimentBundleData, trans: TranslationBundle): HTMLElement {
  const head = el('div', 'jp-AutoresearchExperiment-header');
  head.appendChild(el('span', 'jp-AutoresearchExperiment-number', `#${d.n}`));
  const badge = el('span', `jp-AutoresearchExperiment-status jp-mod-${d.status}`, statusLabel(d.status, trans));
  badge.dataset.status = d.status;
  head.appendChild(badge);
  const metric = el('span', 'jp-AutoresearchExperiment-metric');
  metric.appendChild(el('span', 'jp-AutoresearchExperiment-metricName', d.metric_name));
  metric.appendChild(el('span', 'jp-AutoresearchExperiment-metricValue', fmtMetric(d.metric)));
  const spread = spreadElement(d, trans);
  if (spread) {
    metric.appendChild(spread);
  }
  head.appendChild(metric);
  const quality = deltaQuality(d.delta, d.direction);
  if (quality !== null) {
    const delta = el('span', `jp-AutoresearchExperiment-delta jp-mod-${quality}`, fmtDelta(d.delta));
    delta.title = trans.__('vs the best before: %1', fmtMetric(d.best_before));
    head.appendChild(delta);
  } else if (d.best_before !== null) {
    head.appendChild(
      el('span', 'jp-AutoresearchExperiment-best', trans.__('best before %1', fmtMetric(d.best_before))),
    );
  }
  if (d.worker !== undefined) {
    head.appendChild(el('span', 'jp-AutoresearchExperiment-worker', trans.__('worker %1', d.worker)));
  }
  if (d.description) {
    head.appendChild(el('span', 'jp-AutoresearchExperiment-description', d.description));
  }
  return head;
}

function labelled(className: string, label: string, text: string): HTMLElement {
  const p = el('div', className);
  p.appendChild(el('span', 'jp-AutoresearchExperiment-label', label));
  p.appendChild(document.createTextNode(text));
  return p;
}

function resources(d: ExperimentBundleData, trans: TranslationBundle): HTMLElement {
  // Spans, not <dl>: JupyterLab's output styles lay a definition list out as a table.
  const list = el('div', 'jp-AutoresearchExperiment-resources');
  const rows: Array<[string, string, string]> = [
    ['lines', trans.__('lines'), `+${d.lines_added} −${d.lines_removed}`],
    ['memory', trans.__('memory'), `${d.memory_gb.toFixed(1)} GB`],
    ['time', trans.__('run time'), fmtSeconds(d.timings.run_s)],
    ['cost', trans.__('cost'), d.cost_usd > 0 ? `$${d.cost_usd.toFixed(4)}` : '—'],
    ['commit', trans.__('commit'), d.commit ? d.commit.slice(0, 7) : '—'],
  ];
  // The share of the proposal's prompt read from the cache, beside what it cost.
  const hit = cacheHitRate(d.usage);
  if (hit !== null) rows.splice(4, 0, ['cached', trans.__('prompt cached'), `${Math.round(hit * 100)}%`]);
  // Slurm's wait before its runs started, beside the run time it is not part of.
  const queued = d.timings.queue_s;
  if (queued !== undefined) rows.splice(3, 0, ['queue', trans.__('queue time'), fmtSeconds(queued)]);
  for (const [key, label, value] of rows) {
    const item = el('span', 'jp-AutoresearchExperiment-resource');
    item.dataset.key = key;
    if (key === 'queue') {
      item.title = trans.__(
        'Seconds Slurm held the runs before they started: not in the run time, nor in the busy time',
      );
    }
    item.appendChild(el('span', 'jp-AutoresearchExperiment-resourceLabel', label));
    item.appendChild(el('span', 'jp-AutoresearchExperiment-resourceValue', value));
    list.appendChild(item);
  }
  return list;
}

/** A unified diff as a collapsible section, each line coloured and its Python highlighted. */
export function renderDiff(
  diff: string,
  summary: string,
  open: boolean,
  highlight: LineHighlighter | null,
): HTMLDetailsElement {
  const details = el('details', 'jp-AutoresearchExperiment-diff');
  details.open = open;
  details.appendChild(el('summary', '', summary));
  const pre = el('pre', 'jp-AutoresearchExperiment-diffBody');
  const code: HTMLElement[] = [];
  for (const line of parseDiff(diff)) {
    const row = el('div', `jp-AutoresearchExperiment-diffLine jp-mod-${line.kind}`);
    if (highlight && (line.kind === 'add' || line.kind === 'del' || line.kind === 'context')) {
      row.appendChild(el('span', 'jp-AutoresearchExperiment-diffPrefix', line.text.slice(0, 1)));
      code.push(row.appendChild(el('span', 'jp-AutoresearchExperiment-diffCode', line.text.slice(1))));
    } else {
      row.textContent = line.text;
    }
    pre.appendChild(row);
  }
  details.appendChild(pre);
  if (highlight && code.length) {
    // Each line highlighted off-document, then swapped in; the plain text stays if highlighting
    // fails. A folded diff (a discard's) is highlighted when first opened: most outputs are never
    // unfolded, and highlighting every line of every one in view was most of their render.
    const highlightAll = () => {
      for (const span of code) {
        const styled = document.createElement('span');
        highlight(span.textContent ?? '', styled)
          .then(() => span.replaceChildren(...Array.from(styled.childNodes)))
          .catch(() => undefined);
      }
    };
    if (open) {
      highlightAll();
    } else {
      const onToggle = () => {
        if (details.open) {
          details.removeEventListener('toggle', onToggle);
          highlightAll();
        }
      };
      details.addEventListener('toggle', onToggle);
    }
  }
  return details;
}

/** How a reviewer decided on it (step mode), in words: "edited in the panel after 12.0 s". */
export function reviewWords(review: NonNullable<ExperimentBundleData['review']>, trans: TranslationBundle): string {
  const action =
    review.action === 'edit'
      ? trans.__('edited and approved')
      : review.action === 'reject'
        ? trans.__('rejected')
        : trans.__('approved');
  const where =
    review.source === 'panel'
      ? trans.__('in the panel')
      : review.source === 'tty'
        ? trans.__('at the terminal prompt')
        : trans.__('from the command line');
  return trans.__('%1 %2 after %3', action, where, fmtSeconds(review.waited_s));
}

/**
 * Makes the header of a rendered experiment the button that expands or collapses it (the panel's
 * list, where outputs fold; the renderer itself leaves the header a plain line, as a notebook
 * shows it, with nothing to toggle). Its name is its texts with spaces between: a name from
 * content would run the spans together (`val_bpb0.9979`). The header, or null when `root` holds none.
 */
export function headerAsToggle(root: HTMLElement): HTMLElement | null {
  const head = root.querySelector<HTMLElement>('.jp-AutoresearchExperiment-header');
  if (head) {
    head.setAttribute('role', 'button');
    head.tabIndex = 0;
    const words: string[] = [];
    const texts = document.createTreeWalker(head, NodeFilter.SHOW_TEXT);
    for (let text = texts.nextNode(); text; text = texts.nextNode()) {
      const word = text.textContent?.trim();
      if (word) {
        words.push(word);
      }
    }
    head.setAttribute('aria-label', words.join(' '));
  }
  return head;
}

/** The experiment's output, as a detached element. */
export function renderExperiment(
  d: ExperimentBundleData,
  trans: TranslationBundle,
  highlight: LineHighlighter | null = null,
): HTMLElement {
  const root = el('div', `jp-AutoresearchExperiment jp-mod-${d.status}`);
  root.appendChild(header(d, trans));
  if (d.rationale) {
    root.appendChild(labelled('jp-AutoresearchExperiment-rationale', trans.__('Why: '), d.rationale));
  }
  if (d.expected_delta !== undefined) {
    const got = d.delta !== null ? trans.__(', got %1', fmtDelta(d.delta)) : '';
    const words = trans.__('expected %1', fmtDelta(d.expected_delta)) + got;
    root.appendChild(labelled('jp-AutoresearchExperiment-prediction', trans.__('Prediction: '), words));
  }
  if (d.lesson) {
    const label = trans.__('Lesson on #%1: ', d.lesson.about);
    root.appendChild(labelled('jp-AutoresearchExperiment-lesson', label, d.lesson.text));
  }
  if (d.reason) {
    root.appendChild(labelled('jp-AutoresearchExperiment-reason', trans.__('Reason: '), d.reason));
  }
  if (d.review) {
    const review = labelled('jp-AutoresearchExperiment-review', trans.__('Review: '), reviewWords(d.review, trans));
    review.dataset.action = d.review.action;
    root.appendChild(review);
  }
  noiseSections(d, trans).forEach(section => root.appendChild(section));
  root.appendChild(resources(d, trans));
  if (d.diff) {
    // Kept experiments open their diff: they are the ones that changed the branch.
    const summary = trans.__('diff (+%1 −%2)', d.lines_added, d.lines_removed);
    root.appendChild(renderDiff(d.diff, summary, d.status === 'keep', highlight));
  }
  if (d.log_tail !== null && d.log_tail !== undefined) {
    const details = el('details', 'jp-AutoresearchExperiment-log');
    details.open = true;
    details.appendChild(el('summary', '', trans.__('log tail')));
    details.appendChild(el('pre', 'jp-AutoresearchExperiment-logBody', d.log_tail));
    root.appendChild(details);
  }
  if (d.reasoning) {
    // Collapsed: long, and the description and rationale already say what was decided.
    const details = el('details', 'jp-AutoresearchExperiment-reasoning');
    const summary = d.effort
      ? trans.__("the model's reasoning (effort %1)", d.effort)
      : trans.__("the model's reasoning");
    details.appendChild(el('summary', '', summary));
    for (const para of d.reasoning.split(/\n\s*\n/).filter(t => t.trim())) {
      details.appendChild(el('p', 'jp-AutoresearchExperiment-reasoningBody', para.trim()));
    }
    root.appendChild(details);
  }
  return root;
}
