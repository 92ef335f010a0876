/**
 * The one way the engine ends: after stdout and stderr have handed every byte to the OS.
 *
 * On Linux Node writes to a pipe without blocking: what the reader has not taken yet (past the
 * pipe's 64 KiB) waits in the stream's queue, and process.exit() drops it. An export piped to a
 * reader stopped at exactly 65,536 bytes, exit 0. Waiting here costs nothing when the queue is
 * empty (a file or a terminal is written synchronously) and waits as long as a slow reader takes.
 */

/** Resolves once everything written to `stream` so far has been handed to the OS (or the stream has failed or closed). */
export function flushed(
  stream: NodeJS.WritableStream & { writableLength?: number; destroyed?: boolean },
): Promise<void> {
  if (stream.destroyed || !stream.writableLength) return Promise.resolve();
  return new Promise(resolve => {
    // A reader that went away (EPIPE) ends the wait. Node calls the queued writes' callbacks before
    // it emits the 'error', so this listener stays on: unhandled, that error would crash the engine.
    stream.on('error', () => resolve());
    stream.once('close', () => resolve());
    // Writes complete in order: the callback of an empty write runs once all before it have.
    stream.write('', () => resolve());
  });
}

/** Ends the engine with `code` once stdout and stderr are flushed: every exit of the CLI goes through here. */
export async function exitAfterFlush(code: number): Promise<never> {
  await Promise.all([flushed(process.stdout), flushed(process.stderr)]);
  // process.exit, not a natural end: a kernel's websocket or a timer must not keep a finished engine alive.
  process.exit(code);
}
