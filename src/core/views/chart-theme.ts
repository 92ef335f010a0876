/**
 * The progress chart's colours: the exported chart's fixed ones (COLORS) and the panel's, read
 * from JupyterLab's CSS variables (THEME_VARS) and handed to Vega-Lite as its config.
 */

/** The colours and font of the panel's chart, each from a JupyterLab CSS variable (THEME_VARS). */
export interface ChartTheme {
  keep: string;
  discard: string;
  crash: string;
  best: string;
  /** Point labels and titles. */
  text: string;
  /** Tick and legend labels. */
  muted: string;
  grid: string;
  /** Axis lines, ticks and the plot's frame. */
  rule: string;
  font: string;
}

/**
 * Where each of the panel chart's colours comes from, so the light, dark and high-contrast
 * themes (and any other) colour it as they colour text, success and error everywhere else.
 */
export const THEME_VARS: Readonly<Record<keyof ChartTheme, string>> = {
  keep: '--jp-success-color1',
  best: '--jp-success-color1',
  // A ring in the secondary text colour: as legible as the axis labels in every theme, and told
  // from a keep by its shape, not only its colour.
  discard: '--jp-ui-font-color2',
  crash: '--jp-error-color1',
  text: '--jp-ui-font-color1',
  muted: '--jp-ui-font-color2',
  grid: '--jp-border-color2',
  rule: '--jp-border-color1',
  font: '--jp-ui-font-family',
};

/**
 * Status colours of the exported chart: its Vega-Lite spec and its SVG. An export cannot know the
 * theme it is read in: JupyterLab draws its Vega-Lite on white in a light theme and on
 * vega-themes' "dark" background (#333) in a dark one, GitHub draws the SVG on white. So each is
 * a mid tone with at least 3:1 contrast (WCAG's figure for graphics) against both white and #333
 * (test/chart.test.ts checks). The panel uses THEME_VARS instead.
 */
export const COLORS = { keep: '#3d9a40', discard: '#888888', crash: '#e0433a', best: '#3d9a40' } as const;

/** The panel's look where a CSS variable is unset (never in JupyterLab): the export's colours, mid-grey text. */
const FALLBACK_THEME: ChartTheme = {
  ...COLORS,
  text: '#757575',
  muted: '#757575',
  grid: '#8888884d',
  rule: '#888888',
  font: 'sans-serif',
};

/** The panel's theme from a reader of CSS variables (getComputedStyle(node).getPropertyValue). */
export function chartTheme(read: (cssVar: string) => string): ChartTheme {
  const theme = { ...FALLBACK_THEME };
  for (const key of Object.keys(THEME_VARS) as Array<keyof ChartTheme>) {
    theme[key] = read(THEME_VARS[key]).trim() || FALLBACK_THEME[key];
  }
  return theme;
}

/** Vega-Lite config for the panel: every colour the theme's, over the panel's own background. */
export function themeConfig(theme: ChartTheme): Record<string, unknown> {
  return {
    background: 'transparent',
    font: theme.font,
    view: { stroke: theme.rule },
    axis: {
      labelColor: theme.muted,
      titleColor: theme.text,
      domainColor: theme.rule,
      tickColor: theme.rule,
      gridColor: theme.grid,
    },
    legend: { labelColor: theme.muted, titleColor: theme.text },
    title: { color: theme.text },
    // vega-embed merges its dark theme under this config; these override its white guide text.
    style: { 'guide-label': { fill: theme.muted }, 'guide-title': { fill: theme.text } },
  };
}
