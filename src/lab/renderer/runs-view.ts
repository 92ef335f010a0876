/**
 * The noise-aware part of an experiment's output: its runs (metric and seed each, reused ones
 * marked), whether the keep was confirmed, what a gain had to beat (σ and the floor), and
 * which earlier experiment a reused result reports. Nothing is added for a record from before
 * repeats. Text goes in through textContent only, as in the rest of the renderer.
 */
import type { TranslationBundle } from '@jupyterlab/translation';
import type { ExperimentBundleData } from '../../core/views/bundle';
import { fmtMetric } from '../../core/views/bundle';
import { fmtNoise } from '../../core/rule/noise';
import { measuredRuns, verdictWords } from '../../core/rule/noise-words';
import { el } from './dom';

/** `± 0.0028 (2 runs)` for the header, after the mean; null when there is nothing to add. */
export function spreadElement(d: ExperimentBundleData, trans: TranslationBundle): HTMLElement | null {
  if (!d.runs || d.metric === null) {
    return null;
  }
  const k = measuredRuns(d).length;
  const se = d.verdict?.se ?? null;
  if (se === null && k < 2) {
    return null;
  }
  const text = `${se !== null ? `± ${fmtNoise(se)} ` : ''}${trans._n('(%1 run)', '(%1 runs)', k, k)}`;
  const node = el('span', 'jp-AutoresearchExperiment-spread', text);
  node.title = trans.__('mean of its runs ± the standard error of that mean');
  return node;
}

/** The runs, the verdict's noise and a reused result's origin, as detached elements in order. */
export function noiseSections(d: ExperimentBundleData, trans: TranslationBundle): HTMLElement[] {
  const out: HTMLElement[] = [];
  if (d.same_as !== undefined) {
    const p = el('div', 'jp-AutoresearchExperiment-sameAs');
    p.dataset.sameAs = String(d.same_as);
    p.appendChild(el('span', 'jp-AutoresearchExperiment-label', trans.__('Reused: ')));
    p.appendChild(
      document.createTextNode(trans.__('same code as #%1: its result is reported, nothing ran again', d.same_as)),
    );
    out.push(p);
  }
  const noise = verdictWords(d);
  if (noise) {
    const p = el('div', 'jp-AutoresearchExperiment-noise');
    p.appendChild(el('span', 'jp-AutoresearchExperiment-label', trans.__('Noise: ')));
    p.appendChild(document.createTextNode(noise));
    out.push(p);
  }
  if (d.runs && d.runs.length) {
    out.push(runsList(d, trans));
  }
  return out;
}

function runsList(d: ExperimentBundleData, trans: TranslationBundle): HTMLElement {
  const box = el('div', 'jp-AutoresearchExperiment-runs');
  box.appendChild(
    el('span', 'jp-AutoresearchExperiment-label', trans._n('%1 run: ', '%1 runs: ', d.runs!.length, d.runs!.length)),
  );
  if (d.verdict && d.status === 'keep') {
    const confirmed = d.verdict.confirmed;
    const badge = el(
      'span',
      `jp-AutoresearchExperiment-confirmed jp-mod-${confirmed ? 'yes' : 'no'}`,
      confirmed ? trans.__('confirmed') : trans.__('not confirmed'),
    );
    badge.title = confirmed
      ? trans.__('kept after repeat runs reproduced the gain')
      : trans.__('kept on a single run (strict rule)');
    box.appendChild(badge);
  }
  for (const run of d.runs!) {
    const item = el(
      'span',
      `jp-AutoresearchExperiment-run${run.own === false ? ' jp-mod-reused' : ''}${run.metric === null ? ' jp-mod-crashed' : ''}`,
    );
    item.dataset.k = String(run.k);
    item.appendChild(
      el(
        'span',
        'jp-AutoresearchExperiment-runMetric',
        run.metric === null ? trans.__('crashed') : fmtMetric(run.metric),
      ),
    );
    item.appendChild(el('span', 'jp-AutoresearchExperiment-runSeed', trans.__('seed %1', run.seed)));
    item.title =
      run.own === false
        ? trans.__('run %1 of this code, made by an earlier experiment', run.k)
        : trans.__('run %1 of this code, %2 s', run.k, run.run_s.toFixed(1));
    box.appendChild(item);
  }
  return box;
}

/** The best's figures now, as the panel's run state gives them (src/lab/panel/run/state-words.ts runFigures). */
export interface IEstimateNow {
  /** The estimate, 6 decimals: the mean over every run of its code. */
  metric: string;
  /** Its ± (σ/√runs), null before σ is measured. */
  pm: string | null;
  runs: number;
  /** σ and its degrees of freedom, null before measured. */
  sigma: string | null;
  df: number;
}

/** What a header showed as rendered, kept so that the best's estimate can be taken off again. */
const asRendered = new WeakMap<HTMLElement, { metric: string; spread: string | null; title: string }>();

/**
 * Shows the current best's estimate in its own header (`now`), or what the header said when it
 * was rendered (null). A record says what the experiment measured when it was judged; the best's
 * code is run again while later candidates are judged and σ is pooled over every repeat, so the
 * header of the best would otherwise show another mean and ± than the strip, the chart and the
 * status bar beside it. The tooltip says both: now, and when it was kept.
 */
export function showEstimateNow(head: HTMLElement, now: IEstimateNow | null, trans: TranslationBundle): void {
  const value = head.querySelector<HTMLElement>('.jp-AutoresearchExperiment-metricValue');
  if (!value) {
    return;
  }
  let spread = head.querySelector<HTMLElement>('.jp-AutoresearchExperiment-spread');
  let kept = asRendered.get(head);
  if (!kept) {
    kept = { metric: value.textContent ?? '', spread: spread?.textContent ?? null, title: spread?.title ?? '' };
    asRendered.set(head, kept);
  }
  if (now === null) {
    value.textContent = kept.metric;
    if (spread && kept.spread === null) {
      spread.remove();
    } else if (spread) {
      spread.textContent = kept.spread;
      spread.title = kept.title;
      delete spread.dataset.estimate;
    }
    head.classList.remove('jp-mod-bestNow');
    return;
  }
  value.textContent = now.metric;
  if (!spread) {
    spread = el('span', 'jp-AutoresearchExperiment-spread');
    value.after(spread);
  }
  spread.textContent = `${now.pm !== null ? `± ${now.pm} ` : ''}${trans._n('(%1 run)', '(%1 runs)', now.runs, now.runs)}`;
  spread.dataset.estimate = 'now';
  const sigma = now.sigma !== null ? trans.__(' (σ %1, %2 df)', now.sigma, now.df) : '';
  const then = `${kept.metric}${kept.spread ? ` ${kept.spread}` : ''}`;
  spread.title = trans.__(
    'The best’s estimate now, as the run’s state says: the mean of its %1 runs ± σ/√%1%2. When it was kept: %3.',
    now.runs,
    sigma,
    then,
  );
  head.classList.add('jp-mod-bestNow');
}
