/**
 * The claude proposer: one proposal is a short tool-use conversation with the
 * Messages API (streamed, so an overload mid-answer is seen), over an
 * in-memory copy of the editable files. It never touches the workspace, never
 * gives up on a transient outage (it waits and retries until stopped), and
 * never lets the API key into anything it returns or throws.
 */
import Anthropic, {
  APIConnectionError,
  APIError,
  APIUserAbortError,
  AnthropicError,
  AuthenticationError,
  NotFoundError,
  PermissionDeniedError,
} from '@anthropic-ai/sdk';
import type {
  ContentBlock,
  ContentBlockParam,
  Message,
  MessageCreateParamsBase,
  MessageParam,
  TextBlockParam,
  ToolResultBlockParam,
} from '@anthropic-ai/sdk/resources/messages';
import type { Usage } from '../../core/journal';
import { ZERO_USAGE } from '../../core/journal';
import { addUsage, costOf, pricesFor, type Prices } from '../../core/pricing';
import { exec } from '../exec';
import { UserError } from '../workspace';
import { fixOffer, readLogTail, systemText, userContent, type FixOffer } from './claude-prompt';
import { EditSession, toolDefinitions } from './claude-tools';
import { ProposalAbandoned, type Proposal, type ProposalContext, type Proposer } from './types';

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
  /** The workspace's Python, for the syntax check of each edit. */
  python: string;
  /** Requests per proposal; one more would abandon it. */
  maxToolTurns?: number;
  /** Refused edits tolerated per proposal; one more abandons it. */
  maxFailedEdits?: number;
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
}

/** Proposes experiments with Claude through the Messages API and the text editor tool. */
export class ClaudeProposer implements Proposer {
  readonly name = 'claude';
  /** A proposal takes seconds to minutes: draft it while the previous experiment trains. */
  readonly pipelined = true;
  readonly model: string;
  /** Where notes about waiting go (the CLI prints them above its live line). */
  onNote?: (text: string) => void;
  private readonly client: Anthropic;
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
    const chars =
      systemText(ctx).length + userContent(ctx, { fix: null, logTail: null }).reduce((n, b) => n + b.text.length, 0);
    const prompt = Math.ceil(chars / 4) + 2000;
    // A typical proposal: the prompt written to the cache once, read back on two more turns, ~1k output tokens a turn.
    return costOf(
      this.model,
      {
        input_tokens: 0,
        output_tokens: 3000,
        cache_creation_input_tokens: prompt,
        cache_read_input_tokens: 2 * prompt,
      },
      this.opts.prices,
    );
  }

  /** One experiment: a tool-use conversation that ends with finish_experiment, or ProposalAbandoned. */
  async propose(ctx: ProposalContext): Promise<Proposal> {
    const maxTurns = this.opts.maxToolTurns ?? 8;
    const maxFailed = this.opts.maxFailedEdits ?? 3;
    const fix = await this.loadFix(ctx);
    const last = ctx.history[ctx.history.length - 1];
    const logTail = last?.status === 'crash' ? readLogTail(last.log_path) : null;
    const session = new EditSession(ctx.files, {
      workdir: ctx.workdir,
      python: this.opts.python,
      fix: fix ? { n: fix.offer.record.n, files: fix.files } : undefined,
    });
    const system: TextBlockParam[] = [{ type: 'text', text: systemText(ctx), cache_control: { type: 'ephemeral' } }];
    const messages: MessageParam[] = [
      { role: 'user', content: userContent(ctx, { fix: fix?.offer ?? null, logTail }) },
    ];
    let usage: Usage = { ...ZERO_USAGE };
    let cost = 0;
    let turns = 0;
    let failed = 0;
    let lastError = '';
    let moving: { cache_control?: unknown } | null = null;
    const meta = () => ({
      model: this.model,
      ...(session.usedFix && fix ? { fix_of: fix.offer.root } : {}),
      turns,
      failed_edits: failed,
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
        moving.cache_control = { type: 'ephemeral' };
        // Room for adaptive thinking plus an edit; output is billed as generated, not as reserved.
        const msg = await this.request(
          { model: this.model, max_tokens: this.opts.maxTokens ?? 16_384, system, tools: this.tools, messages },
          ctx.signal,
        );
        const u = usageOf(msg);
        usage = addUsage(usage, u);
        cost += costOf(this.model, u, this.opts.prices);
        turns++;
        const reply = msg.content.map(toParam).filter((b): b is ContentBlockParam => b !== null);
        // The API refuses an empty assistant turn; an empty reply is simply asked again (it still counts as a turn).
        if (reply.length === 0) continue;
        messages.push({ role: 'assistant', content: reply });
        const uses = msg.content.filter(b => b.type === 'tool_use');
        if (uses.length === 0) {
          if (msg.stop_reason === 'refusal') throw abandon('the model declined to propose');
          messages.push({
            role: 'user',
            content: [
              {
                type: 'text',
                text: 'Use str_replace_based_edit_tool to make your edit, then call finish_experiment; only finish_experiment ends your turn.',
              },
            ],
          });
          continue;
        }
        const results: ToolResultBlockParam[] = [];
        for (const use of uses) {
          const out = await session.handle(use.name, use.input);
          if (out.finish) {
            return {
              description: out.finish.description,
              rationale: out.finish.rationale,
              files: session.changed(),
              usage,
              cost_usd: cost,
              meta: meta(),
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
        if (failed > maxFailed) throw abandon(`${failed} failed edits; the last: ${lastError}`);
        messages.push({ role: 'user', content: results });
      }
    } finally {
      session.dispose();
    }
  }

  /** One request, retried through any transient failure (429, 529, 5xx, a dropped or cut stream) until it succeeds or the run stops. */
  private async request(params: MessageCreateParamsBase, signal?: AbortSignal): Promise<Message> {
    const { baseMs, maxMs } = this.opts.backoff ?? { baseMs: 2000, maxMs: 300_000 };
    for (let attempt = 0; ; attempt++) {
      try {
        const msg = await this.client.messages.stream(params, { signal }).finalMessage();
        // A stream cut before message_delta has no stop reason: the answer is incomplete.
        if (msg.stop_reason === null) throw new AnthropicError('the response stream ended early');
        return msg;
      } catch (e) {
        if (signal?.aborted || e instanceof APIUserAbortError) throw e;
        if (!isTransient(e)) throw new Error(this.redact(describe(e)), { cause: e });
        const cap = Math.min(maxMs, baseMs * 2 ** Math.min(attempt, 20));
        // Equal jitter: never less than half the step, so many engines don't retry in lockstep.
        const wait = Math.max(retryAfterMs(e), cap / 2 + Math.random() * (cap / 2));
        this.onNote?.(
          `the Messages API is unavailable (${this.redact(describe(e))}); retrying in ${Math.round(wait / 1000)} s`,
        );
        await sleep(wait, signal);
      }
    }
  }

  /** The crashed experiment's files when a fix is on offer, read from its commit (git objects outlive the reset). */
  private async loadFix(ctx: ProposalContext): Promise<{ offer: FixOffer; files: Record<string, string> } | null> {
    const offer = fixOffer(ctx.history);
    if (!offer?.record.commit) return null;
    // With several workers the best may have moved since the crash started: a fix made from its
    // files would undo the newer keep, so it is proposed afresh instead.
    if (ctx.bestCommit !== undefined && offer.record.parent_commit !== ctx.bestCommit) return null;
    try {
      const files: Record<string, string> = {};
      for (const f of Object.keys(ctx.files)) files[f] = await gitShow(ctx.workdir, `${offer.record.commit}:${f}`);
      return { offer, files };
    } catch {
      return null;
    }
  }

  /** Removes the API key, and anything shaped like one, from text that may be recorded. */
  redact(text: string): string {
    let out = text.replace(/sk-ant-[A-Za-z0-9_-]+/g, 'sk-ant-[redacted]');
    if (this.opts.apiKey.length >= 8) out = out.split(this.opts.apiKey).join('[redacted]');
    return out;
  }
}

function usageOf(msg: Message): Usage {
  return {
    input_tokens: msg.usage.input_tokens ?? 0,
    output_tokens: msg.usage.output_tokens ?? 0,
    cache_creation_input_tokens: msg.usage.cache_creation_input_tokens ?? 0,
    cache_read_input_tokens: msg.usage.cache_read_input_tokens ?? 0,
  };
}

/** A response block as it must be sent back (thinking blocks included, with their signatures). */
function toParam(b: ContentBlock): ContentBlockParam | null {
  switch (b.type) {
    case 'text':
      return { type: 'text', text: b.text };
    case 'tool_use':
      return { type: 'tool_use', id: b.id, name: b.name, input: b.input };
    case 'thinking':
      return { type: 'thinking', thinking: b.thinking, signature: b.signature };
    case 'redacted_thinking':
      return { type: 'redacted_thinking', data: b.data };
    default:
      return null;
  }
}

const PERMANENT = new Set([
  'invalid_request_error',
  'authentication_error',
  'permission_error',
  'not_found_error',
  'request_too_large',
  'billing_error',
]);

/** Whether waiting and trying again can help. */
export function isTransient(e: unknown): boolean {
  if (e instanceof APIConnectionError) return true;
  if (e instanceof APIError) {
    // No status: an `event: error` in the middle of a stream (overloaded_error, api_error).
    if (e.status === undefined) return !PERMANENT.has(e.type ?? '');
    return e.status === 408 || e.status === 409 || e.status === 429 || e.status >= 500;
  }
  // The SDK's other errors come from the stream itself: a dropped connection, a cut response.
  return e instanceof AnthropicError;
}

function retryAfterMs(e: unknown): number {
  const headers = e instanceof APIError ? e.headers : undefined;
  const ms = Number(headers?.get('retry-after-ms') ?? NaN);
  const s = Number(headers?.get('retry-after') ?? NaN);
  const wait = Number.isFinite(ms) ? ms : Number.isFinite(s) ? s * 1000 : 0;
  return Math.min(Math.max(wait, 0), 3600_000);
}

function describe(e: unknown): string {
  if (e instanceof APIError) {
    const what = [e.status, e.type].filter(x => x !== undefined && x !== null).join(' ');
    return `${what || 'error'}: ${e.apiMessage ?? e.message}`;
  }
  return (e as Error)?.message ?? String(e);
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(new Error('stopped'));
    const onAbort = () => {
      clearTimeout(timer);
      reject(new Error('stopped'));
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

async function gitShow(cwd: string, spec: string): Promise<string> {
  const r = await exec('git', ['show', spec], { cwd });
  if (r.code !== 0) throw new Error(`git show ${spec} failed: ${r.stderr.trim()}`);
  return r.stdout;
}
