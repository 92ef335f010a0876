/**
 * A training run and the model both write text the CLI prints: the summary block, a crash's last
 * error line, the description. None of it may drive the terminal (clear it, write the clipboard
 * with OSC 52, overwrite a line with \r, or speak C1): `run`, `status`, `results` and `export`
 * show every control character as a visible `\uXXXX` (src/core/views/printable.ts), and the engine's
 * own live line keeps its `\r` and erase-line.
 */
import { execFile } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { printable } from '../../src/core/views/printable';
import { resolvePython } from '../../src/engine/workspace/python';
import { cli, ENGINE, experiments, makeWorkspace, type CliResult } from '../helpers/workspace';
import { MessagesApiServer } from '../stand-ins/messages-api';

/** What a terminal acts on: C0 controls (but \t and \n), DEL and C1. */
const CONTROL = /[\x00-\x08\x0b-\x1f\x7f-\x9f]/;
const CLEAR = '\x1b[2J';
const CLIPBOARD = '\x1b]52;c;ZXZpbA==\x07';
const C1 = '\x9b31m';

/**
 * train.py by MODE: 0 measures; 1 prints a summary whose metric clears the screen, writes the
 * clipboard and speaks C1; 2 crashes with an error line that \r-overwrites itself.
 */
const TRAIN = [
  'import sys',
  'MODE = 0',
  'print("step 1 | loss 3.2500", flush=True)',
  'if MODE == 2:',
  '    sys.stderr.buffer.write(b"RuntimeError: out of memory\\r\\x1b[2Kall good, nothing to see\\n")',
  '    sys.exit(1)',
  'metric = b"\\x1b[2J\\x1b]52;c;ZXZpbA==\\x07\\xc2\\x9b31m" if MODE == 1 else b"1.000000"',
  'sys.stdout.buffer.write(b"---\\nval_bpb: " + metric + b"\\ntraining_seconds: 0.5\\n")',
  '',
].join('\n');

/** A claude turn that sets MODE and describes the experiment in the model's words. */
function turn(mode: number, description: string) {
  return {
    type: 'message' as const,
    content: [
      {
        type: 'tool_use' as const,
        name: 'str_replace_based_edit_tool',
        input: { command: 'str_replace', path: 'train.py', old_str: 'MODE = 0', new_str: `MODE = ${mode}` },
      },
      {
        type: 'tool_use' as const,
        name: 'finish_experiment',
        input: { description, rationale: 'r', expected_delta: -0.01 },
      },
    ],
  };
}

function expectPrintable(r: CliResult, what: string): void {
  for (const [stream, text] of [
    ['stdout', r.stdout],
    ['stderr', r.stderr],
  ]) {
    const found = CONTROL.exec(text);
    expect(found, `${what} ${stream} holds ${JSON.stringify(found?.[0])}: ${JSON.stringify(text)}`).toBeNull();
  }
}

let server: MessagesApiServer;
let dir: string;
let run: CliResult;
beforeAll(async () => {
  server = await MessagesApiServer.start();
  server.enqueue(
    turn(1, `${CLEAR}${CLIPBOARD} wider ${C1}`),
    turn(2, `\x9b2J deeper \x1b]52;c;cm0gLXJmIH4=\x07\x1b[8m`),
  );
  dir = makeWorkspace({ train: TRAIN });
  run = await cli(['run', dir, '--tag', 'esc', '--max-experiments', '2', '--noise-runs', '1', '--no-pipeline'], {
    env: { ANTHROPIC_API_KEY: server.apiKey, ANTHROPIC_BASE_URL: server.url, AUTORESEARCH_PYTHON: resolvePython() },
  });
});
afterAll(() => server.close());

describe('control characters from a run, a journal or a model never reach the terminal raw', () => {
  it('a summary metric that clears the screen, writes the clipboard (OSC 52) and speaks C1 is shown, not obeyed, by run, status and results', async () => {
    expect(run.code, run.stderr).toBe(0);
    const [, first, second] = experiments(dir, 'esc');
    // The journal keeps what was printed; only the terminal is spared it.
    expect(first.reason).toContain(`${CLEAR}${CLIPBOARD}\x9b31m`);
    expect(first.description).toContain(CLIPBOARD);
    expect(second.reason).toContain('\r\x1b[2Kall good');
    expectPrintable(run, 'run');
    expect(run.stdout).toContain('\\u001b[2J\\u001b]52;c;ZXZpbA==\\u0007\\u009b31m');
    for (const args of [['status'], ['results'], ['results', '--tsv']]) {
      const r = await cli([...args, dir, ...(args[1] === '--tsv' ? [] : ['--tag', 'esc'])]);
      expect(r.code, r.stderr).toBe(0);
      expectPrintable(r, args.join(' '));
    }
  });

  it('a \\r overwrite in a crash line cannot hide the crash: results shows the \\r', async () => {
    const r = await cli(['results', dir, '--tag', 'esc']);
    expect(r.stdout).toContain('RuntimeError: out of memory\\u000d\\u001b[2Kall good');
    expectPrintable(r, 'results');
  });

  it('a C1 or OSC description from the model comes out of results --json and export - as the same JSON, escaped', async () => {
    const json = await cli(['results', dir, '--tag', 'esc', '--json']);
    expectPrintable(json, 'results --json');
    // \u009b in a JSON string is the character itself: escaping loses nothing for a program that parses it.
    const parsed = JSON.parse(json.stdout) as Array<{ description: string; reason: string | null }>;
    expect(parsed.map(e => e.description)).toEqual(experiments(dir, 'esc').map(e => e.description));
    const nb = await cli(['export', dir, '--tag', 'esc', '--out', '-']);
    expect(nb.code, nb.stderr).toBe(0);
    expectPrintable(nb, 'export --out -');
    expect(JSON.stringify(JSON.parse(nb.stdout))).toContain(JSON.stringify(`\x9b2J deeper`).slice(1, -1));
  });

  it('on a terminal (a pty), the only control sequence run prints is its own live line: \\r and erase-line', async () => {
    server.enqueue(turn(1, `${CLEAR}${CLIPBOARD} again ${C1}`));
    const ws = makeWorkspace({ train: TRAIN });
    const log = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'ar-pty-')), 'typescript');
    const command = [process.execPath, ENGINE, 'run', ws, '--tag', 'pty', '--max-experiments', '1', '--noise-runs', '1']
      .map(a => `'${a}'`)
      .join(' ');
    const env = {
      ANTHROPIC_API_KEY: server.apiKey,
      ANTHROPIC_BASE_URL: server.url,
      AUTORESEARCH_PYTHON: resolvePython(),
    };
    // Not execFileSync: the Messages API stand-in answers from this process's event loop.
    await promisify(execFile)('script', ['-qfec', command, log], {
      env: { ...process.env, ...env, COLUMNS: '200' },
      timeout: 90_000,
    });
    // script's own header and footer lines frame the session; the pty turns \n into \r\n.
    const text = fs
      .readFileSync(log, 'utf8')
      .split('\n')
      .filter(l => !/^Script (started|done) on /.test(l))
      .join('\n')
      .replace(/\r\n/g, '\n');
    const own = text.replace(/\r\x1b\[2K/g, '');
    expect(text).toMatch(/\r\x1b\[2K/);
    expect(CONTROL.exec(own), JSON.stringify(text)).toBeNull();
    expect(experiments(ws, 'pty')).toHaveLength(2);
  });
});

describe('printable', () => {
  it('shows C0 (but \\t and \\n), DEL and C1 as \\uXXXX, and leaves the rest of Unicode alone', () => {
    expect(printable('a\tb\nc\r\x1b[2J\x07\x7f\x80\x9f\xa0é█')).toBe(
      'a\tb\nc\\u000d\\u001b[2J\\u0007\\u007f\\u0080\\u009f\xa0é█',
    );
    expect(printable(printable('\x1b'))).toBe('\\u001b');
  });
});
