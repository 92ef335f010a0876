/**
 * The transfer study's routes: its state for a run (GET transfer: running, summary.json, program.md's
 * defaults, the last failure) and starting one (POST transfer). Answers are checked with zod
 * (src/core/api/tool-answers.ts); the summary's schema is the one the export reads it with
 * (src/core/views/transfer-view.ts).
 */
import type { ServerConnection } from '@jupyterlab/services';
import * as z from 'zod/mini';
import { TransferStarted, TransferState } from '../../core/api/tool-answers';
import type { RunOptionValues } from '../../core/config/run-options';
import { post, query, requestAPI } from './server';
import { englishMessages } from '../../core/journal/zod-english';

englishMessages();

export { TransferState };
export type ITransferState = z.infer<typeof TransferState>;

/**
 * What starting a study takes: the larger scale's environment, and optionally its budget, the
 * repeats of each replay, an ablation, and a kernel or the executor (slurm: each replay a Slurm job).
 */
export interface ITransferRequest {
  env: Record<string, string>;
  budget_s?: number;
  runs?: number;
  ablate?: boolean;
  kernel?: string;
  executor?: RunOptionValues['executor'];
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
