/**
 * The status words the server reads and writes, as src/core declares them: the build writes
 * `statusWords()` to engine/rules.json, and the server's read/status_words.py takes every word it
 * uses from there (refusing at import one that is not declared), so a word renamed here cannot
 * leave a stale copy in Python.
 */
import { RESULTS_STATUSES } from '../journal/results';
import { RunStatus } from '../journal/run-state';
import { SERVED_RUN_STATES } from './responses';

/** results: the experiment statuses results.tsv holds; run: state.json's status; served: a run's state in the REST routes. */
export function statusWords() {
  return {
    results: RESULTS_STATUSES,
    run: RunStatus.options,
    served: SERVED_RUN_STATES,
  };
}
