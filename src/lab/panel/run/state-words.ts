/** The run's state in words, for the panel's strip and the status bar; no DOM, so testable anywhere. */
import type { TranslationBundle } from '@jupyterlab/translation';
import { fmtNoise, measuresNoise, noiseRuleOf } from '../../../core/rule/noise';
import { changeWords } from '../../../core/config/security-settings';
import { perMilliWords, perProposerWords, trustRunsWords } from '../../../core/rule/noise-words';
import type { IEstimateNow } from '../../renderer/runs-view';
import type { IInFlight, IRunStateFile } from './run-events';
import type { RunModel } from './run-model';

/** `3 runs`. */
export function runsWords(runs: number, trans: TranslationBundle): string {
  return trans._n('%1 run', '%1 runs', runs, runs);
}

/** The run's state in a few words: "#12 training", "#13 awaiting review", "proposing #13", "stopped (stop)". */
export function describeState(m: RunModel, trans: TranslationBundle): string {
  if (m.tag === null) {
    return trans.__('no runs yet');
  }
  if (m.study && !m.stopping) {
    return trans.__('transfer study running');
  }
  switch (m.state) {
    case 'running': {
      if (m.stopping) {
        return trans.__('stopping');
      }
      const pending = m.pending;
      if (pending) {
        return trans.__('#%1 awaiting review', pending.n);
      }
      const running = [...m.inFlight.values()].sort((a, b) => a.n - b.n);
      if (running.length === 0) {
        return trans.__('proposing #%1', m.experimentCount);
      }
      // An engine from before phases says none: each is "training", as it said then.
      if (running.length > 1 && running.every(f => !f.phase)) {
        return trans.__('%1 training', running.map(f => `#${f.n}`).join(', '));
      }
      return running.map(f => trans.__('#%1 %2', f.n, phaseWords(f, trans))).join(', ');
    }
    case 'starting':
      return trans.__('starting');
    case 'died':
      return trans.__('died (resumable)');
    case 'stopped':
      return m.runState?.end ? trans.__('stopped (%1)', m.runState.end.reason) : trans.__('stopped');
    default:
      return trans.__('connecting');
  }
}

/**
 * The run's figures as text, every one from the same run state (state.json as the engine last
 * wrote it): the best's estimate (the mean over every run of its code), its ± (σ/√runs), how
 * many runs, and σ with its degrees of freedom. The strip, the best's header, the chart's noise
 * line and the status bar all format these and nothing else, so at one moment they agree.
 */
export interface IRunFigures {
  best: {
    n: number;
    /** The estimate, 6 decimals. */
    metric: string;
    /** Its standard error (`0.1005`), null before σ is measured. */
    pm: string | null;
    runs: number;
  } | null;
  /** `0.1728`, null before any code ran twice. */
  sigma: string | null;
  df: number;
}

/** The figures of a run state (the panel's RunModel.runState); empty ones for none. */
export function runFigures(state: Pick<IRunStateFile, 'best' | 'sigma' | 'sigma_df'> | null): IRunFigures {
  const b = state?.best ?? null;
  const sigma = state?.sigma ?? null;
  return {
    best: b && {
      n: b.n,
      metric: b.metric.toFixed(6),
      pm: b.stderr !== null ? fmtNoise(b.stderr) : null,
      runs: b.runs,
    },
    sigma: sigma === null ? null : fmtNoise(sigma),
    df: state?.sigma_df ?? 0,
  };
}

/** The best's number and its figures for its own header (ExperimentList.setBestNow); null before a best. */
export function bestHeaderFigures(m: RunModel): { n: number; now: IEstimateNow } | null {
  const f = runFigures(m.runState);
  return (
    f.best && {
      n: f.best.n,
      now: { metric: f.best.metric, pm: f.best.pm, runs: f.best.runs, sigma: f.sigma, df: f.df },
    }
  );
}

/**
 * What an experiment in flight does, as its engine last wrote it into state.json (LivePhase):
 * `training`, `evaluating` (only once the run said so), `re-measuring the best`… An engine from
 * before phases says nothing: `training`, as it always said.
 */
export function phaseWords(f: IInFlight, trans: TranslationBundle): string {
  const phase = f.phase;
  switch (phase?.name) {
    case undefined:
      return trans.__('training');
    case 'apply':
      return trans.__('applying the edit');
    case 'review':
      return trans.__('awaiting review');
    case 'commit':
      return trans.__('committing');
    case 'judge':
      return trans.__('judging');
    case 'check':
      return trans.__('checking');
    case 'evaluate':
      return trans.__('evaluating');
    case 'queue':
      // Slurm holds the run: its job id, so `squeue -j` and `scontrol show job` find it.
      return phase.job ? trans.__('queued, Slurm job %1', phase.job.id) : trans.__('queued');
    case 'train': {
      const run = phase.run;
      switch (run?.purpose) {
        case 'noise':
          return trans.__('training, noise run %1', run.i);
        case 'confirm':
          return trans.__('training, confirming run %1', run.i);
        case 'best':
          return trans.__('re-measuring the best');
        default:
          return run && run.i > 1 ? trans.__('training, run %1', run.i) : trans.__('training');
      }
    }
  }
}

/**
 * The countdown of a training run, from when that run started (not the experiment) and the
 * budget it trains for: `{ used: 0.4, words: '37 s left' }`; null when the experiment is not
 * training (evaluating, judging, an engine that does not say).
 */
export function countdown(
  f: IInFlight | null,
  now: number,
  trans: TranslationBundle,
): { used: number; words: string } | null {
  const run = f?.phase?.name === 'train' ? f.phase.run : undefined;
  if (!run || !(run.budget_s > 0)) {
    return null;
  }
  const elapsed = Math.max(0, (now - Date.parse(run.started)) / 1000);
  const left = run.budget_s - elapsed;
  return {
    used: Math.min(1, elapsed / run.budget_s),
    // The script keeps training past the clock by its start-up time; it says when it evaluates.
    words: left > 0 ? trans.__('%1 s left', Math.ceil(left)) : trans.__('%1 s past the budget', Math.floor(-left)),
  };
}

/** `σ 0.0040 (4 df)`; null for a run that has not measured σ (or does not: from before repeats). */
export function describeSigma(m: RunModel, trans: TranslationBundle): string | null {
  const f = runFigures(m.runState);
  return f.sigma === null ? null : trans.__('σ %1 (%2 df)', f.sigma, f.df);
}

/** `0.982300 ± 0.0023`, the best's estimate and its ± as the strip, the header and the status bar write them. */
export function bestValueWords(best: NonNullable<IRunFigures['best']>): string {
  return best.pm !== null ? `${best.metric} ± ${best.pm}` : best.metric;
}

/**
 * The best and the noise for the status bar: `best 0.982300 ± 0.0023 · σ 0.0040 (4 df)`; a run
 * from before repeats keeps its `best 0.990000`. Empty before a best exists.
 */
export function describeBest(m: RunModel, trans: TranslationBundle): string {
  const b = runFigures(m.runState).best;
  if (!b) {
    return '';
  }
  const best = trans.__('best %1', bestValueWords(b));
  const sigma = describeSigma(m, trans);
  return sigma ? `${best} · ${sigma}` : best;
}

/** The strip's best: `best val_bpb 0.982300 ± 0.0023 (#4)`; empty before a best exists. */
export function describeStripBest(m: RunModel, trans: TranslationBundle): string {
  const b = runFigures(m.runState).best;
  return b ? trans.__('best %1 %2 (#%3)', m.metric, bestValueWords(b), b.n) : '';
}

/**
 * The noise line above the chart: σ, the best as mean ± se over its runs, and what trust cost
 * (runs on measurement and confirmation of all runs; accelerator minutes and dollars per 0.001
 * gained, by proposer), all as the engine's state file says. Empty for a run from before repeats.
 */
export function describeNoise(m: RunModel, trans: TranslationBundle): string[] {
  const t = m.trust;
  if (!t) {
    return [];
  }
  // The original's strict rule (noise_runs 1, or a config from before the rule: noiseRuleOf says
  // which): nothing is measured twice, so there is no σ to wait for and no trust to cost; saying
  // "σ not measured yet" and "0.0 accelerator-min" misled.
  const config = m.runStart?.config;
  const strict = config !== undefined && !measuresNoise(noiseRuleOf(config));
  const head = [
    strict
      ? trans.__('strict rule (noise_runs 1): any improvement counts, σ is not measured')
      : (describeSigma(m, trans) ?? trans.__('σ not measured yet')),
  ];
  const b = runFigures(m.runState).best;
  if (b) {
    head.push(trans.__('best %1 %2 (%3) (#%4)', m.metric, bestValueWords(b), runsWords(b.runs, trans), b.n));
  }
  if (strict) {
    return [head.join(' · ')];
  }
  const cost = [trustRunsWords(t), perMilliWords(t)];
  const proposers = perProposerWords(t);
  // One proposer's figure is the total's; name them only when there is a comparison to make.
  if (proposers.length > 1) {
    cost.push(proposers.join('; '));
  }
  return [head.join(' · '), `${trans.__('trust:')} ${cost.join(' · ')}`];
}

/**
 * Whether the run's training runs are sandboxed, as its last run found it: the words for the
 * strip and a tooltip; null before a run says (or for journals from before the run guard).
 */
export function describeSandbox(
  m: RunModel,
  trans: TranslationBundle,
): { words: string; title: string; on: boolean; changed?: string } | null {
  const sandbox = m.sandbox;
  const changed = unacceptedChanges(m, trans);
  if (sandbox === null) {
    return changed ? { words: changed.words, title: changed.title, on: false, changed: changed.title } : null;
  }
  const said = describeSandboxWord(sandbox, trans);
  return changed
    ? {
        ...said,
        words: `${said.words} · ${changed.words}`,
        title: `${changed.title}\n\n${said.title}`,
        changed: changed.title,
      }
    : said;
}

/**
 * The security settings this run started with that differ from the workspace's latest run and
 * that nobody accepted (they came from program.md, which a run without the sandbox can write):
 * shown loudly, as the engine's terminal does.
 */
function unacceptedChanges(m: RunModel, trans: TranslationBundle): { words: string; title: string } | null {
  const changed = m.runStart?.settings_changed;
  if (!changed || changed.accepted) return null;
  return {
    words: trans.__('settings changed'),
    title: trans.__(
      'Security settings differ from run %1: %2. A training run without the sandbox can edit program.md: check that these are your changes.',
      changed.since,
      changed.changes.map(changeWords).join('; '),
    ),
  };
}

function describeSandboxWord(
  sandbox: 'on' | 'off',
  trans: TranslationBundle,
): { words: string; title: string; on: boolean } {
  return sandbox === 'on'
    ? {
        words: trans.__('sandboxed'),
        title: trans.__(
          'Training runs are in a bubblewrap sandbox: .git, .autoresearch and the read-only files cannot change, no secrets, no network unless program.md allows it.',
        ),
        on: true,
      }
    : {
        words: trans.__('not sandboxed'),
        title: trans.__(
          "Training runs have your rights (but no API key or server token): the first line of each run's log says why the sandbox is off.",
        ),
        on: false,
      };
}
