/**
 * What a run shows in a terminal: a live line for the experiment in progress
 * (phase, a bar of the time left in the budget, the last loss the script
 * printed) and one line per finished experiment. Redirected to a file or a
 * pipe, it writes the plain lines only.
 */
import type { ExperimentRecord } from '../../core/journal/journal';
import { fmtNoise } from '../../core/rule/noise';
import { fmtDelta, fmtMetric } from '../../core/views/bundle';
import { printable } from '../../core/views/printable';
import type { LogCapture } from '../experiment/log-capture';
import type { Loop } from '../run/setup';
import { writeControl } from './output-guard';

const BAR_WIDTH = 20;
/** Phases in which a training run is going: the first run, the baseline's noise runs, confirmations, a re-measure of the best. */
const RUN_PHASES = new Set(['run', 'noise', 'confirm', 'best']);

/** `±0.0021 ×3`: the standard error of a mean and its runs; blank for a single strict run. */
export function fmtSpread(r: ExperimentRecord): string {
  const runs = r.runs?.filter(x => x.metric !== null).length ?? 0;
  const se = r.verdict?.se;
  if (runs <= 1 && !se) return '';
  return `${se ? `±${fmtNoise(se)}` : ''}${runs > 1 ? ` ×${runs}` : ''}`.trim();
}

/** One line for a finished experiment: number, status, metric (± its standard error, × runs), delta vs best, description (and the verdict). */
export function experimentLine(r: ExperimentRecord): string {
  return `${experimentHead(r)}  ${experimentTail(r)}`;
}

/** What follows the head: the spread (when measured more than once), the worker, the description and why. */
export function experimentTail(r: ExperimentRecord, spreadColumn = false): string {
  const noisy = r.verdict && !r.verdict.strict && r.reason && (r.status === 'keep' || r.status === 'discard');
  const what =
    r.status === 'crash' || r.status === 'rejected' || r.status === 'interrupted' || noisy
      ? `${r.description} (${r.reason ?? ''})`
      : r.description;
  // With several workers, which one ran it, as a column of its own before the description.
  const worker = r.worker !== undefined ? `w${r.worker}`.padEnd(4) : '';
  const spread = fmtSpread(r);
  return `${spread || spreadColumn ? `${spread.padEnd(SPREAD_WIDTH)}  ` : ''}${worker}${what}`;
}

/** The fixed-width start of an experiment's line: number, status, metric, delta. */
export function experimentHead(r: ExperimentRecord): string {
  return `#${String(r.n).padStart(3)}  ${r.status.padEnd(11)} ${fmtMetric(r.metric).padStart(10)}  ${fmtDelta(r.delta).padStart(10)}`;
}

/** Width of the `±se ×runs` column (present when a run measured something more than once). */
export const SPREAD_WIDTH = 12;

interface Live {
  n: number;
  phase: string;
  description: string;
  log?: LogCapture;
  startedAt?: number;
  budgetS?: number;
}

/** Back to the start of the line and erase it: the live line's own control sequence. */
const CLEAR_LINE = '\r\x1b[2K';

/** Renders a loop's events to a stream. */
export class TerminalReporter {
  private timer: NodeJS.Timeout | null = null;
  private live: Live | null = null;
  /** With several workers: each one's experiment, shown side by side on the live line. */
  private readonly lanes = new Map<number, Live>();
  private readonly tty: boolean;

  constructor(private readonly out: NodeJS.WriteStream) {
    this.tty = Boolean(out.isTTY);
  }

  /** Subscribes to a loop. */
  attach(loop: Loop): void {
    loop.on('phase', (n: number, phase: string, description: string, worker?: number) => {
      if (worker !== undefined) {
        const lane = this.lanes.get(worker);
        this.lanes.set(worker, lane?.n === n ? Object.assign(lane, { phase, description }) : { n, phase, description });
        this.draw();
        return;
      }
      if (this.live?.n !== n) {
        this.live = { n, phase, description };
      }
      Object.assign(this.live, { phase, description });
      this.draw();
    });
    loop.on('run-start', (n: number, log: LogCapture, startedAt: number, budgetS: number, worker?: number) => {
      if (worker !== undefined) {
        this.lanes.set(worker, {
          n,
          phase: 'run',
          description: this.lanes.get(worker)?.description ?? '',
          log,
          startedAt,
          budgetS,
        });
      } else {
        // A repeat keeps its phase (noise, confirm, best) so the live line says which run this is.
        const phase = this.live?.n === n && RUN_PHASES.has(this.live.phase) ? this.live.phase : 'run';
        this.live = { n, phase, description: this.live?.description ?? '', log, startedAt, budgetS };
      }
      if (this.tty && !this.timer) {
        this.timer = setInterval(() => this.draw(), 500);
      }
    });
    loop.on('experiment', (r: ExperimentRecord) => {
      if (r.worker !== undefined && this.lanes.get(r.worker)?.n === r.n) {
        this.lanes.delete(r.worker);
      }
      this.live = null;
      this.print(experimentLine(r));
    });
  }

  /** Prints a plain line above the live line. */
  print(line: string): void {
    if (this.tty) {
      writeControl(this.out, CLEAR_LINE);
    }
    this.out.write(line + '\n');
    this.draw();
  }

  /** Stops the live line. */
  close(): void {
    if (this.timer) {
      clearInterval(this.timer);
      this.timer = null;
    }
    if (this.tty) {
      writeControl(this.out, CLEAR_LINE);
    }
  }

  private draw(): void {
    if (!this.tty || (!this.live && this.lanes.size === 0)) {
      return;
    }
    const width = this.out.columns || 100;
    let line: string;
    if (this.lanes.size) {
      // Several workers: each one's number, phase (a shorter bar) and time left, side by side.
      line = [...this.lanes]
        .sort(([a], [b]) => a - b)
        .map(([k, l]) => `w${k} #${l.n} ${statusOf(l, BAR_WIDTH / 2)}`)
        .join('  │  ');
    } else {
      const live = this.live as Live;
      line = `#${String(live.n).padStart(3)}  ${statusOf(live, BAR_WIDTH)}  ${live.description}`;
    }
    writeControl(this.out, CLEAR_LINE);
    // Made printable before it is cut, so the line still fits the terminal's width.
    this.out.write(printable(line).slice(0, width - 1));
  }
}

/** The phase of an experiment; while it runs, a bar of the budget, the time left and the last loss. */
function statusOf(live: Live, barWidth: number): string {
  const { phase, log, startedAt, budgetS } = live;
  if (!RUN_PHASES.has(phase) || startedAt === undefined || !budgetS) {
    return phase;
  }
  const elapsed = (Date.now() - startedAt) / 1000;
  const filled = Math.round(Math.min(1, elapsed / budgetS) * barWidth);
  const left = Math.max(0, budgetS - elapsed);
  let status = `${phase} [${'█'.repeat(filled)}${'░'.repeat(barWidth - filled)}] ${left.toFixed(0)}s left`;
  if (log?.lastLoss !== null && log?.lastLoss !== undefined) {
    status += ` · loss ${log.lastLoss.toPrecision(5)}`;
  }
  return status;
}
