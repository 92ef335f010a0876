/**
 * The run's figures as each place in the panel shows them: the run strip's best, the best
 * experiment's own header, the chart's noise line and the status bar. One figure has one value
 * (issue 26): the specs read all four at the same moment and compare.
 */
import { expect } from '@jupyterlab/galata';
import type { Locator, Page } from '@playwright/test';
import { execute } from './commands';

export interface Figures {
  /** The best's metric, six decimals. */
  value: string | undefined;
  /** Its ± (standard error), as written. */
  pm: string | undefined;
  /** `0.0123 (4 df)`: σ and its degrees of freedom. */
  sigma: string | undefined;
}

/** `6.123456`, `± 0.0123` and `σ 0.0123 (4 df)` as a text writes them. */
export function figures(text: string): Figures {
  return {
    value: /(\d+\.\d{6})/.exec(text)?.[1],
    pm: /± (\d+\.\d+)/.exec(text)?.[1],
    sigma: /σ (\d+\.\d+ \(\d+ df\))/.exec(text)?.[1],
  };
}

/**
 * The four places' figures, read together once the best's header is in view (the list draws only
 * what is near the view, so it is brought there with the panel's own Jump to best).
 */
export async function panelFigures(page: Page, panel: Locator): Promise<Record<string, Figures>> {
  await execute(page, 'autoresearch:jump-to-best');
  const stripBest = panel.locator('.jp-AutoresearchRunStrip-best');
  const bestN = /\(#(\d+)\)$/.exec((await stripBest.textContent()) ?? '')?.[1];
  expect(bestN, 'the strip names the best').toMatch(/^\d+$/);
  const header = panel.locator(
    `.jp-AutoresearchExperimentList-item[data-n="${bestN}"] .jp-AutoresearchExperiment-header`,
  );
  await expect(header.locator('.jp-AutoresearchExperiment-spread')).toHaveAttribute('data-estimate', 'now');
  const noise = panel.locator('.jp-AutoresearchChart-noise');
  await expect(noise).toBeVisible();
  return {
    strip: figures((await stripBest.textContent()) ?? ''),
    header: figures((await header.locator('.jp-AutoresearchExperiment-metric').textContent()) ?? ''),
    chart: figures((await noise.textContent()) ?? ''),
    status: figures((await page.locator('.jp-AutoresearchStatus').textContent()) ?? ''),
  };
}

/** Asserts the four places agree: the same best and ±, and the chart and the status bar the same σ (df). */
export function expectOneValue(seen: Record<string, Figures>, where = ''): void {
  const { strip } = seen;
  expect(strip.value, where).toMatch(/^\d+\.\d{6}$/);
  expect(strip.pm, where).toMatch(/^\d/);
  for (const [place, f] of Object.entries(seen)) {
    expect({ where, place, value: f.value, pm: f.pm }).toEqual({ where, place, value: strip.value, pm: strip.pm });
  }
  expect(seen.chart.sigma, where).toMatch(/\d \(\d+ df\)$/);
  expect(seen.status.sigma, where).toBe(seen.chart.sigma);
}
