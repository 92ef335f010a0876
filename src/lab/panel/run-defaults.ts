import type { RunSettings } from '../../core/config/run-options';

/**
 * The settings of schema/plugin.json the panel reads: the run options' values for new runs (which
 * options, their types and defaults: src/core/config/run-options.ts), and openOnStart (open the root's
 * panel when JupyterLab starts in a workspace). Its own module so that the toolbar, which fills a
 * run's options from it, need not import the panel that holds the toolbar.
 */
export type IRunDefaults = RunSettings & { openOnStart: boolean };
