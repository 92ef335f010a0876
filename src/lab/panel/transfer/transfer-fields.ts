/**
 * The transfer dialog's fields as POST transfer's request: plain functions (no DOM, no dialog),
 * so the rules are tested on their own.
 */
import type { ITransferRequest } from '../../api/transfer';

/** What the dialog's fields hold, as typed. */
export interface ITransferFields {
  env: string;
  budget: string;
  runs: string;
  ablate: boolean;
}

const ENV_KEY = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** The environment as the dialog shows it, one KEY=VALUE a line. */
export function envLines(env: Readonly<Record<string, string>>): string {
  return Object.entries(env)
    .map(([k, v]) => `${k}=${v}`)
    .join('\n');
}

/** The fields as a request, or what is wrong with them in words. */
export function parseTransferFields(f: ITransferFields): { request: ITransferRequest } | { error: string } {
  const env: Record<string, string> = {};
  for (const [i, raw] of f.env.split(/\r?\n/).entries()) {
    const line = raw.trim();
    if (!line || line.startsWith('#')) {
      continue;
    }
    const eq = line.indexOf('=');
    const key = eq > 0 ? line.slice(0, eq).trim() : '';
    if (!ENV_KEY.test(key)) {
      return { error: `line ${i + 1}: "${line}" is not KEY=VALUE (a name of letters, digits and _)` };
    }
    env[key] = line.slice(eq + 1).trim();
  }
  if (Object.keys(env).length === 0) {
    return { error: 'give the larger scale as at least one KEY=VALUE line (AUTORESEARCH_SCALE=2, say)' };
  }
  const request: ITransferRequest = { env };
  if (f.budget.trim()) {
    const budget = Number(f.budget);
    if (!Number.isFinite(budget) || budget <= 0) {
      return { error: `the budget must be a number of seconds above 0, not "${f.budget}"` };
    }
    request.budget_s = budget;
  }
  if (f.runs.trim()) {
    const runs = Number(f.runs);
    // A standard error needs two runs of each commit.
    if (!Number.isInteger(runs) || runs < 2) {
      return { error: `the runs must be a whole number of 2 or more, not "${f.runs}"` };
    }
    request.runs = runs;
  }
  if (f.ablate) {
    request.ablate = true;
  }
  return { request };
}
