/** The two ways a run is cut short, shared by every executor: its deadline, and a stop request. */
import type { RunRequest } from './types';

export interface StopWatch {
  /** The run passed its deadline. */
  readonly timedOut: boolean;
  /** The run was stopped (engine signal or `autoresearch stop`). */
  readonly interrupted: boolean;
  /** Starts the deadline where it was deferred (a queued run that has just started); once. */
  startDeadline(): void;
  /** Clears the timer and the listener once the run has ended. */
  dispose(): void;
}

/**
 * Calls `terminate` at the deadline or on abort, and records which it was. A queued executor
 * defers the deadline until its run leaves the queue: time in a queue is not the run's.
 */
export function watchForStop(req: RunRequest, terminate: () => void, o: { deferDeadline?: boolean } = {}): StopWatch {
  const state = { timedOut: false, interrupted: false };
  let deadline: NodeJS.Timeout | undefined;
  let disposed = false;
  const startDeadline = () => {
    if (deadline || disposed) return;
    deadline = setTimeout(() => {
      state.timedOut = true;
      terminate();
    }, req.timeoutS * 1000);
  };
  if (!o.deferDeadline) startDeadline();
  const onAbort = () => {
    state.interrupted = true;
    terminate();
  };
  req.signal?.addEventListener('abort', onAbort, { once: true });
  if (req.signal?.aborted) {
    onAbort();
  }
  return {
    get timedOut() {
      return state.timedOut;
    },
    get interrupted() {
      return state.interrupted;
    },
    startDeadline,
    dispose() {
      disposed = true;
      clearTimeout(deadline);
      req.signal?.removeEventListener('abort', onAbort);
    },
  };
}
