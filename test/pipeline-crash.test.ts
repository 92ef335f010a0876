/**
 * Crash- and result-aware pipelining, on the real loop with the real SDK against the Messages API
 * stand-in: when the experiment that trained while a draft was made crashes, the draft is dropped
 * (stopped if still at work) and a fresh proposal sees the crash's traceback and the fix offer,
 * paying for the draft; and each finished experiment is asked for a lesson once.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { proposalNotes } from '../src/core/journal/journal';
import { SubprocessExecutor } from '../src/engine/executor/subprocess';
import { Loop } from '../src/engine/run/setup';
import { ClaudeProposer } from '../src/engine/proposers/claude/proposer';
import { crashShown } from '../src/engine/proposers/claude/unseen';
import { resolvePython } from '../src/engine/workspace/python';
import { experiments, makeWorkspace } from './helpers/workspace';
import { MessagesApiServer, type RecordedRequest, type Turn } from './stand-ins/messages-api';

const LATENCY_MS = 300;
// The crash comes after the sleep, so that a draft made meanwhile has time to finish.
const TRAIN = `import time
CRASH = 0
#
V1 = 0
#
V2 = 0
#
V3 = 0
#
V4 = 0
time.sleep(1.5)
if CRASH:
    raise RuntimeError("boom: CRASH is set")
m = 2.0 - 0.1 * (V1 + V2 + V3 + V4)
print("---")
print(f"val_bpb: {m:.6f}")
`;
const USAGE = { input_tokens: 1000, output_tokens: 100, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 };

let server: MessagesApiServer | null = null;
afterEach(() => server?.close());

/** One turn that sets `name` from 0 to 1 and finishes, with a lesson. */
function setTo1(name: string, description: string): Turn {
  return {
    type: 'message',
    content: [
      {
        type: 'tool_use',
        name: 'str_replace_based_edit_tool',
        input: { command: 'str_replace', path: 'train.py', old_str: `${name} = 0`, new_str: `${name} = 1` },
      },
      {
        type: 'tool_use',
        name: 'finish_experiment',
        input: {
          description,
          rationale: 'scripted',
          expected_delta: -0.1,
          lesson: `a lesson written with ${description}`,
        },
      },
    ],
    usage: USAGE,
  };
}

/** The text of the request's first user message: what the proposal was shown. */
const promptOf = (r: RecordedRequest) =>
  (r.body.messages[0].content as Array<{ text: string }>).map(b => b.text).join('\n');
const messageRequests = () => server!.requests.filter(r => r.path === '/v1/messages');

async function run(script: Array<(req: RecordedRequest) => Turn | Promise<Turn>>, experimentsToRun: number) {
  let k = 0;
  server = await MessagesApiServer.start({
    latencyMs: LATENCY_MS,
    handler: req => {
      const next = script[k++];
      if (!next) throw new Error(`no scripted reply for request ${k}`);
      return next(req);
    },
  });
  const dir = makeWorkspace({ train: TRAIN });
  const proposer = new ClaudeProposer({
    apiKey: server.apiKey,
    baseURL: server.url,
    python: resolvePython(),
    backoff: { baseMs: 5, maxMs: 20 },
  });
  const loop = new Loop({
    dir,
    tag: 't1',
    proposer,
    executor: new SubprocessExecutor(1),
    python: resolvePython(),
    maxExperiments: experimentsToRun,
    pipeline: true,
    signal: new AbortController().signal,
  });
  await loop.run();
  return experiments(dir, 't1');
}

describe('pipelining past a crash', () => {
  it(
    'drops the draft made while the crashing run trained, and shows the next request the traceback and the fix offer',
    {
      timeout: 40_000,
    },
    async () => {
      const exps = await run(
        [
          () => setTo1('CRASH', 'set CRASH'),
          // Drafted while #1 trains: it cannot know #1 will crash.
          () => setTo1('V1', 'V1 drafted blind'),
          () => setTo1('V2', 'V2 after the crash'),
        ],
        2,
      );
      expect(exps.map(e => [e.n, e.status, e.description])).toEqual([
        [0, 'keep', 'baseline'],
        [1, 'crash', 'set CRASH'],
        [2, 'keep', 'V2 after the crash'],
      ]);
      const [, draft, fresh] = messageRequests().map(promptOf);
      expect(draft).toContain('## Experiment #1 is training right now');
      expect(draft).not.toContain('which crashed');
      expect(draft).not.toContain('You may fix experiment');
      expect(fresh).toMatch(/## The log tail of #1, which crashed\n```\n[^`]*RuntimeError: boom: CRASH is set/);
      expect(fresh).toContain('You may fix experiment #1 instead of trying a new idea: call fix_crashed_experiment');
      expect(fresh).toContain('lesson (what #1 taught)');
      // The dropped draft is paid for by the proposal made in its place, which records the crash it showed.
      expect(exps[2].usage.input_tokens).toBe(2000);
      expect(crashShown(exps[2].proposal_meta)).toBe(1);
      expect(proposalNotes(exps[2].proposal_meta).lesson?.about).toBe(1);
      expect(messageRequests()).toHaveLength(3);
    },
  );

  it(
    'stops a draft still at work when the run it was made beside crashes, and charges what it had cost',
    {
      timeout: 40_000,
    },
    async () => {
      const started = Date.now();
      const exps = await run(
        [
          () => setTo1('CRASH', 'set CRASH'),
          // The draft's first turn is answered (and billed); its second never comes back in time.
          () => ({
            type: 'message',
            content: [
              { type: 'tool_use', name: 'str_replace_based_edit_tool', input: { command: 'view', path: 'train.py' } },
            ],
            usage: USAGE,
          }),
          () => new Promise<Turn>(resolve => setTimeout(() => resolve(setTo1('V3', 'too late')), 60_000).unref()),
          () => setTo1('V2', 'V2 after the crash'),
        ],
        2,
      );
      expect(exps.map(e => [e.n, e.status, e.description])).toEqual([
        [0, 'keep', 'baseline'],
        [1, 'crash', 'set CRASH'],
        [2, 'keep', 'V2 after the crash'],
      ]);
      // Not waited for: the stale draft was stopped as soon as #1 crashed.
      expect(Date.now() - started).toBeLessThan(30_000);
      expect(messageRequests()).toHaveLength(4);
      expect(promptOf(messageRequests()[3])).toContain('## The log tail of #1, which crashed');
      // Its billed first turn is charged to the fresh proposal; no record of its own.
      expect(exps[2].usage.input_tokens).toBe(2000);
    },
  );

  it(
    'asks each finished experiment for a lesson once, about the newest that taught nothing yet',
    { timeout: 60_000 },
    async () => {
      const exps = await run(
        ['V1', 'V2', 'V3', 'V4'].map(v => () => setTo1(v, `set ${v}`)),
        4,
      );
      expect(exps.map(e => e.status)).toEqual(['keep', 'keep', 'keep', 'keep', 'keep']);
      const asked = messageRequests().map(r => /lesson \(what #(\d+) taught\)/.exec(promptOf(r))?.[1] ?? null);
      // The first was drafted during the baseline (nothing had finished); then each one drafted while
      // the one before it trained asks about the newest result no proposal has drawn a lesson from.
      expect(asked).toEqual([null, '0', '1', '2']);
      const abouts = exps.map(e => proposalNotes(e.proposal_meta).lesson?.about ?? null);
      expect(abouts).toEqual([null, null, 0, 1, 2]);
    },
  );
});
