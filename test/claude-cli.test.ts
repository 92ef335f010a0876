/** The claude proposer through `autoresearch run`: --effort and the run's facts reach the model. */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { resolvePython } from '../src/engine/workspace/python';
import { cli, experiments, journal, makeWorkspace } from './helpers/workspace';
import { MessagesApiServer } from './stand-ins/messages-api';

let server: MessagesApiServer;
beforeEach(async () => {
  server = await MessagesApiServer.start();
});
afterEach(() => server.close());

describe('autoresearch run --proposer claude', () => {
  it("sends the effort of --effort (over program.md) or else program.md's, states the budget, the files and what is left, and records it", async () => {
    const dir = makeWorkspace({ program: '---\nbudget_s: 1\ntimeout_s: 20\neffort: low\n---\nMake val_bpb lower.\n' });
    server.enqueue({
      type: 'message',
      content: [
        { type: 'thinking', thinking: 'Deeper, since the history is empty.' },
        {
          type: 'tool_use',
          name: 'str_replace_based_edit_tool',
          input: { command: 'str_replace', path: 'train.py', old_str: 'N_LAYER = 4', new_str: 'N_LAYER = 6' },
        },
        {
          type: 'tool_use',
          name: 'finish_experiment',
          input: { description: 'deeper', rationale: 'r', expected_delta: -0.01 },
        },
      ],
    });
    const env = {
      ANTHROPIC_API_KEY: server.apiKey,
      ANTHROPIC_BASE_URL: server.url,
      AUTORESEARCH_PYTHON: resolvePython(),
    };
    const r = await cli(
      [
        'run',
        dir,
        '--tag',
        'e',
        '--max-experiments',
        '1',
        '--noise-runs',
        '1',
        '--no-pipeline',
        '--effort',
        'medium',
        '--max-dollars',
        '5',
      ],
      { env },
    );
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const body = server.requests.filter(q => q.path.startsWith('/v1/messages')).at(-1)!.body;
    expect(body.output_config).toEqual({ effort: 'medium' });
    // The run's facts and the read-only files are in the cached system blocks, the history and the files in the user turn.
    const prompt = [...body.system, ...body.messages[0].content].map((b: { text: string }) => b.text).join('\n');
    expect(prompt).toContain(
      '- Each experiment trains for 1 s of wall-clock time (AUTORESEARCH_BUDGET_S); a run past 20 s is killed',
    );
    expect(prompt).toMatch(/- Training runs on the engine's machine: \d+ CPU cores/);
    expect(prompt).toMatch(/## prepare\.py \(read-only\)\n```python\n[^`]*TIME_BUDGET = 1\n/);
    expect(prompt).toContain('Left: 1 experiment(s) (--max-experiments), $5.00 of $5.00 (--max-dollars; $0.00 spent).');
    const start = journal(dir, 'e').find(x => x.type === 'run_start');
    expect(start).toMatchObject({ config: { effort: 'medium' } });
    expect(experiments(dir, 'e')[1]).toMatchObject({
      description: 'deeper',
      proposal_meta: {
        effort: 'medium',
        thinking: 'adaptive, effort medium',
        reasoning: 'Deeper, since the history is empty.',
        expected_delta: -0.01,
      },
    });
    // Without --effort, program.md's effort is sent.
    server.enqueue({
      type: 'message',
      content: [
        {
          type: 'tool_use',
          name: 'str_replace_based_edit_tool',
          input: { command: 'insert', path: 'train.py', insert_line: 0, new_str: '# effort from program.md' },
        },
        {
          type: 'tool_use',
          name: 'finish_experiment',
          input: { description: 'a comment', rationale: 'r', expected_delta: -0.005 },
        },
      ],
    });
    const fm = await cli(['run', dir, '--tag', 'f', '--max-experiments', '1', '--noise-runs', '1', '--no-pipeline'], {
      env,
    });
    expect(fm.stderr).toBe('');
    expect(fm.code).toBe(0);
    const fmBody = server.requests.filter(q => q.path.startsWith('/v1/messages')).at(-1)!.body;
    expect(fmBody.output_config).toEqual({ effort: 'low' });
    expect(experiments(dir, 'f')[1]).toMatchObject({
      description: 'a comment',
      proposal_meta: { effort: 'low', thinking: 'adaptive, effort low' },
    });
    const offline = await cli(['run', dir, '--tag', 'o', '--proposer', 'offline', '--effort', 'low'], { env });
    expect(offline.code).toBe(1);
    expect(offline.stderr).toBe('autoresearch: --effort applies to the claude proposer, not offline\n');
  });
});
