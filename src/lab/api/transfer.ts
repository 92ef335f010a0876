/**
 * The transfer study's routes: its state for a run (GET transfer: running, summary.json, program.md's
 * defaults, the last failure) and starting one (POST transfer). Answers are checked with zod; the
 * summary's schema is the one the export reads it with (src/core/views/transfer-view.ts).
 */
import type { ServerConnection } from '@jupyterlab/services';
import * as z from 'zod/mini';
import { TransferSummaryFile } from '../../core/views/transfer-view';
import { englishMessages } from '../../core/journal/zod-english';
import { post, query, requestAPI } from './server';

englishMessages();

/** program.md's `transfer:` values come as YAML wrote them: `AUTORESEARCH_SCALE: 2` is a number. */
const EnvValue = z.pipe(
  z.union([z.string(), z.number(), z.boolean()]),
  z.transform(v => String(v)),
);

/**
 * A summary.json the panel cannot read (from another version of the engine, say) is left out
 * with a warning, as a run_state is: the study's state still shows.
 */
const Summary = z.pipe(
  z.unknown(),
  z.transform(value => {
    if (value === null || value === undefined) {
      return null;
    }
    const parsed = TransferSummaryFile.safeParse(value);
    if (!parsed.success) {
      console.warn(`autoresearch: a transfer summary the panel cannot read was left out: ${parsed.error.message}`);
      return null;
    }
    return parsed.data;
  }),
);

export const TransferState = z.object({
  tag: z.string(),
  running: z.boolean(),
  summary: Summary,
  defaults: z.pipe(
    z.optional(
      z.nullable(
        z.object({
          env: z.optional(z.nullable(z.record(z.string(), EnvValue))),
          budget_s: z.optional(z.nullable(z.number())),
        }),
      ),
    ),
    z.transform(d => ({ env: d?.env ?? {}, budget_s: d?.budget_s ?? null })),
  ),
  /** Why program.md's `transfer:` block could not be read, or null. */
  defaults_problem: z.optional(z.nullable(z.string())),
  failure: z.optional(z.nullable(z.object({ message: z.string(), exit_code: z.optional(z.nullable(z.number())) }))),
  log: z.optional(z.nullable(z.string())),
});
export type ITransferState = z.infer<typeof TransferState>;

const TransferStarted = z.object({ tag: z.string(), pid: z.int(), log: z.string() });

/**
 * What starting a study takes: the larger scale's environment, and optionally its budget, the
 * repeats of each replay, an ablation and a kernel.
 */
export interface ITransferRequest {
  env: Record<string, string>;
  budget_s?: number;
  runs?: number;
  ablate?: boolean;
  kernel?: string;
}

/** The study of run `tag`: whether one runs, its summary so far, and program.md's defaults. */
export async function fetchTransfer(
  settings: ServerConnection.ISettings,
  path: string,
  tag: string,
): Promise<ITransferState> {
  const data = await requestAPI<unknown>(`transfer${query({ path, tag })}`, settings);
  const parsed = TransferState.safeParse(data);
  if (!parsed.success) {
    throw new Error(`autoresearch: GET transfer answered something unexpected: ${z.prettifyError(parsed.error)}`);
  }
  return parsed.data;
}

/** Starts the study of run `tag` (202); it runs detached, like an engine. */
export async function startTransfer(
  settings: ServerConnection.ISettings,
  path: string,
  tag: string,
  request: ITransferRequest,
): Promise<z.infer<typeof TransferStarted>> {
  const data = await post<unknown>('transfer', settings, { path, tag, ...request });
  const parsed = TransferStarted.safeParse(data);
  if (!parsed.success) {
    throw new Error(`autoresearch: POST transfer answered something unexpected: ${z.prettifyError(parsed.error)}`);
  }
  return parsed.data;
}
