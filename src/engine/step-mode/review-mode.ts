/**
 * Step mode switched while a run goes on: `autoresearch step DIR on|off` (cli/review-command.ts) and the
 * server, for the panel's toggle, write the run's mode file; the engine's StepReview follows it
 * (step-review.ts), journaling each switch. Only a one-worker run is reviewed.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { REVIEW_MODE_FILE } from '../../core/journal/layout';
import { ReviewMode } from '../../core/step-mode/review';
import { readNoFollow } from '../workspace/workspace-files';

/** The mode file of a run's folder. */
export function modePath(root: string): string {
  return path.join(root, REVIEW_MODE_FILE);
}

/** The run's mode file, or null when absent or not one of ours. */
export function readReviewMode(root: string): ReviewMode | null {
  try {
    const parsed = ReviewMode.safeParse(JSON.parse(readNoFollow(modePath(root)).toString('utf8')));
    return parsed.success ? parsed.data : null;
  } catch {
    return null;
  }
}

/** The refusal of step mode for a run with several workers (one pending proposal per run). */
export function severalWorkersMessage(workers: number): string {
  return `step mode reviews one proposal at a time: this run has ${workers} workers`;
}

/**
 * Calls `look` when the mode file may have changed: fs.watch on the run's folder wakes it at once,
 * a slow poll is the backstop. Returns the function that stops watching.
 */
export function watchMode(root: string, look: () => void, pollMs: number): () => void {
  let watcher: fs.FSWatcher | null = null;
  try {
    watcher = fs.watch(root, (_e, name) => {
      if (name === null || name === REVIEW_MODE_FILE) look();
    });
    watcher.on('error', () => undefined);
  } catch {
    // The poll still finds it.
  }
  const timer = setInterval(look, pollMs);
  timer.unref();
  return () => {
    watcher?.close();
    clearInterval(timer);
  };
}
