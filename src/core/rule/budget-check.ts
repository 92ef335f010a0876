/**
 * Did a run train for the budget it was given? The engine passes every run its budget in
 * AUTORESEARCH_BUDGET_S, and the panel's strip and the terminal count that budget down. A
 * workspace that fixes its own (a prepare.py with `TIME_BUDGET = 60` hard-coded) makes the
 * countdown a lie and its results incomparable with the budget asked for; nothing fails, so
 * only the run's own `training_seconds` can tell.
 */

/** What a run's record gives the check (a journal RunRecord has these fields). */
export interface BudgetRun {
  summary: Record<string, number | string>;
  /** Null when the run crashed: a crash trains for as long as it lasted, which says nothing. */
  metric: number | null;
  log_path: string | null;
}

/**
 * The rule: a run honoured a budget of B seconds when its training_seconds T lies in
 * [B × 0.5, B × 1.5 + 5]. A loop that trains until the clock passes B stops within one step of
 * it: the step's time is a fraction of a second for a small model and can be seconds for a large
 * one at a short budget, or on a machine under load, hence the 50 % and the 5 s of slack on the
 * high side. A loop never stops early, but scripts count their clock differently (leaving out
 * compilation or the first steps), hence the wide floor. An ignored budget is off by a factor,
 * not a margin — 60 s trained for a budget of 10, or 60 for 300 — so both bounds catch it. A run
 * with no training_seconds (not a number, or not finite) tells nothing and passes.
 */
export function trainedOutside(budgetS: number, trainingSeconds: number): 'over' | 'under' | null {
  if (!(Number.isFinite(budgetS) && budgetS > 0) || !Number.isFinite(trainingSeconds)) return null;
  if (trainingSeconds > budgetS * 1.5 + 5) return 'over';
  if (trainingSeconds < budgetS * 0.5) return 'under';
  return null;
}

export interface BudgetWarning {
  /** One line for the terminal and the run's log. */
  message: string;
  /** The logs of the runs that ignored the budget. */
  logPaths: string[];
}

/** The one-line warning for an experiment whose runs ignored the budget, or null when every run that measured something honoured it. */
export function budgetWarning(budgetS: number, runs: BudgetRun[]): BudgetWarning | null {
  const off = runs.filter(r => {
    const t = r.summary.training_seconds;
    return r.metric !== null && typeof t === 'number' && trainedOutside(budgetS, t) !== null;
  });
  if (off.length === 0) return null;
  const t = off[0].summary.training_seconds as number;
  const measured = runs.filter(r => r.metric !== null).length;
  const which = measured > 1 ? ` (${off.length} of ${measured} runs)` : '';
  const message =
    `budget ignored: the run trained ${fmtSeconds(t)} s (its training_seconds) for a budget of ${fmtSeconds(budgetS)} s${which}; ` +
    'make train.py train for AUTORESEARCH_BUDGET_S seconds, or the budget shown is not the budget trained';
  return { message, logPaths: off.map(r => r.log_path).filter((p): p is string => p !== null) };
}

function fmtSeconds(s: number): string {
  return Number.isInteger(s) ? String(s) : s.toFixed(1);
}
