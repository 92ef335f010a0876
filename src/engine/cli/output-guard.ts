/**
 * The one place the CLI's output is made printable: once guarded, every write to stdout and
 * stderr (ours, commander's, a library's console) goes through printable(), so nothing a run, a
 * journal or a model wrote can drive the terminal. The engine's own control sequences (the live
 * line's \r and erase-line) go around it through writeControl().
 */
import { StringDecoder } from 'node:string_decoder';
import { printable } from '../../core/views/printable';

type Write = (chunk: string) => boolean;
/** Each guarded stream's own write, for the engine's control sequences. */
const raw = new WeakMap<NodeJS.WritableStream, Write>();

/** Makes every later write to process.stdout and process.stderr printable (the CLI's entry calls it once). */
export function guardOutput(): void {
  guard(process.stdout);
  guard(process.stderr);
}

/** Writes the engine's own control sequence `seq` to `out`, around the guard. */
export function writeControl(out: NodeJS.WritableStream, seq: string): void {
  const write = raw.get(out);
  if (write) write(seq);
  else out.write(seq);
}

function guard(stream: NodeJS.WriteStream): void {
  if (raw.has(stream)) return;
  const write = stream.write.bind(stream) as (chunk: string, encoding: BufferEncoding, cb?: unknown) => boolean;
  raw.set(stream, chunk => write(chunk, 'utf8'));
  // Bytes are decoded as they come: a character split between two writes is still one character.
  const decoder = new StringDecoder('utf8');
  stream.write = ((chunk: string | Uint8Array, encoding?: unknown, cb?: unknown) => {
    if (typeof encoding === 'function') [cb, encoding] = [encoding, undefined];
    const text =
      typeof chunk !== 'string'
        ? decoder.write(Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength))
        : encoding === undefined || encoding === 'utf8' || encoding === 'utf-8'
          ? chunk
          : Buffer.from(chunk, encoding as BufferEncoding).toString('utf8');
    return write(printable(text), 'utf8', cb);
  }) as typeof stream.write;
}
