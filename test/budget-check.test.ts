/** The rule that tells a run which ignored AUTORESEARCH_BUDGET_S (src/core/rule/budget-check.ts). */
import { describe, expect, it } from 'vitest';
import { budgetWarning, trainedOutside, type BudgetRun } from '../src/core/rule/budget-check';

const run = (
  training_seconds: number | string | undefined,
  metric: number | null = 1.0,
  log_path: string | null = '/logs/run-1.log',
): BudgetRun => ({
  summary: training_seconds === undefined ? { val_bpb: 1 } : { val_bpb: 1, training_seconds },
  metric,
  log_path,
});

describe('the budget check', () => {
  it('passes a loop that stops within a step of the budget, slow last steps included', () => {
    expect(trainedOutside(10, 10.2)).toBeNull();
    expect(trainedOutside(10, 20)).toBeNull(); // 10 × 1.5 + 5: a 10 s step at a 10 s budget
    expect(trainedOutside(1, 6.4)).toBeNull(); // the 5 s of slack matter at short budgets
    expect(trainedOutside(300, 150)).toBeNull();
  });

  it('catches a budget fixed in the workspace, on either side', () => {
    expect(trainedOutside(10, 60)).toBe('over'); // the issue: Budget 10 in the panel, prepare.py's 60 trained
    expect(trainedOutside(10, 20.1)).toBe('over');
    expect(trainedOutside(300, 60)).toBe('under'); // the other way round: the default 300 s, a template's 60
    expect(trainedOutside(300, 149.9)).toBe('under');
  });

  it('says nothing without evidence: no budget, no finite training_seconds', () => {
    expect(trainedOutside(0, 60)).toBeNull();
    expect(trainedOutside(10, NaN)).toBeNull();
    expect(trainedOutside(10, Infinity)).toBeNull();
  });

  it('one line for an experiment, naming the budget, what was trained and the fix; crashes and missing values pass', () => {
    expect(budgetWarning(10, [run(10.3), run(10.1)])).toBeNull();
    expect(budgetWarning(10, [run(60, null)])).toBeNull(); // a crash trains for as long as it lasted
    expect(budgetWarning(10, [run(undefined), run('n/a')])).toBeNull();
    const w = budgetWarning(10, [
      run(60, 1.0, '/logs/run-1.log'),
      run(10.2, 1.0, '/logs/run-2.log'),
      run(59.5, 1.0, null),
    ]);
    expect(w?.message).toBe(
      'budget ignored: the run trained 60 s (its training_seconds) for a budget of 10 s (2 of 3 runs); make train.py train for AUTORESEARCH_BUDGET_S seconds, or the budget shown is not the budget trained',
    );
    expect(w?.message).not.toContain('\n');
    expect(w?.logPaths).toEqual(['/logs/run-1.log']);
    expect(budgetWarning(2.5, [run(0.3)])?.message).toMatch(
      /^budget ignored: the run trained 0\.3 s \(its training_seconds\) for a budget of 2\.5 s; /,
    );
  });
});
