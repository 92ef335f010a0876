/**
 * view_run_log: a past run's log for the model, only what the journal names, only under
 * .autoresearch/, never through a link, bounded; on a real run's journal, and through the real
 * SDK against the Messages API stand-in.
 */
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { ExperimentRecord } from '../src/core/journal/journal';
import { ClaudeProposer } from '../src/engine/proposers/claude/proposer';
import { systemText } from '../src/engine/proposers/claude/prompt';
import { DEFAULT_TAIL, MAX_BYTES, MAX_LINES, stateDirOf, viewRunLog } from '../src/engine/proposers/claude/run-log';
import { resolvePython } from '../src/engine/workspace/python';
import { cli, experiments, makeWorkspace, STAND_IN_PROGRAM, standInTrain } from './helpers/workspace';
import { MessagesApiServer } from './stand-ins/messages-api';

const KEY = 'sk-ant-api03-SECRETsecret_0123456789abcdef';
/** A stand-in train.py that prints 300 numbered training lines before its summary. */
const TRAIN = standInTrain().replace(
  'print("step 1 | loss 3.2500", flush=True)',
  'for i in range(1, 301): print(f"step {i} | loss {3 + 1 / i:.4f} | 20 ms", flush=True)',
);
let dir: string;
let history: ExperimentRecord[];

beforeAll(async () => {
  dir = makeWorkspace({ train: TRAIN, program: STAND_IN_PROGRAM });
  const r = await cli(['run', dir, '--tag', 'logs', '--max-experiments', '1', '--proposer', 'offline']);
  expect(r.code).toBe(0);
  history = experiments(dir, 'logs');
}, 120_000);

const view = (input: unknown, h = history) => viewRunLog(dir, h, input);

describe('view_run_log', () => {
  it("shows a real run's last lines, a numbered range, and the runs of a multi-run record", () => {
    const tail = view({ n: 0 });
    expect(tail.isError).toBe(false);
    expect(tail.content).toMatch(
      new RegExp(
        `^#0 run 1 of 3, \\.autoresearch/logs/logs/0000\\.log \\(\\d+ bytes\\): its last ${DEFAULT_TAIL} line\\(s\\):\\n`,
      ),
    );
    expect(tail.content).toContain('step 300 | loss 3.0033 | 20 ms\n---\nval_bpb:');
    const range = view({ n: 1, range: [2, 4] });
    expect(range.content).toMatch(
      /: lines 2–4:\n {5}2\tstep 1 \| loss 4\.0000 \| 20 ms\n {5}3\tstep 2 \| loss 3\.5000 \| 20 ms\n {5}4\tstep 3 \| loss 3\.3333/,
    );
    expect(view({ n: 0, tail_lines: 3 }).content.split('\n')).toHaveLength(4);
    const runs = history[0].runs ?? [];
    expect(view({ n: 0, run: runs.length + 1 })).toMatchObject({
      isError: true,
      content: `#0 has ${runs.length} run(s); run is 1 to ${runs.length}`,
    });
  });

  it('is bounded: at most MAX_LINES lines and MAX_BYTES bytes a call, long lines cut', () => {
    const many = view({ n: 0, tail_lines: 1000 });
    expect(many.content.split('\n').length - 1).toBe(MAX_LINES);
    const wide = view({ n: 0, range: [1, 1000] });
    expect(wide.content).toMatch(/lines 1–200 \(at most 200 lines a call: ask for the rest next\)/);
    // A flooded log of long lines: the bytes bound holds, each line cut.
    const logs = path.join(dir, '.autoresearch', 'logs', 'logs');
    fs.writeFileSync(path.join(logs, 'wide.log'), `${'y'.repeat(1500)}\n`.repeat(100));
    const h = [{ ...history[0], runs: undefined, log_path: path.join(logs, 'wide.log') }];
    const cut = view({ n: 0, tail_lines: 100 }, h);
    expect(Buffer.byteLength(cut.content)).toBeLessThan(MAX_BYTES + 300);
    expect(cut.content).toMatch(/line cut at 1000 characters/);
    expect(cut.content).toMatch(/were left out: 16384 bytes a call/);
    expect(view({ n: 0, range: [500, 510] }, h)).toMatchObject({
      isError: true,
      content: expect.stringMatching(/starts past the end of the log, which has 100 whole line/),
    });
  });

  it('refuses a path outside .autoresearch/, a planted link, a link on the way, a FIFO, and bad input, each in words', () => {
    const rec = (log_path: string | null) => [{ ...history[0], runs: undefined, log_path }];
    fs.writeFileSync(path.join(dir, 'secret.txt'), 'SECRET');
    expect(view({ n: 0 }, rec(path.join(dir, 'secret.txt'))).content).toMatch(
      /is not under the workspace's \.autoresearch\/; the tool reads only logs there/,
    );
    expect(view({ n: 0 }, rec(path.join(dir, '.autoresearch', '..', 'secret.txt'))).isError).toBe(true);
    const logs = path.join(dir, '.autoresearch', 'logs', 'logs');
    fs.symlinkSync(path.join(dir, 'secret.txt'), path.join(logs, 'planted.log'));
    const link = view({ n: 0 }, rec(path.join(logs, 'planted.log')));
    expect(link).toMatchObject({ isError: true });
    expect(link.content).toMatch(/planted\.log is a symbolic link \(a run may have planted it\)/);
    expect(link.content).not.toContain('SECRET');
    // A folder on the way that leads out: .autoresearch/away -> the workspace's parent.
    fs.symlinkSync(dir, path.join(dir, '.autoresearch', 'away'));
    const away = view({ n: 0 }, rec(path.join(dir, '.autoresearch', 'away', 'secret.txt')));
    expect(away.content).toMatch(/\.autoresearch\/away is a symbolic link/);
    execFileSync('mkfifo', [path.join(logs, 'fifo.log')]);
    expect(view({ n: 0 }, rec(path.join(logs, 'fifo.log'))).content).toMatch(/is not a regular file/);
    expect(view({ n: 99 })).toMatchObject({ isError: true, content: expect.stringMatching(/no experiment #99/) });
    expect(view({ n: 0 }, rec(null)).content).toMatch(/has no log/);
    expect(view({ n: 'zero' }).content).toMatch(/^view_run_log needs n/);
    expect(view({ n: 0, tail_lines: 5, range: [1, 2] }).content).toBe('give tail_lines or range, not both');
  });

  it("finds the state folder of a worker's worktree", () => {
    expect(stateDirOf('/w/.autoresearch/t/worktrees/w2')).toBe('/w/.autoresearch');
    expect(stateDirOf('/w')).toBe('/w/.autoresearch');
  });
});

describe('view_run_log through the real SDK', () => {
  let server: MessagesApiServer;
  beforeEach(async () => {
    server = await MessagesApiServer.start({ apiKey: KEY });
  });
  afterEach(() => server.close());

  it('is offered with the other tools, named in the system text, and answers with the log', async () => {
    const call = (name: string, input: unknown) => ({ type: 'tool_use' as const, name, input });
    server.enqueue(
      { type: 'message', content: [call('view_run_log', { n: 0, tail_lines: 5 }), call('view_run_log', { n: 7 })] },
      {
        type: 'message',
        content: [
          call('str_replace_based_edit_tool', {
            command: 'str_replace',
            path: 'train.py',
            old_str: 'LEARNING_RATE = 0.001',
            new_str: 'LEARNING_RATE = 0.002',
          }),
          call('finish_experiment', {
            description: 'raise the learning rate',
            rationale: 'the loss is flat by step 300',
            expected_delta: -0.01,
          }),
        ],
      },
    );
    const proposer = new ClaudeProposer({
      apiKey: KEY,
      baseURL: server.url,
      python: resolvePython(),
      backoff: { baseMs: 5, maxMs: 20 },
    });
    const ctx = {
      workdir: dir,
      files: { 'train.py': TRAIN },
      history,
      program: 'Make val_bpb lower.',
      metric: 'val_bpb',
      direction: 'lower' as const,
      seed: 0,
    };
    const p = await proposer.propose(ctx);
    expect(p.description).toBe('raise the learning rate');
    const requests = server.requests.filter(r => r.path.startsWith('/v1/messages'));
    const tools = requests[0].body.tools.map((t: { name: string }) => t.name);
    expect(tools).toContain('view_run_log');
    expect(systemText(ctx)).toContain('view_run_log reads a past experiment');
    const answers = requests[1].body.messages.at(-1).content;
    expect(answers[0]).toMatchObject({ type: 'tool_result', content: expect.stringContaining('its last 5 line(s):') });
    expect(answers[0].content).toContain('val_bpb:');
    expect(answers[0].is_error).toBeUndefined();
    expect(answers[1]).toMatchObject({ is_error: true, content: expect.stringMatching(/no experiment #7/) });
    expect(p.meta).toMatchObject({ failed_edits: 0 });
  });
});
