/**
 * What comes back from srun, split: srun's own lines while the job waits (one of them names the
 * job when it is queued), the run guard's start marker (the job left the queue: its id and node),
 * the run's output, the guard's end marker, then its report. Markers carry a nonce that reached
 * the guard on stdin, never argv, so a run cannot forge them; a marker split across chunks is
 * held back until whole.
 */
import { partialMarker } from '../subprocess';

/** Where each part goes. */
export interface SrunSink {
  /** Output for the run's log (srun's own lines included: "queued and waiting", "CANCELLED DUE TO TIME LIMIT"). */
  log(b: Buffer): void;
  /** srun said the job waits in the queue. */
  queued(id: string): void;
  /** The guard started, in job `id` on `node` (empty where it ran outside Slurm). */
  started(id: string, node: string): void;
}

/** srun's line for a job that has to wait: "srun: job 123 queued and waiting for resources". */
const QUEUED = /srun: job (\d+) queued and waiting for resources/;
/** The report after the end marker is a few hundred bytes; more is not the guard's. */
const REPORT_MAX = 64 * 1024;

export class SrunStream {
  private readonly start: Buffer;
  private readonly end: Buffer;
  private phase: 'queue' | 'run' | 'report' = 'queue';
  private outEnded = false;
  private held: Buffer[] = [Buffer.alloc(0), Buffer.alloc(0)];
  /** srun's own text before the start (bounded), searched for the queued line. */
  private before = '';
  private report = '';
  private queuedSaid = false;

  constructor(
    nonce: string,
    private readonly sink: SrunSink,
  ) {
    this.start = Buffer.from(`\0autoresearch-run-start ${nonce} `);
    this.end = Buffer.from(`\0autoresearch-run-end ${nonce}\0`);
  }

  /** Whether the guard started the run (its start marker came). */
  get running(): boolean {
    return this.phase !== 'queue';
  }

  /** Whether both streams reached the end marker: the guard finished the run. */
  get finished(): boolean {
    return this.phase === 'report' && this.outEnded;
  }

  /** The report's lines, once the end marker has come on stderr. */
  reportLines(): string[] {
    return this.report.split('\n').filter(l => l.trim());
  }

  /** A chunk of srun's stdout. */
  stdout(b: Buffer): void {
    if (this.outEnded) return;
    const { before, found, rest } = this.cut(0, b, this.end);
    if (before.length) this.sink.log(before);
    if (found) {
      this.outEnded = true;
      this.held[0] = Buffer.alloc(0);
    } else this.held[0] = rest;
  }

  /** A chunk of srun's stderr. */
  stderr(b: Buffer): void {
    if (this.phase === 'report') {
      if (this.report.length < REPORT_MAX) this.report += b.toString('utf8');
      return;
    }
    if (this.phase === 'queue') {
      const { before, found, rest } = this.cut(1, b, this.start);
      if (before.length) {
        this.sink.log(before);
        this.noteSrun(before.toString('utf8'));
      }
      if (!found) {
        this.held[1] = rest;
        return;
      }
      // The marker's id and node end at the next NUL and newline; wait for them if they have not come yet.
      const close = rest.indexOf('\0\n');
      if (close < 0) {
        this.held[1] = Buffer.concat([this.start, rest]);
        return;
      }
      const [id = '', node = ''] = rest.subarray(0, close).toString('utf8').split(' ');
      this.phase = 'run';
      this.held[1] = Buffer.alloc(0);
      this.sink.started(id, node);
      b = rest.subarray(close + 2);
    }
    const { before, found, rest } = this.cut(1, b, this.end);
    if (before.length) this.sink.log(before);
    if (found) {
      this.phase = 'report';
      this.held[1] = Buffer.alloc(0);
      this.report += rest.toString('utf8');
    } else this.held[1] = rest;
  }

  /** srun has exited: what was held back is output after all. */
  close(): void {
    for (const i of [0, 1]) {
      if (this.held[i].length && !(i === 1 && this.phase === 'report')) this.sink.log(this.held[i]);
      this.held[i] = Buffer.alloc(0);
    }
  }

  /**
   * Stream i's held bytes and `b`, cut at `marker`: what precedes it (all of it when it is absent,
   * less a tail that could begin it), whether it was found, and what follows it (or the tail held).
   */
  private cut(i: number, b: Buffer, marker: Buffer): { before: Buffer; found: boolean; rest: Buffer } {
    const all = Buffer.concat([this.held[i], b]);
    const at = all.indexOf(marker);
    if (at >= 0) return { before: all.subarray(0, at), found: true, rest: all.subarray(at + marker.length) };
    const upto = all.length - partialMarker(all, marker);
    return { before: all.subarray(0, upto), found: false, rest: all.subarray(upto) };
  }

  private noteSrun(text: string): void {
    const seen = this.before.length;
    if (seen < REPORT_MAX) this.before += text;
    // Only new text: the queued line is said once.
    const m = QUEUED.exec(this.before.slice(Math.max(0, seen - 80)));
    if (m && !this.queuedSaid) {
      this.queuedSaid = true;
      this.sink.queued(m[1]);
    }
  }

  /**
   * The job srun's own lines name before the run started (a job cancelled while its step was
   * launching: "StepId=43.0 aborted"), or null when they name none (the submission was refused).
   */
  namedJob(): string | null {
    return /\b(?:StepId=|STEP |job |jobid )(\d+)\b/.exec(this.before)?.[1] ?? null;
  }

  /** srun's last error line before the job started (why it could not submit), or null. */
  srunError(): string | null {
    const lines = this.before.split('\n').filter(l => /error/i.test(l));
    return lines.length ? lines[lines.length - 1].trim() : null;
  }
}
