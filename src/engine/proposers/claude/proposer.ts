/**
 * The claude proposer: one proposal is a short tool-use conversation with the
 * Messages API (streamed, so an overload mid-answer is seen), over an
 * in-memory copy of the editable files. It never touches the workspace, never
 * gives up on a transient outage (it waits and retries until stopped), and
 * never lets the API key into anything it returns or throws.
 */
import Anthropic, { APIError, AuthenticationError, NotFoundError, PermissionDeniedError } from '@anthropic-ai/sdk';
import type {
  ContentBlockParam,
  MessageParam,
  TextBlockParam,
  ToolResultBlockParam,
} from '@anthropic-ai/sdk/resources/messages';
import type { Move, Usage } from '../../../core/journal/journal';
import { ZERO_USAGE } from '../../../core/journal/journal';
import { addUsage, costOf, pricesFor, type Prices } from '../../../core/config/pricing';
import type { Effort } from '../../../core/config/run-options';
import { UserError } from '../../user-error';
import { mark, stableTtl } from './cache';
import { useLogPattern } from './curve';
import { readonlyFiles } from './facts';
import { notesDue } from './notes';
import { readLogTail, systemBlocks, userContent } from './prompt';
import { MalformedToolInput, Requester, RequestRefused, usageOf } from './request';
import { thinkingPlan, type ThinkingPlan } from './thinking';
import { EditSession } from './tools';
import { toolDefinitions } from './tool-defs';
import {
  checkAbandoned,
  CUT_OFF_ASK,
  finishNotes,
  loadFix,
  malformedAnswer,
  NO_TOOL_NUDGE,
  notRun,
  toParam,
} from './turns';
import { unseenCrash } from './unseen';
import { ProposalAbandoned, type Proposal, type ProposalContext, type Proposer } from '../types';

/** Whether a usage holds any billed token. */
const billed = (u: Usage) =>
  u.input_tokens + u.output_tokens + u.cache_creation_input_tokens + u.cache_read_input_tokens > 0;
/** The model's reasoning kept per proposal, in characters (the journal holds every proposal's). */
const MAX_REASONING_CHARS = 20_000;

/**
 * The default model: the newest Sonnet alias in the SDK's own `Model` list
 * (@anthropic-ai/sdk 1.14 lists claude-sonnet-5-5 first among the Sonnets).
 * Sonnet, not Opus: a proposal is a short, well-specified edit, and an
 * overnight run makes hundreds of them, so price per proposal matters.
 */
export const DEFAULT_MODEL = 'claude-sonnet-5-5';

export interface ClaudeOptions {
  apiKey: string;
  /** Defaults to $ANTHROPIC_BASE_URL, else the public API (the SDK's own rule). */
  baseURL?: string;
  model?: string;
  /** How hard the model thinks (claude/thinking.ts); default DEFAULT_EFFORT. */
  effort?: Effort;
  /** The workspace's Python, for the syntax check of each edit. */
  python: string;
  /** Requests per proposal; one more would abandon it. */
  maxToolTurns?: number;
  /** Refused edits (a cut-off reply counts as one) that abandon a proposal. */
  maxFailedEdits?: number;
  /** Overrides the output room the effort gets. */
  maxTokens?: number;
  /** Price overrides by model id, $/MTok. */
  prices?: Record<string, Prices>;
  /** A ready client (tests); otherwise one is built from apiKey and baseURL. */
  client?: Anthropic;
  /** The SDK's own retries of a failed request, before the engine-level backoff. */
  maxRetries?: number;
  /** Engine-level backoff between attempts after the SDK gave up: base and cap in ms. */
  backoff?: { baseMs: number; maxMs: number };
  /** Tells the user what the proposer is waiting for (a long outage). */
  onNote?: (text: string) => void;
  /** Experiments between rewrites of the research notes (./notes.ts); NOTES_EVERY unless said (tests). */
  notesEvery?: number;
}

/** How a finished proposal searched: the move it took, a fix, a plateau branch's experiment, else a new idea on the best. */
function moveOf(ctx: ProposalContext, session: EditSession, fixed: number | undefined): Move {
  if (session.taken) return { kind: session.taken.kind, of: [...session.taken.of] };
  if (session.usedFix && fixed !== undefined) return { kind: 'fix', of: [fixed] };
  if (ctx.start) return { kind: 'branch', of: [ctx.start.n] };
  return { kind: 'explore' };
}

/** Proposes experiments with Claude through the Messages API and the text editor tool. */
export class ClaudeProposer implements Proposer {
  readonly name = 'claude';
  /** A proposal takes seconds to minutes: draft it while the previous experiment trains. */
  readonly pipelined = true;
  readonly model: string;
  /** Where notes about waiting go (the CLI prints them above its live line). */
  onNote?: (text: string) => void;
  /** How the model is asked to think: the same on every request of the run, which keeps the cache valid. */
  readonly thinking: ThinkingPlan;
  private readonly client: Anthropic;
  private readonly requester: Requester;
  private readonly tools = toolDefinitions();

  constructor(private readonly opts: ClaudeOptions) {
    this.model = opts.model ?? DEFAULT_MODEL;
    this.onNote = opts.onNote;
    // A model without a price would make the ledger and --max-dollars wrong: refuse before the run.
    try {
      pricesFor(this.model, opts.prices);
    } catch (e) {
      throw new UserError((e as Error).message);
    }
    this.client =
      opts.client ?? new Anthropic({ apiKey: opts.apiKey, baseURL: opts.baseURL, maxRetries: opts.maxRetries ?? 4 });
    this.thinking = thinkingPlan(this.model, opts.effort, opts.maxTokens);
    this.requester = new Requester(this.client, {
      backoff: opts.backoff,
      onNote: text => this.onNote?.(text),
      redact: text => this.redact(text),
    });
  }

  /** Checks the key and the model (GET /v1/models/{id}: free, no tokens), so a bad key fails at start, not after the baseline. */
  async check(signal?: AbortSignal): Promise<void> {
    try {
      try {
        await this.client.models.retrieve(this.model, null, { signal });
      } catch (e) {
        // A gateway may not serve /v1/models: then a 1-token message decides (it costs a few tokens).
        if (!(e instanceof NotFoundError)) throw e;
        await this.client.messages.create(
          { model: this.model, max_tokens: 1, messages: [{ role: 'user', content: 'ping' }] },
          { signal },
        );
      }
    } catch (e) {
      if (e instanceof NotFoundError) {
        throw new UserError(`the API does not know model "${this.model}"; pick another with --model`);
      }
      if (e instanceof AuthenticationError || e instanceof PermissionDeniedError) {
        throw new UserError(
          `ANTHROPIC_API_KEY was refused by the API (${e.status} ${e.type ?? 'error'}); check the key`,
        );
      }
      if (e instanceof APIError && e.status !== undefined) {
        throw new UserError(
          `the Messages API refused a test request for model ${this.model} (${e.status} ${e.type ?? 'error'}): ${this.redact(e.apiMessage ?? e.message)}`,
        );
      }
      throw new UserError(`could not reach the Messages API: ${this.redact((e as Error).message)}`);
    }
  }

  /** The likely cost of the next proposal: the dearest of the last five, or a prompt-size guess before any. */
  estimateNextCost(ctx: ProposalContext): number {
    const past = ctx.history
      .filter(r => r.proposer === this.name && r.cost_usd > 0)
      .slice(-5)
      .map(r => r.cost_usd);
    if (past.length) return Math.max(...past);
    const chars = [...systemBlocks(ctx), ...userContent(ctx, { fix: null, logTail: null })].reduce(
      (n, b) => n + b.text.length,
      0,
    );
    const prompt = Math.ceil(chars / 4) + 2000;
    // A typical proposal: the prompt written to the cache once (at the 1-hour rate when that is the
    // lifetime chosen), read back on two more turns, ~1k output tokens a turn.
    return costOf(
      this.model,
      {
        input_tokens: 0,
        output_tokens: 3000,
        cache_creation_input_tokens: prompt,
        cache_read_input_tokens: 2 * prompt,
        ...(stableTtl(ctx) === '1h' ? { cache_creation_1h_input_tokens: prompt } : {}),
      },
      this.opts.prices,
    );
  }

  /** One experiment: a tool-use conversation that ends with finish_experiment, or ProposalAbandoned. */
  async propose(ctx: ProposalContext): Promise<Proposal> {
    checkAbandoned(ctx.history, this.name);
    useLogPattern(ctx.run?.logPattern);
    const maxTurns = this.opts.maxToolTurns ?? 8;
    const maxFailed = this.opts.maxFailedEdits ?? 3;
    // The newest crash no prompt has shown (under pipelining it need not be the last record): its
    // log tail and the fix offer are shown once, and the meta says so (crash_shown) for the next.
    const crash = unseenCrash(ctx);
    const fix = await loadFix(ctx, crash);
    const logTail = crash ? readLogTail(crash.log_path) : null;
    // The proposals in flight may have written the notes already (a pipelined draft's running experiment's).
    const pending = [ctx.running?.meta, ...(ctx.inFlight ?? []).map(e => e.meta)];
    const notes = notesDue(ctx.history, pending, this.opts.notesEvery);
    const session = new EditSession(ctx.files, {
      workdir: ctx.workdir,
      python: this.opts.python,
      fix: fix ? { n: fix.offer.record.n, files: fix.files } : undefined,
      readonly: readonlyFiles(ctx),
      history: ctx.history,
      moves: ctx.moves,
      notesDue: notes,
    });
    const ttl = stableTtl(ctx);
    // Rules and the run's facts (marked), then the user turn in cache order (prompt.ts): at most three
    // stable breakpoints, the fourth moving with the turns below.
    const system: TextBlockParam[] = systemBlocks(ctx, ttl);
    const messages: MessageParam[] = [
      {
        role: 'user',
        content: userContent(ctx, { fix: fix?.offer ?? null, logTail, crash: crash?.n, ttl, notesDue: notes }),
      },
    ];
    let usage: Usage = { ...ZERO_USAGE };
    let cost = 0;
    let turns = 0;
    let failed = 0;
    let lastError = '';
    const thoughts: string[] = [];
    let moving: { cache_control?: unknown } | null = null;
    const account = (u: Usage) => {
      usage = addUsage(usage, u);
      cost += costOf(this.model, u, this.opts.prices);
    };
    const meta = () => ({
      model: this.model,
      effort: this.thinking.effort,
      thinking: this.thinking.thinking,
      ...(session.usedFix && fix ? { fix_of: fix.offer.root } : {}),
      ...(crash ? { crash_shown: crash.n } : {}),
      turns,
      failed_edits: failed,
      ...(thoughts.length ? { reasoning: thoughts.join('\n\n').slice(0, MAX_REASONING_CHARS) } : {}),
      // Journaled with the proposal, kept or abandoned: notes written count either way.
      ...(session.notes ? { notes: session.notes } : {}),
    });
    const abandon = (why: string) =>
      new ProposalAbandoned(this.redact(`proposal abandoned: ${why}`), usage, cost, meta());
    try {
      for (;;) {
        if (turns >= maxTurns)
          throw abandon(
            `no finish_experiment after ${turns} tool turns${lastError ? `; the last error: ${lastError}` : ''}`,
          );
        // The fourth breakpoint moves to the newest block, so each turn reads the prefix the last one wrote.
        if (moving) delete moving.cache_control;
        const content = messages[messages.length - 1].content as Array<{ cache_control?: unknown }>;
        moving = content[content.length - 1];
        moving.cache_control = mark('5m');
        let msg;
        try {
          msg = await this.requester.send(
            {
              model: this.model,
              max_tokens: this.thinking.maxTokens,
              system,
              tools: this.tools,
              messages,
              ...this.thinking.params,
            },
            ctx.signal,
            account,
          );
        } catch (e) {
          // Stopped mid-way (the run ends, a draft is discarded): what was billed so far goes back to the
          // loop as an abandonment, which it records as interrupted, so that the ledger has it.
          if (ctx.signal?.aborted && billed(usage)) throw abandon('the run stopped');
          if (e instanceof MalformedToolInput) {
            // The model's error, not an outage: answered on the next turn, and bounded as a failed edit.
            turns++;
            failed++;
            for (const b of e.before) if (b.type === 'thinking' && b.thinking.trim()) thoughts.push(b.thinking.trim());
            lastError = `tool input that was not valid JSON (${e.detail})`;
            if (failed >= maxFailed) throw abandon(`${failed} failed edits; the last: ${lastError}`);
            const { assistant, user } = malformedAnswer(e);
            messages.push({ role: 'assistant', content: assistant });
            messages.push({ role: 'user', content: user });
            continue;
          }
          // A 400 after the first turn: the conversation is at fault (a block the model produced), not
          // the run; a refused first turn is the engine's prompt or settings, and ends the run. Any other
          // refusal once this proposal was billed (a key revoked, a model withdrawn mid-run) also abandons
          // it, so that what it cost is in the ledger; the next proposal's first turn then ends the run.
          if (e instanceof RequestRefused && (turns > 0 || billed(usage)))
            throw abandon(`turn ${turns + 1} was refused: ${e.message}`);
          throw e;
        }
        account(usageOf(msg.usage));
        turns++;
        for (const b of msg.content) if (b.type === 'thinking' && b.thinking.trim()) thoughts.push(b.thinking.trim());
        const reply = msg.content.map(toParam).filter((b): b is ContentBlockParam => b !== null);
        const uses = msg.content.filter(b => b.type === 'tool_use');
        if (msg.stop_reason === 'max_tokens') {
          // A reply cut at the output limit may end in a cut tool call whose input still parses: run none of it.
          failed++;
          lastError = `the reply was cut off at the output limit (max_tokens ${this.thinking.maxTokens})`;
          if (failed >= maxFailed) throw abandon(`${failed} failed edits; the last: ${lastError}`);
          const ask = { type: 'text' as const, text: CUT_OFF_ASK };
          if (reply.length) {
            messages.push({ role: 'assistant', content: reply });
            messages.push({ role: 'user', content: [...uses.map(u => notRun(u.id)), ask] });
          } else {
            (messages[messages.length - 1].content as ContentBlockParam[]).push(ask);
          }
          continue;
        }
        // A refusal, with content or none, abandons the proposal (and counts toward the stop after
        // MAX_ABANDONED_IN_A_ROW); none of a refused reply's tool calls is run.
        if (msg.stop_reason === 'refusal') throw abandon('the model declined to propose');
        // The API refuses an empty assistant turn; an empty reply is simply asked again (it still counts as a turn).
        if (reply.length === 0) continue;
        messages.push({ role: 'assistant', content: reply });
        if (uses.length === 0) {
          messages.push({
            role: 'user',
            content: [{ type: 'text', text: NO_TOOL_NUDGE }],
          });
          continue;
        }
        const results: ToolResultBlockParam[] = [];
        for (const use of uses) {
          const out = await session.handle(use.name, use.input);
          if (out.finish) {
            const { description, rationale } = out.finish;
            const meta_ = { ...meta(), ...finishNotes(ctx, out.finish) };
            return {
              description,
              rationale,
              files: session.changed(),
              usage,
              cost_usd: cost,
              meta: meta_,
              move: moveOf(ctx, session, fix?.offer.record.n),
            };
          }
          if (out.failedEdit) failed++;
          if (out.isError) lastError = out.content;
          results.push({
            type: 'tool_result',
            tool_use_id: use.id,
            content: out.content,
            ...(out.isError ? { is_error: true } : {}),
          });
        }
        if (failed >= maxFailed) throw abandon(`${failed} failed edits; the last: ${lastError}`);
        messages.push({ role: 'user', content: results });
      }
    } finally {
      session.dispose();
    }
  }

  /** Removes the API key, and anything shaped like one, from text that may be recorded. */
  redact(text: string): string {
    let out = text.replace(/sk-ant-[A-Za-z0-9_-]+/g, 'sk-ant-[redacted]');
    if (this.opts.apiKey.length >= 8) out = out.split(this.opts.apiKey).join('[redacted]');
    return out;
  }
}
