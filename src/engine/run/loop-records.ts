/**
 * Journal records the loop writes on its own (an experiment left in flight, a
 * proposal given up, a proposal paid for that never ran), and what it reads back
 * from a journal: the best so far and the experiments made. Shared by one worker
 * and several.
 */
import type {
  ExperimentRecord,
  ExperimentStartRecord,
  JournalRecord,
  RunEndRecord,
  Usage,
} from '../../core/journal/journal';
import { bestEstimate, type Measurements } from '../../core/rule/measurements';
import type { ProposalAbandoned } from '../proposers/types';

export interface Best {
  commit: string;
  /** The code's content hash (runs of it pool under it). */
  state: string;
  /** The mean of all its runs when this was read. */
  metric: number;
}

/** The best kept experiment of a history (its metric the mean of every run of its code), or null before a baseline succeeded. */
export function bestOf(history: ExperimentRecord[], m: Measurements): Best | null {
  const b = bestEstimate(history, m);
  return b && { commit: b.commit, state: b.state, metric: b.metric };
}

/**
 * The record of an experiment that produced nothing to run or nothing that ran (interrupted, or
 * a proposal given up): no diff, no metric, no run; `fields` says what it was and what it cost.
 */
function nothingRan(
  fields: Pick<ExperimentRecord, 'n' | 'parent_commit' | 'commit' | 'description' | 'status' | 'reason'> &
    Partial<ExperimentRecord>,
  best: { metric: number } | null,
  proposeS = 0,
): ExperimentRecord {
  return {
    type: 'experiment',
    ts: new Date().toISOString(),
    rationale: '',
    diff: '',
    lines_added: 0,
    lines_removed: 0,
    summary: {},
    metric: null,
    best_before: best?.metric ?? null,
    delta: null,
    memory_gb: 0,
    timings: { propose_s: proposeS, run_s: 0, total_s: proposeS },
    exit_code: null,
    signal: null,
    log_path: null,
    log_truncated: false,
    proposer: 'unknown',
    usage: { input_tokens: 0, output_tokens: 0, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 },
    cost_usd: 0,
    ...fields,
  };
}

/** The record of an experiment that never finished (the engine stopped or failed under it). */
export function interruptedRecord(
  start: ExperimentStartRecord,
  commit: string | null,
  best: Best | null,
  reason: string,
): ExperimentRecord {
  return nothingRan(
    {
      n: start.n,
      parent_commit: start.parent_commit,
      commit,
      description: start.description,
      status: 'interrupted',
      reason,
      ...(start.worker !== undefined ? { worker: start.worker } : {}),
      // How it searched (a plateau's branch, a prepared move), as its proposal was journaled.
      ...(start.proposal?.move ? { move: start.proposal.move } : {}),
    },
    best,
  );
}

/** A proposal given up before it made an edit worth running: rejected, never committed. */
export function abandonedRecord(
  n: number,
  best: Best,
  e: ProposalAbandoned,
  proposer: string,
  proposeS: number,
): ExperimentRecord {
  return nothingRan(
    {
      n,
      parent_commit: best.commit,
      commit: null,
      description: 'proposal abandoned',
      status: 'rejected',
      reason: e.message,
      proposer,
      usage: e.usage,
      cost_usd: e.cost_usd,
      ...(e.meta !== undefined ? { proposal_meta: e.meta } : {}),
    },
    best,
    proposeS,
  );
}

/** What a proposal that never ran had cost, and what it was if it got that far (a finished one's description). */
export interface Unrun {
  usage: Usage;
  cost_usd: number;
  meta?: unknown;
  description?: string;
  rationale?: string;
}

/** Whether a proposal was billed anything. */
export function billed(spent: Pick<Unrun, 'usage' | 'cost_usd'>): boolean {
  const u = spent.usage;
  return (
    spent.cost_usd > 0 ||
    u.input_tokens + u.output_tokens + u.cache_creation_input_tokens + u.cache_read_input_tokens > 0
  );
}

/**
 * A proposal paid for that never ran: the run stopped (or failed) while it was made, or ended
 * before a finished draft could run. Interrupted and never committed, like an experiment stopped
 * before its commit; it carries its usage and cost_usd so that the ledger (state.json's cost_usd,
 * --max-dollars) counts every billed token. It closes nothing in flight: a resume goes on after it.
 */
export function unrunRecord(
  n: number,
  parentCommit: string,
  best: Best | null,
  spent: Unrun,
  proposer: string,
  proposeS: number,
  reason: string,
): ExperimentRecord {
  return nothingRan(
    {
      n,
      parent_commit: parentCommit,
      commit: null,
      description: spent.description ?? 'proposal interrupted',
      rationale: spent.rationale ?? '',
      status: 'interrupted',
      reason,
      proposer,
      usage: { ...spent.usage },
      cost_usd: spent.cost_usd,
      ...(spent.meta !== undefined ? { proposal_meta: spent.meta } : {}),
    },
    best,
    proposeS,
  );
}

/** How an aborted run ended: `autoresearch stop` or a signal. */
export function stopReason(signal: AbortSignal): RunEndRecord['reason'] {
  return signal.reason === 'stop' ? 'stop' : 'signal';
}

/**
 * The experiments a run has made over all its sessions, as --max-experiments counts them: every
 * experiment that ran (kept, discarded or crashed) or was rejected, but the baseline. One the run
 * cut short (interrupted: stopped, or its engine killed) is not counted: a resume measures it on
 * or proposes again, and that one counts, so one idea never takes two of the run's experiments.
 */
export function experimentsMade(records: JournalRecord[]): number {
  const baselines = new Set(
    records.flatMap(r =>
      r.type === 'experiment_start' && r.proposal === undefined && r.description === 'baseline' ? [r.n] : [],
    ),
  );
  return records.filter(
    r => r.type === 'experiment' && r.status !== 'interrupted' && r.proposer !== 'baseline' && !baselines.has(r.n),
  ).length;
}
