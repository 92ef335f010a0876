/**
 * @jupyterlab/services sends a kernel_info request on every (re)connection and does not catch
 * it. When the server auto-restarts a kernel that died while that request was pending, the
 * request is canceled and its promise rejects with nobody to handle it; Node ends a process on an
 * unhandled rejection. The executor already treats that kernel as lost (the experiment is a
 * crash, the next one gets a fresh kernel), so this one rejection must not end an overnight run.
 * Every other unhandled rejection is thrown again: Node's default, a crash with the error, holds.
 */

const SERVICES_CANCELLATION = /^Canceled future for \w+ message before replies were done$/;

/** Whether an unhandled rejection is @jupyterlab/services' canceled, fire-and-forget request. */
export function isServicesCancellation(reason: unknown): boolean {
  return reason instanceof Error && SERVICES_CANCELLATION.test(reason.message);
}

let installed = false;

/** Installs the filter for the engine's process (the CLI); idempotent. */
export function guardServicesCancellations(): void {
  if (installed) return;
  installed = true;
  process.on('unhandledRejection', reason => {
    if (isServicesCancellation(reason)) return;
    throw reason;
  });
}
