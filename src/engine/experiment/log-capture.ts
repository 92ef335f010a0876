/**
 * Captures a training run's output to a log file with bounded disk and memory:
 * the first `headBytes` go to the file as they arrive, after that only the
 * last `tailBytes` are kept (in memory) and appended when the run ends, with a
 * marker saying how much was left out. A 200 MB flood costs ~tailBytes of RAM.
 */
import * as fs from 'node:fs';

export const DEFAULT_HEAD_BYTES = 4 * 1024 * 1024;
export const DEFAULT_TAIL_BYTES = 1024 * 1024;

/**
 * The line a training script prints when its training is over and it evaluates (the tiny-cpu
 * template's `evaluating val_bpb …`): the run says so itself, so the engine need not guess from
 * the clock. A script that prints none stays `train` until it ends.
 */
const EVALUATING = /(?:^|[\r\n])[ \t]*evaluating\b/i;
/** How much of a line's start is kept across chunks to find the marker. */
const LINE_START = 64;

const LOSS = /\bloss\b[\s:=|]*([-+]?(?:\d+\.?\d*|\.\d+)(?:e[-+]?\d+)?)/gi;

export class LogCapture {
  private fd: number;
  private total = 0;
  /** The last tailBytes (or a little more) of all output, in arrival order. */
  private recent: Buffer[] = [];
  private recentSize = 0;
  private closed = false;
  /** The last `loss <number>` the script printed, for the live line. */
  lastLoss: number | null = null;
  /** Called once, when the script prints its `evaluating` line (EVALUATING). */
  onEvaluating: (() => void) | null = null;
  private evaluating = false;
  /** The start of the line being printed, while the marker may still come on it. */
  private lineStart = '';

  constructor(
    readonly file: string,
    private readonly headBytes = DEFAULT_HEAD_BYTES,
    private readonly tailBytes = DEFAULT_TAIL_BYTES,
  ) {
    // Without the sandbox a run can write .autoresearch/: a link or FIFO at the next log's name is
    // replaced (unlinked, then created exclusively), never written through nor waited on.
    fs.rmSync(file, { force: true });
    const { O_WRONLY, O_CREAT, O_EXCL, O_NOFOLLOW } = fs.constants;
    this.fd = fs.openSync(file, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0o644);
  }

  /** Takes one chunk of output. */
  write(chunk: Buffer): void {
    if (this.closed) {
      return;
    }
    this.scanLoss(chunk);
    this.scanEvaluating(chunk);
    const room = this.headBytes - this.total;
    if (room > 0) {
      fs.writeSync(this.fd, chunk, 0, Math.min(room, chunk.length));
    }
    this.total += chunk.length;
    this.recent.push(chunk);
    this.recentSize += chunk.length;
    while (this.recentSize - this.recent[0].length >= this.tailBytes) {
      this.recentSize -= (this.recent.shift() as Buffer).length;
    }
  }

  /** Whether the middle of the output was left out of the file. */
  get truncated(): boolean {
    return this.total > this.headBytes + this.tailBytes;
  }

  /** The end of the output (where the summary block is), up to tailBytes. */
  tailText(): string {
    return this.lastBytes(this.tailBytes).toString('utf8');
  }

  /** Appends what came after the head (its last tailBytes, after an omission marker) and closes the file. */
  close(): void {
    if (this.closed) {
      return;
    }
    const afterHead = this.total - this.headBytes;
    if (afterHead > 0) {
      const kept = this.lastBytes(Math.min(afterHead, this.tailBytes));
      if (afterHead > kept.length) {
        fs.writeSync(this.fd, `\n[autoresearch: ${afterHead - kept.length} bytes of output omitted]\n`);
      }
      fs.writeSync(this.fd, kept);
    }
    fs.closeSync(this.fd);
    this.closed = true;
  }

  private lastBytes(n: number): Buffer {
    const all = Buffer.concat(this.recent);
    return all.subarray(Math.max(0, all.length - n));
  }

  private scanEvaluating(chunk: Buffer): void {
    if (this.evaluating) {
      return;
    }
    // A flood must not cost a decode of every chunk: only one that holds the word (or a marker
    // cut in two, the line's start carried over with the chunk's first bytes) is read as text.
    const head = this.lineStart + chunk.subarray(0, LINE_START).toString('utf8');
    const holds = chunk.includes('valuating') || chunk.includes('VALUATING');
    if (EVALUATING.test(head) || (holds && EVALUATING.test(this.lineStart + chunk.toString('utf8')))) {
      this.evaluating = true;
      this.onEvaluating?.();
      return;
    }
    // Only a line's start can hold the marker: the rest of a long line is not kept.
    const end = Math.max(chunk.lastIndexOf(0x0a), chunk.lastIndexOf(0x0d));
    this.lineStart =
      end < 0 ? head.slice(0, LINE_START) : chunk.subarray(end + 1, end + 1 + LINE_START).toString('utf8');
  }

  private scanLoss(chunk: Buffer): void {
    // Only the end of a chunk matters for "the last loss"; scanning all of a flood would waste CPU.
    const text = chunk.subarray(Math.max(0, chunk.length - 4096)).toString('utf8');
    let m: RegExpExecArray | null;
    LOSS.lastIndex = 0;
    while ((m = LOSS.exec(text)) !== null) {
      this.lastLoss = Number(m[1]);
    }
  }
}
