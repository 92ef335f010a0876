/**
 * The events a run emits while it works (Loop, fed by the loop of loop.ts), typed so a listener for an
 * event that does not exist, or with the wrong arguments, fails to compile. The worker (1..N)
 * comes last, and only in runs with several workers.
 */
import type { ExperimentRecord, RunPurpose } from '../../core/journal/journal';
import type { LogCapture } from '../experiment/log-capture';

/** What an experiment is doing: proposing, applying, awaiting its reviewer (step mode), committing, a run (a repeat by its purpose), judging, checking. */
export type Phase =
  'propose' | 'apply' | 'review' | 'commit' | 'run' | Exclude<RunPurpose, 'measure'> | 'judge' | 'check';

/** The events a lane emits, before the worker is added. */
export interface LaneEvents {
  phase: [n: number, phase: Phase, description: string];
  'run-start': [n: number, log: LogCapture, startedAt: number, budgetS: number];
  note: [text: string];
}

export interface LoopEvents {
  phase: [n: number, phase: Phase, description: string, worker?: number];
  /** A training run started (each repeat too): its log fills as it trains. */
  'run-start': [n: number, log: LogCapture, startedAt: number, budgetS: number, worker?: number];
  /** An experiment's record, just journaled. */
  experiment: [record: ExperimentRecord];
  /** A line for the terminal. */
  note: [text: string, worker?: number];
}

/** How the loop hands an event to the Loop's listeners. */
export type EmitLoopEvent = <K extends keyof LoopEvents>(event: K, ...args: LoopEvents[K]) => void;
