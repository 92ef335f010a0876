/**
 * Every token the Messages API billed is in the run's cost, also for proposals a stop leaves
 * unused: a draft made while the experiment before it trained, a proposal that came back (or was
 * abandoned) just as the run was stopped. Each is journaled as an `interrupted` experiment that
 * never ran, with its usage and cost_usd, so state.json's cost_usd and --max-dollars count it and
 * --resume goes on after it. Real loop, real git, real SDK against the local Messages API stand-in.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { ExperimentRecord, Usage } from '../src/core/journal/journal';
import { costOf } from '../src/core/config/pricing';
import { RunStateFile } from '../src/core/journal/run-state';
import { SubprocessExecutor } from '../src/engine/executor/subprocess';
import { Loop } from '../src/engine/run/setup';
import { ClaudeProposer, DEFAULT_MODEL } from '../src/engine/proposers/claude/proposer';
import type { Proposal, ProposalContext, Proposer } from '../src/engine/proposers/types';
import { resolvePython } from '../src/engine/workspace/python';
import { experiments, journal, makeWorkspace } from './helpers/workspace';
import { MessagesApiServer, type Block, type Turn } from './stand-ins/messages-api';

// The baseline runs fast; an experiment that set V1 trains until it is stopped (or its deadline).
const TRAIN = `import time
V1 = 0
#
V2 = 0
#
V3 = 0
time.sleep(30 if V1 == 1 else 0.1)
print("---")
print(f"val_bpb: {2.0 - 0.1 * (V1 + V2 + V3):.6f}")
`;
const USAGE: Usage = {
  input_tokens: 1000,
  output_tokens: 100,
  cache_creation_input_tokens: 0,
  cache_read_input_tokens: 0,
};
const PER_REQUEST = costOf(DEFAULT_MODEL, USAGE);

let server: MessagesApiServer | null = null;
afterEach(() => server?.close());

const call = (name: string, input: unknown): Block => ({ type: 'tool_use', name, input });
const setTo1 = (k: number): Turn => ({
  type: 'message',
  content: [
    call('str_replace_based_edit_tool', {
      command: 'str_replace',
      path: 'train.py',
      old_str: `V${k} = 0`,
      new_str: `V${k} = 1`,
    }),
    call('finish_experiment', { description: `V${k} 0 → 1`, rationale: `proposal ${k}` }),
  ],
  usage: USAGE,
});
const failedEdit = (): Turn => ({
  type: 'message',
  content: [
    call('str_replace_based_edit_tool', { command: 'str_replace', path: 'train.py', old_str: 'no such', new_str: 'x' }),
  ],
  usage: USAGE,
});
const messages = () => server!.requests.filter(r => r.path.startsWith('/v1/messages'));

/**
 * The real claude proposer, with a hook on each proposal's outcome (k counts proposals from 1),
 * called before the loop sees it: a test stops the run there.
 */
function observed(inner: ClaudeProposer, onOutcome: (k: number, outcome: Proposal | Error) => void): Proposer {
  let k = 0;
  return {
    name: inner.name,
    pipelined: inner.pipelined,
    estimateNextCost: (c: ProposalContext) => inner.estimateNextCost(c),
    async propose(c: ProposalContext) {
      const i = ++k;
      try {
        const p = await inner.propose(c);
        onOutcome(i, p);
        return p;
      } catch (e) {
        onOutcome(i, e as Error);
        throw e;
      }
    },
  };
}

async function claude(handler?: (k: number) => Turn, eventIntervalMs = 0): Promise<ClaudeProposer> {
  let k = 0;
  server = await MessagesApiServer.start({
    latencyMs: 100,
    eventIntervalMs,
    handler: handler ? () => handler(++k) : undefined,
  });
  return new ClaudeProposer({
    apiKey: server.apiKey,
    baseURL: server.url,
    python: resolvePython(),
    backoff: { baseMs: 5, maxMs: 20 },
    maxRetries: 0,
  });
}

function loop(dir: string, proposer: Proposer, signal: AbortSignal, o: Partial<ConstructorParameters<typeof Loop>[0]>) {
  return new Loop({
    dir,
    tag: 't1',
    proposer,
    executor: new SubprocessExecutor(1),
    python: resolvePython(),
    signal,
    ...o,
  });
}

function stateOf(dir: string): RunStateFile {
  return RunStateFile.parse(JSON.parse(fs.readFileSync(path.join(dir, '.autoresearch', 't1', 'state.json'), 'utf8')));
}

const rows = (exps: ExperimentRecord[]) =>
  exps.map(e => [e.n, e.status, e.description, e.commit, e.usage.input_tokens, e.cost_usd]);
const total = (exps: ExperimentRecord[]) => exps.reduce((s, e) => s + e.cost_usd, 0);

describe('the ledger across a stop', () => {
  it(
    'records a finished draft the stop left unused as an interrupted experiment with its cost, and --resume goes on after it',
    { timeout: 60_000 },
    async () => {
      const inner = await claude(setTo1);
      const dir = makeWorkspace({ train: TRAIN });
      const stop = new AbortController();
      // Draft 1 is made during the baseline and runs as #1; draft 2 is made while #1 trains: stop once it is in.
      const proposer = observed(inner, k => k === 2 && stop.abort('stop'));
      const end = await loop(dir, proposer, stop.signal, { pipeline: true }).run();
      expect(end.reason).toBe('stop');
      const exps = experiments(dir, 't1');
      expect(rows(exps)).toEqual([
        [0, 'keep', 'baseline', expect.any(String), 0, 0],
        [1, 'interrupted', 'V1 0 → 1', expect.any(String), 1000, PER_REQUEST],
        [2, 'interrupted', 'V2 0 → 1', null, 1000, PER_REQUEST],
      ]);
      expect(exps[2].reason).toBe('drafted while #1 trained; not run: the run ended (stop)');
      expect(exps[2].rationale).toBe('proposal 2');
      expect(messages()).toHaveLength(2);
      // Every billed request is in the journal's cost, and in state.json's.
      expect(total(exps)).toBeCloseTo(2 * PER_REQUEST, 12);
      expect(stateOf(dir).cost_usd).toBeCloseTo(2 * PER_REQUEST, 6);
      expect(stateOf(dir).tokens).toBe(2 * 1100);
      expect(journal(dir, 't1').at(-1)).toMatchObject({ type: 'run_end', reason: 'stop' });

      // --resume: nothing in flight, nothing re-done or counted twice; numbering goes on.
      const again = await loop(dir, proposer, new AbortController().signal, {
        resume: true,
        moreExperiments: 1,
        pipeline: true,
      }).run();
      expect(again.reason).toBe('max-experiments');
      const after = experiments(dir, 't1');
      expect(rows(after).slice(0, 3)).toEqual(rows(exps));
      expect(after.map(e => [e.n, e.status, e.description])).toEqual([
        [0, 'keep', 'baseline'],
        [1, 'interrupted', 'V1 0 → 1'],
        [2, 'interrupted', 'V2 0 → 1'],
        [3, 'keep', 'V3 0 → 1'],
      ]);
      expect(messages()).toHaveLength(3);
      expect(stateOf(dir).cost_usd).toBeCloseTo(3 * PER_REQUEST, 6);
    },
  );

  it('records a proposal that came back just as the run was stopped, with its cost', { timeout: 30_000 }, async () => {
    const inner = await claude(setTo1);
    const dir = makeWorkspace({ train: TRAIN });
    const stop = new AbortController();
    const proposer = observed(inner, () => stop.abort('stop'));
    await loop(dir, proposer, stop.signal, { pipeline: false }).run();
    const exps = experiments(dir, 't1');
    expect(rows(exps)).toEqual([
      [0, 'keep', 'baseline', expect.any(String), 0, 0],
      [1, 'interrupted', 'V1 0 → 1', null, 1000, PER_REQUEST],
    ]);
    expect(exps[1].reason).toBe('stopped by the user while proposing');
    expect(exps[1].proposal_meta).toMatchObject({ turns: 1 });
    expect(stateOf(dir).cost_usd).toBeCloseTo(PER_REQUEST, 6);
    expect(journal(dir, 't1').at(-1)).toMatchObject({ type: 'run_end', reason: 'stop' });
  });

  it('records a proposal abandoned just as the run was stopped, with its cost', { timeout: 30_000 }, async () => {
    const inner = await claude(failedEdit);
    const dir = makeWorkspace({ train: TRAIN });
    const stop = new AbortController();
    const proposer = observed(inner, () => stop.abort('stop'));
    await loop(dir, proposer, stop.signal, { pipeline: false }).run();
    const exps = experiments(dir, 't1');
    // Abandoned on its third failed edit; the stop, not the model, ends the run, so it is no `rejected` abandonment.
    expect(rows(exps)).toEqual([
      [0, 'keep', 'baseline', expect.any(String), 0, 0],
      [1, 'interrupted', 'proposal interrupted', null, 3000, 3 * PER_REQUEST],
    ]);
    expect(exps[1].reason).toBe('stopped by the user while proposing');
    expect(messages()).toHaveLength(3);
    expect(stateOf(dir).cost_usd).toBeCloseTo(3 * PER_REQUEST, 6);
  });

  it('records what a proposal stopped mid-request had been billed', { timeout: 30_000 }, async () => {
    const stop = new AbortController();
    const view: Turn = {
      type: 'message',
      content: [call('str_replace_based_edit_tool', { command: 'view', path: 'train.py' })],
      usage: USAGE,
    };
    // The second turn streams slowly; the stop lands once its message_start (billed: its prompt) is in.
    const inner = await claude(k => {
      if (k === 2) setTimeout(() => stop.abort('stop'), 300);
      return k === 1 ? view : setTo1(1);
    }, 200);
    const dir = makeWorkspace({ train: TRAIN });
    await loop(dir, inner, stop.signal, { pipeline: false }).run();
    const exps = experiments(dir, 't1');
    expect(exps.map(e => [e.n, e.status, e.description, e.commit])).toEqual([
      [0, 'keep', 'baseline', expect.any(String)],
      [1, 'interrupted', 'proposal interrupted', null],
    ]);
    const u = exps[1].usage;
    // The first turn whole, and the cut one's prompt as message_start reported it.
    expect(u.input_tokens).toBe(2000);
    expect(u.output_tokens).toBeGreaterThanOrEqual(101);
    expect(exps[1].cost_usd).toBeCloseTo(costOf(DEFAULT_MODEL, u), 12);
    expect(exps[1].reason).toBe('stopped by the user while proposing');
    expect(stateOf(dir).cost_usd).toBeCloseTo(exps[1].cost_usd, 6);
  });

  it('records what a draft stopped mid-request had been billed', { timeout: 60_000 }, async () => {
    const stop = new AbortController();
    // Draft 2 (made while #1 trains) streams slowly; the stop lands once its message_start is in.
    const inner = await claude(k => {
      if (k === 2) setTimeout(() => stop.abort('stop'), 300);
      return setTo1(k);
    }, 200);
    const dir = makeWorkspace({ train: TRAIN });
    await loop(dir, inner, stop.signal, { pipeline: true }).run();
    const exps = experiments(dir, 't1');
    expect(exps.map(e => [e.n, e.status, e.description, e.commit])).toEqual([
      [0, 'keep', 'baseline', expect.any(String)],
      [1, 'interrupted', 'V1 0 → 1', expect.any(String)],
      [2, 'interrupted', 'proposal interrupted', null],
    ]);
    expect(exps[2].reason).toBe('drafted while #1 trained; stopped while proposing: the run ended (stop)');
    expect(exps[2].usage.input_tokens).toBe(1000);
    expect(exps[2].cost_usd).toBeCloseTo(costOf(DEFAULT_MODEL, exps[2].usage), 12);
    expect(stateOf(dir).cost_usd).toBeCloseTo(PER_REQUEST + exps[2].cost_usd, 6);
  });
});
