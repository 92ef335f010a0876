/** The two ways a run is cut short, shared by every executor: its deadline, and a stop request. */
import type { RunRequest } from './types';

export interface StopWatch {
  /** The run passed its deadline. */
  readonly timedOut: boolean;
  /** The run was stopped (engine signal or `autoresearch stop`). */
  readonly interrupted: boolean;
  /** Clears the timer and the listener once the run has ended. */
  dispose(): void;
}

/** Calls `terminate` at the deadline or on abort, and records which it was. */
export function watchForStop(req: RunRequest, terminate: () => void): StopWatch {
  const state = { timedOut: false, interrupted: false };
  const deadline = setTimeout(() => {
    state.timedOut = true;
    terminate();
  }, req.timeoutS * 1000);
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
    dispose() {
      clearTimeout(deadline);
      req.signal?.removeEventListener('abort', onAbort);
    },
  };
}
