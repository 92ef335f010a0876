/**
 * Pipelining: while experiment N trains, the claude proposer drafts N+1; a kept N
 * gets the draft re-applied on top (three-way merge), a conflict gets a fresh
 * proposal. Real loop, real git, real SDK against the local Messages API stand-in.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { JournalRecord } from '../src/core/journal/journal';
import { costOf } from '../src/core/config/pricing';
import { SubprocessExecutor } from '../src/engine/executor/subprocess';
import { Loop } from '../src/engine/run/setup';
import { ClaudeProposer, DEFAULT_MODEL } from '../src/engine/proposers/claude/proposer';
import { resolvePython } from '../src/engine/workspace/python';
import { experiments, git, journal, makeWorkspace } from './helpers/workspace';
import { MessagesApiServer, type RecordedRequest, type Turn } from './stand-ins/messages-api';

const LATENCY_MS = 1500;
const TRAIN_S = 2.5;
// Each V line set to 1 lowers the metric by 0.1, so every experiment below is kept.
// A line apart, as git's merge (like any diff3) takes edits to adjacent lines as a conflict.
const TRAIN = `import time
V1 = 0
#
V2 = 0
#
V3 = 0
#
V4 = 0
#
V5 = 0
time.sleep(${TRAIN_S})
m = 2.0 - 0.1 * (V1 + V2 + V3 + V4 + V5)
print("---")
print(f"val_bpb: {m:.6f}")
`;

let server: MessagesApiServer | null = null;
afterEach(() => server?.close());

/** The current value of line `name` in the train.py the request showed the model. */
function valueIn(req: RecordedRequest, name: string): number {
  const text = JSON.stringify(req.body.messages[0].content);
  const m = new RegExp(`\\\\n${name} = (\\d+)\\\\n`).exec(text);
  if (!m) throw new Error(`${name} not in the prompt`);
  return Number(m[1]);
}

/** A model that edits one line per proposal, in one turn: str_replace, then finish_experiment. */
function model(lineFor: (k: number) => string, next: (current: number) => number) {
  let k = 0;
  return (req: RecordedRequest): Turn => {
    k++;
    const name = lineFor(k);
    const cur = valueIn(req, name);
    return {
      type: 'message',
      content: [
        {
          type: 'tool_use',
          name: 'str_replace_based_edit_tool',
          input: {
            command: 'str_replace',
            path: 'train.py',
            old_str: `${name} = ${cur}`,
            new_str: `${name} = ${next(cur)}`,
          },
        },
        {
          type: 'tool_use',
          name: 'finish_experiment',
          input: { description: `${name} ${cur} → ${next(cur)}`, rationale: `proposal ${k}` },
        },
      ],
      usage: { input_tokens: 1000, output_tokens: 100, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 },
    };
  };
}

async function setUp(handler: (req: RecordedRequest) => Turn, pipeline: boolean, experimentsToRun: number) {
  server = await MessagesApiServer.start({ latencyMs: LATENCY_MS, handler });
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
    pipeline,
    signal: new AbortController().signal,
  });
  return { dir, loop };
}

async function run(handler: (req: RecordedRequest) => Turn, pipeline: boolean, experimentsToRun: number) {
  const { dir, loop } = await setUp(handler, pipeline, experimentsToRun);
  await loop.run();
  return { dir, exps: experiments(dir, 't1') };
}

const USAGE = { input_tokens: 1000, output_tokens: 100, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 };

/** The model of the conflict test for its first two requests (the draft that runs, the one that conflicts), then `after`. */
function conflictThen(after: (k: number) => Turn) {
  const first = model(
    () => 'V1',
    cur => cur + 1,
  );
  let k = 0;
  return (req: RecordedRequest): Turn => (++k <= 2 ? first(req) : after(k));
}

/** When the model was asked for each proposal, in order (Date.now() as the request arrived). */
function askedAt(): number[] {
  return server!.requests.filter(r => r.path === '/v1/messages').map(r => r.at);
}

/** Experiment n's span from the journal: its start record, and the end of its last run (a run record is written as the run ends). */
function spanOf(dir: string, n: number): { started: number; lastRunEnded: number } {
  const records = journal(dir, 't1');
  const start = records.find(r => r.type === 'experiment_start' && r.n === n) as JournalRecord;
  const runs = records.filter(r => r.type === 'run' && r.n === n);
  expect(runs.length).toBeGreaterThan(0);
  return { started: Date.parse(start.ts), lastRunEnded: Math.max(...runs.map(r => Date.parse(r.ts))) };
}

describe('pipelining', () => {
  it(
    'drafts the next proposal while the current one trains, and re-applies it on a kept result',
    { timeout: 40_000 },
    async () => {
      const { dir, exps } = await run(
        model(
          k => `V${k}`,
          () => 1,
        ),
        true,
        4,
      );
      expect(exps.map(e => [e.status, e.description])).toEqual([
        ['keep', 'baseline'],
        ['keep', 'V1 0 → 1'],
        ['keep', 'V2 0 → 1'],
        ['keep', 'V3 0 → 1'],
        ['keep', 'V4 0 → 1'],
      ]);
      // Drafts 2–4 were made against the best before the experiment that was training, then merged.
      for (const e of exps.slice(2)) expect(e.rationale).toMatch(/re-applied on top of it, which was kept/);
      expect(git(dir, 'show', 'HEAD:train.py')).toMatch(/V1 = 1\n#\nV2 = 1\n#\nV3 = 1\n#\nV4 = 1\n#\nV5 = 0/);
      // Each proposal was asked for while the experiment before it trained (the first during the
      // baseline): by order of events, not by how short the wait was, which a loaded machine stretches.
      const asked = askedAt();
      expect(asked).toHaveLength(4);
      asked.forEach((at, i) => {
        const before = spanOf(dir, i);
        expect(at).toBeGreaterThanOrEqual(before.started);
        expect(at).toBeLessThan(before.lastRunEnded);
      });
    },
  );

  it('sequentially (--no-pipeline), every experiment waits for the model', async () => {
    const { dir, exps } = await run(
      model(
        k => `V${k}`,
        () => 1,
      ),
      false,
      3,
    );
    // Asked only once the experiment before had ended, so the runs sat idle for the model's latency at least.
    askedAt().forEach((at, i) => expect(at).toBeGreaterThanOrEqual(spanOf(dir, i).lastRunEnded));
    for (const e of exps.slice(1)) expect(e.timings.idle_s).toBeGreaterThanOrEqual(LATENCY_MS / 1000);
    expect(exps.slice(1).every(e => !/re-applied/.test(e.rationale))).toBe(true);
  });

  it('proposes afresh when the draft conflicts with the kept result, and charges both requests', async () => {
    // Every proposal edits the same line, so a draft made before a keep always conflicts.
    const { exps } = await run(
      model(
        () => 'V1',
        cur => cur + 1,
      ),
      true,
      3,
    );
    expect(exps.map(e => [e.status, e.description])).toEqual([
      ['keep', 'baseline'],
      ['keep', 'V1 0 → 1'],
      ['keep', 'V1 1 → 2'],
      ['keep', 'V1 2 → 3'],
    ]);
    // Experiments 2 and 3 each paid for a conflicting draft and a fresh proposal.
    for (const e of exps.slice(2)) expect(e.usage.input_tokens).toBe(2000);
    expect(exps[1].usage.input_tokens).toBe(1000);
  });

  it(
    'charges the conflicting draft to the fresh proposal when that one is abandoned',
    { timeout: 40_000 },
    async () => {
      // Draft 2 conflicts with the kept #1; the fresh proposal then fails three edits and is abandoned.
      const failedEdit = (): Turn => ({
        type: 'message',
        content: [
          {
            type: 'tool_use',
            name: 'str_replace_based_edit_tool',
            input: { command: 'str_replace', path: 'train.py', old_str: 'no such text', new_str: 'x' },
          },
        ],
        usage: USAGE,
      });
      const { exps } = await run(conflictThen(failedEdit), true, 2);
      expect(exps.map(e => [e.status, e.description])).toEqual([
        ['keep', 'baseline'],
        ['keep', 'V1 0 → 1'],
        ['rejected', 'proposal abandoned'],
      ]);
      expect(exps[2].reason).toMatch(/^proposal abandoned: 3 failed edits/);
      // The three fresh requests and the wasted draft.
      expect(exps[2].usage.input_tokens).toBe(4000);
      expect(exps[2].cost_usd).toBeCloseTo(4 * costOf(DEFAULT_MODEL, USAGE), 12);
      expect(askedAt()).toHaveLength(5);
    },
  );

  it(
    'records the conflicting draft with its cost when the fresh proposal ends the run',
    { timeout: 40_000 },
    async () => {
      const refused = (): Turn => ({
        type: 'error',
        status: 400,
        error_type: 'invalid_request_error',
        message: 'effort: unsupported',
      });
      const { dir, loop } = await setUp(conflictThen(refused), true, 2);
      const why = 'the claude proposer failed: 400 invalid_request_error: effort: unsupported';
      await expect(loop.run()).rejects.toThrow(why);
      const exps = experiments(dir, 't1');
      expect(exps.map(e => [e.status, e.description, e.commit, e.usage.input_tokens])).toEqual([
        ['keep', 'baseline', expect.any(String), 0],
        ['keep', 'V1 0 → 1', expect.any(String), 1000],
        ['interrupted', 'V1 0 → 1', null, 1000],
      ]);
      expect(exps[2].reason).toBe(why);
      expect(exps[2].cost_usd).toBeCloseTo(costOf(DEFAULT_MODEL, USAGE), 12);
      expect(journal(dir, 't1').at(-1)).toMatchObject({ type: 'run_end', reason: 'error', message: why });
    },
  );
});
