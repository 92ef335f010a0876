/**
 * Every stream the engine writes is whole: a reader on a pipe gets every byte, however slowly it
 * reads, on success and on error. Node writes to a pipe without blocking, so an engine that exits
 * as soon as it has written drops all the reader has not taken yet (an export stopped at 64 KiB).
 */
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { history, runStartRecord } from './helpers/records';
import { ENGINE, makeWorkspace, ROOT } from './helpers/workspace';

/** Bigger than a pipe's buffer many times over, as a real notebook of a long run is. */
const EXPERIMENTS = 2000;

/** Writes run t1 of `dir` as a journal of `count` experiments (what a long night leaves). */
function writeLongJournal(dir: string, count: number): void {
  const run = path.join(dir, '.autoresearch', 't1');
  fs.mkdirSync(run, { recursive: true });
  const records = [runStartRecord(), ...history(count)];
  fs.writeFileSync(path.join(run, 'journal.jsonl'), records.map(r => JSON.stringify(r)).join('\n') + '\n');
}

/**
 * A slow reader on both pipes, in a process of its own so nothing buffers for it: it starts the
 * command, waits until the command has long written all it will, then takes 4 KiB at a time with a
 * pause after each; it prints the exit code and the two streams' bytes as JSON (base64).
 */
const SLOW_READER = `
import base64, json, os, selectors, subprocess, sys, time
p = subprocess.Popen(sys.argv[1:], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
time.sleep(0.3)
got = {p.stdout.fileno(): b"", p.stderr.fileno(): b""}
sel = selectors.DefaultSelector()
for f in (p.stdout, p.stderr):
    sel.register(f.fileno(), selectors.EVENT_READ)
while sel.get_map():
    for key, _ in sel.select():
        chunk = os.read(key.fd, 4096)
        if chunk:
            got[key.fd] += chunk
        else:
            sel.unregister(key.fd)
    time.sleep(0.001)
code = p.wait()
print(json.dumps({"code": code, "stdout": base64.b64encode(got[p.stdout.fileno()]).decode(), "stderr": base64.b64encode(got[p.stderr.fileno()]).decode()}))
`;

/** A Python: the project's venv, else the system's. */
function python(): string {
  const venv = path.join(ROOT, '.venv', 'bin', 'python');
  return fs.existsSync(venv) ? venv : 'python3';
}

/** Runs the engine bundle with stdout and stderr on pipes that a slow reader drains. */
function engineThroughSlowPipes(args: string[]): { code: number; stdout: string; stderr: string } {
  const out = execFileSync(python(), ['-c', SLOW_READER, process.execPath, ENGINE, ...args], {
    cwd: ROOT,
    maxBuffer: 64 * 1024 * 1024,
    encoding: 'utf8',
  });
  const r = JSON.parse(out) as { code: number; stdout: string; stderr: string };
  const text = (b64: string) => Buffer.from(b64, 'base64').toString('utf8');
  return { code: r.code, stdout: text(r.stdout), stderr: text(r.stderr) };
}

/** A reader that takes a few bytes of stdout and goes away (as `| head` does); prints the exit code and stderr as JSON. */
const READER_GONE = `
import json, subprocess, sys, time
p = subprocess.Popen(sys.argv[1:], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
time.sleep(0.3)
p.stdout.read(10)
p.stdout.close()
err = p.stderr.read().decode()
print(json.dumps({"code": p.wait(timeout=60), "stderr": err}))
`;

describe('the engine flushes its output before it exits', () => {
  let dir: string;

  beforeAll(() => {
    dir = makeWorkspace();
    writeLongJournal(dir, EXPERIMENTS);
  });

  it(`export --out - of ${EXPERIMENTS} experiments reaches a slow reader whole`, () => {
    const r = engineThroughSlowPipes(['export', dir, '--tag', 't1', '--out', '-']);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(Buffer.byteLength(r.stdout)).toBeGreaterThan(1024 * 1024);
    const notebook = JSON.parse(r.stdout) as { cells: Array<{ id: string }> };
    expect(notebook.cells.filter(c => c.id.startsWith('experiment-'))).toHaveLength(EXPERIMENTS);
    // The same bytes as the file the engine writes.
    const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'ar-nb-')), 't1.ipynb');
    const written = engineThroughSlowPipes(['export', dir, '--tag', 't1', '--out', file]);
    expect(written.code, written.stderr).toBe(0);
    expect(r.stdout).toBe(fs.readFileSync(file, 'utf8'));
  });

  it('results --json of the same run is whole too', () => {
    const r = engineThroughSlowPipes(['results', dir, '--tag', 't1', '--json']);
    expect(r.code, r.stderr).toBe(0);
    expect(Buffer.byteLength(r.stdout)).toBeGreaterThan(1024 * 1024);
    const records = JSON.parse(r.stdout) as Array<{ type: string }>;
    expect(records.filter(x => x.type === 'experiment')).toHaveLength(EXPERIMENTS);
  });

  it('an error longer than a pipe holds reaches stderr whole, with exit 1', () => {
    // A path of 60,000 characters, named twice in the error: the message is 120 KB.
    const long = path.join(os.tmpdir(), 'ar-nowhere', 'a/'.repeat(30_000));
    const r = engineThroughSlowPipes(['export', long]);
    expect(r.code).toBe(1);
    expect(r.stdout).toBe('');
    expect(Buffer.byteLength(r.stderr)).toBeGreaterThan(100_000);
    expect(r.stderr).toMatch(/^autoresearch: no runs in \/.*a\/a yet; start one with: autoresearch run \/.*\n$/s);
  });

  it('a reader that goes away mid-stream ends the wait: the engine exits with its code, no EPIPE trace', () => {
    const out = execFileSync(
      python(),
      ['-c', READER_GONE, process.execPath, ENGINE, 'export', dir, '--tag', 't1', '--out', '-'],
      { cwd: ROOT, encoding: 'utf8' },
    );
    expect(JSON.parse(out)).toEqual({ code: 0, stderr: '' });
  });
});
