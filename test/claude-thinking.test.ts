/**
 * Thinking on purpose: the effort is explicit on every request, fitted to each model (adaptive
 * with output_config.effort, or a thinking budget on the 4.5 models), configurable from program.md
 * and --effort, recorded with each proposal, and the model's summarised thinking kept in the
 * journal and shown, collapsed, as its reasoning in the experiment's output.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { experimentBundle } from '../src/core/views/bundle';
import { parseProgram, resolveConfig } from '../src/core/config/program';
import { RUN_OPTIONS } from '../src/core/config/run-options';
import { ClaudeProposer, type ClaudeOptions } from '../src/engine/proposers/claude/proposer';
import { thinkingPlan } from '../src/engine/proposers/claude/thinking';
import type { ProposalContext } from '../src/engine/proposers/types';
import { resolvePython } from '../src/engine/workspace/python';
import { history, record } from './helpers/records';
import { makeWorkspace } from './helpers/workspace';
import { MessagesApiServer } from './stand-ins/messages-api';

const TRAIN = 'LEARNING_RATE = 0.001\nN_LAYER = 4\nprint("val_bpb:", 1.0)\n';
let server: MessagesApiServer;
let dir: string;

beforeEach(async () => {
  server = await MessagesApiServer.start();
  dir = makeWorkspace();
});
afterEach(() => server.close());

const call = (name: string, input: unknown) => ({ type: 'tool_use' as const, name, input });
const view = () => call('str_replace_based_edit_tool', { command: 'view', path: 'train.py' });
const replace = (old_str: string, new_str: string) =>
  call('str_replace_based_edit_tool', { command: 'str_replace', path: 'train.py', old_str, new_str });
const finish = (extra: Record<string, unknown> = {}) =>
  call('finish_experiment', { description: 'deeper', rationale: 'more capacity', expected_delta: -0.004, ...extra });
const think = (thinking: string) => ({ type: 'thinking' as const, thinking });
const requests = () => server.requests.filter(r => r.path.startsWith('/v1/messages'));

function proposer(o: Partial<ClaudeOptions> = {}): ClaudeProposer {
  return new ClaudeProposer({
    apiKey: server.apiKey,
    baseURL: server.url,
    python: resolvePython(),
    backoff: { baseMs: 5, maxMs: 20 },
    maxRetries: 0,
    ...o,
  });
}
const ctx = (over: Partial<ProposalContext> = {}): ProposalContext => ({
  workdir: dir,
  files: { 'train.py': TRAIN },
  history: history(3),
  program: 'Make val_bpb lower.',
  metric: 'val_bpb',
  direction: 'lower',
  seed: 0,
  ...over,
});

describe('thinking on purpose', () => {
  it('fits the effort to each model: adaptive with effort, the nearest level it has, or a budget', () => {
    expect(thinkingPlan('claude-sonnet-5-5')).toEqual({
      effort: 'high',
      thinking: 'adaptive, effort high',
      params: { thinking: { type: 'adaptive', display: 'summarized' }, output_config: { effort: 'high' } },
      maxTokens: 32_768,
    });
    expect(thinkingPlan('claude-opus-5-5', 'xhigh')).toMatchObject({ effort: 'xhigh', maxTokens: 49_152 });
    // The 4.6 models have no xhigh: the nearest below.
    expect(thinkingPlan('claude-sonnet-4-6', 'xhigh')).toMatchObject({
      effort: 'high',
      params: { output_config: { effort: 'high' } },
    });
    // The 4.5 models take no effort and no adaptive thinking: a budget of the same rank, with room above it.
    expect(thinkingPlan('claude-haiku-4-5-20251001', 'medium')).toEqual({
      effort: 'medium',
      thinking: 'budget 6144 tokens',
      params: { thinking: { type: 'enabled', budget_tokens: 6144, display: 'summarized' } },
      maxTokens: 6144 + 16_384,
    });
  });

  for (const [model, effort] of [
    ['claude-sonnet-5-5', 'low'],
    ['claude-haiku-5-5', 'max'],
    ['claude-sonnet-4-6', 'xhigh'],
    ['claude-haiku-4-5', 'high'],
    ['claude-opus-4-5', 'xhigh'],
  ] as const) {
    it(`sends what ${model} accepts at effort ${effort}, and records it with the proposal`, async () => {
      server.enqueue({
        type: 'message',
        content: [think('Deeper should help.'), replace('N_LAYER = 4', 'N_LAYER = 6'), finish()],
      });
      const p = await proposer({ model, effort }).propose(ctx());
      const plan = thinkingPlan(model, effort);
      expect(requests()[0].body).toMatchObject({ max_tokens: plan.maxTokens, ...plan.params });
      expect(p.meta).toMatchObject({
        model,
        effort: plan.effort,
        thinking: plan.thinking,
        reasoning: 'Deeper should help.',
      });
    });
  }

  it("passes thinking back with its signature between turns, and keeps the turns' thinking as the reasoning", async () => {
    server.enqueue(
      { type: 'message', content: [think('First I look at the file.'), view()] },
      {
        type: 'message',
        content: [
          think('N_LAYER is 4; the history says depth helped.'),
          { type: 'redacted_thinking' },
          replace('N_LAYER = 4', 'N_LAYER = 6'),
          finish({ lesson: 'depth helps at this width' }),
        ],
      },
    );
    const p = await proposer({ effort: 'medium' }).propose(ctx());
    const [first, second] = requests().map(r => r.body);
    expect(first).toMatchObject({
      thinking: { type: 'adaptive', display: 'summarized' },
      output_config: { effort: 'medium' },
    });
    const back = second.messages[1].content;
    expect(back[0]).toMatchObject({
      type: 'thinking',
      thinking: 'First I look at the file.',
      signature: expect.stringMatching(/^sig_01/),
    });
    expect(p.meta).toMatchObject({
      effort: 'medium',
      reasoning: 'First I look at the file.\n\nN_LAYER is 4; the history says depth helped.',
      expected_delta: -0.004,
      lesson: { about: 2, text: 'depth helps at this width' },
    });
  });

  it('takes the effort from program.md and --effort (the flag wins), and refuses a level that does not exist', () => {
    const { frontMatter } = parseProgram('---\neffort: medium\n---\nGo.\n');
    expect(resolveConfig(frontMatter).effort).toBe('medium');
    expect(resolveConfig(frontMatter, { effort: 'max' }).effort).toBe('max');
    expect(resolveConfig(parseProgram('Go.\n').frontMatter).effort).toBeUndefined();
    expect(() => parseProgram('---\neffort: huge\n---\nGo.\n')).toThrow(
      /bad front matter: "effort" must be one of low, medium, high, xhigh, max/,
    );
    expect(RUN_OPTIONS.effort.flag).toBe('--effort <level>');
  });

  it("shows the model's reasoning collapsed in the output, with its prediction against the outcome and its lesson", () => {
    const r = record(7, {
      delta: 0.0021,
      proposal_meta: {
        effort: 'high',
        reasoning: 'The last three keeps all added steps.\n\nSo <faster> is better than bigger.',
        expected_delta: -0.004,
        lesson: { about: 6, text: 'width costs steps' },
      },
    });
    const b = experimentBundle(r);
    const html = b['text/html'];
    expect(html).toContain("<details><summary>the model's reasoning (effort high)</summary>");
    expect(html).toContain(
      '<p>The last three keeps all added steps.</p>\n<p>So &lt;faster&gt; is better than bigger.</p>\n</details>',
    );
    expect(html).not.toContain('<details open><summary>the model');
    expect(html).toContain('<p><i>Prediction:</i> expected -0.004000, got +0.002100</p>');
    expect(html).toContain('<p><i>Lesson on #6:</i> width costs steps</p>');
    expect(b['text/plain']).toContain(
      'reasoning (effort high): The last three keeps all added steps. So <faster> is better than bigger.',
    );
    expect(b['application/vnd.autoresearch.experiment+json']).toMatchObject({
      reasoning: r.proposal_meta && (r.proposal_meta as { reasoning: string }).reasoning,
      expected_delta: -0.004,
      lesson: { about: 6, text: 'width costs steps' },
      effort: 'high',
    });
    expect(b['application/vnd.autoresearch.experiment+json']).not.toHaveProperty('proposal_meta');
    // A record without notes (the offline proposer's) shows none of it.
    expect(experimentBundle(record(8))['text/html']).not.toContain('reasoning');
  });
});
