/**
 * One Messages API request of a proposal, streamed (so an overload mid-answer is seen), retried
 * through every transient failure (429, 529, 5xx, a dropped or cut stream) until it succeeds or
 * the run stops. A stream that was cut after it began was billed for its prompt and for what it
 * generated: that usage is handed back (`onLost`) so the ledger holds every billed token, the
 * retries' included. A refusal that waiting cannot cure is a RequestRefused, with its status. A
 * reply whose streamed tool input is not valid JSON is the model's error, not an outage: it is a
 * MalformedToolInput, never retried, for the proposer to answer with an is_error tool result.
 */
import type Anthropic from '@anthropic-ai/sdk';
import { APIConnectionError, APIError, APIUserAbortError, AnthropicError } from '@anthropic-ai/sdk';
import type {
  ContentBlock,
  Message,
  MessageCreateParamsBase,
  RawContentBlockDelta,
} from '@anthropic-ai/sdk/resources/messages';
import type { Usage } from '../../../core/journal/journal';

/** A request the API refused for good (a 400, a 401, …): the proposal, or the run, must not repeat it. */
export class RequestRefused extends Error {
  constructor(
    message: string,
    readonly status: number | undefined,
    readonly type: string | undefined,
    options?: ErrorOptions,
  ) {
    super(message, options);
    this.name = 'RequestRefused';
  }
}

/**
 * A reply cut short by a tool call whose streamed input did not parse as JSON (the SDK's stream
 * throws at that block's end and reads nothing after it). Its usage went to onLost like any cut
 * stream's; `before` are the blocks that came whole before the bad call.
 */
export class MalformedToolInput extends Error {
  constructor(
    readonly before: ContentBlock[],
    readonly id: string,
    readonly toolName: string,
    readonly detail: string,
  ) {
    super(`the input of tool call ${toolName} was not valid JSON: ${detail}`);
    this.name = 'MalformedToolInput';
  }
}

/** How much of the parser's message a MalformedToolInput keeps (it may quote the whole bad input). */
const MALFORMED_DETAIL_CHARS = 300;

export interface RequesterOptions {
  /** Engine-level backoff between attempts after the SDK gave up: base and cap in ms. */
  backoff?: { baseMs: number; maxMs: number };
  onNote?: (text: string) => void;
  /** Removes the API key from text that may be shown or recorded. */
  redact: (text: string) => string;
}

/** The usage the API reported for a message (the 1-hour part of its cache writes included). */
export function usageOf(usage: Partial<Message['usage']> | undefined): Usage {
  const hour = usage?.cache_creation?.ephemeral_1h_input_tokens ?? 0;
  return {
    input_tokens: usage?.input_tokens ?? 0,
    output_tokens: usage?.output_tokens ?? 0,
    cache_creation_input_tokens: usage?.cache_creation_input_tokens ?? 0,
    cache_read_input_tokens: usage?.cache_read_input_tokens ?? 0,
    ...(hour > 0 ? { cache_creation_1h_input_tokens: hour } : {}),
  };
}

export class Requester {
  constructor(
    private readonly client: Anthropic,
    private readonly opts: RequesterOptions,
  ) {}

  /** The message, after as many attempts as it takes; onLost gets the usage of each attempt cut after it began. */
  async send(
    params: MessageCreateParamsBase,
    signal: AbortSignal | undefined,
    onLost: (u: Usage) => void,
  ): Promise<Message> {
    const { baseMs, maxMs } = this.opts.backoff ?? { baseMs: 2000, maxMs: 300_000 };
    for (let attempt = 0; ; attempt++) {
      let snapshot: Message | undefined;
      let streamed = 0;
      try {
        const stream = this.client.messages.stream(params, { signal });
        stream.on('streamEvent', (event, snap) => {
          snapshot = snap;
          if (event.type === 'content_block_delta') streamed += deltaChars(event.delta);
        });
        const msg = await stream.finalMessage();
        // A stream cut before message_delta has no stop reason: the answer is incomplete.
        if (msg.stop_reason === null) throw new AnthropicError('the response stream ended early');
        return msg;
      } catch (e) {
        if (snapshot) onLost(lostUsage(snapshot, streamed));
        if (signal?.aborted || e instanceof APIUserAbortError) throw e;
        // Asking again would bill the same prompt for what may well be the same bad JSON.
        const bad = snapshot && parseFailure(e) ? malformedIn(snapshot) : null;
        if (bad) throw bad;
        if (!isTransient(e)) {
          const status = e instanceof APIError ? e.status : undefined;
          const type = e instanceof APIError ? (e.type ?? undefined) : undefined;
          throw new RequestRefused(this.opts.redact(describe(e)), status, type, { cause: e });
        }
        const cap = Math.min(maxMs, baseMs * 2 ** Math.min(attempt, 20));
        // Equal jitter: never less than half the step, so many engines don't retry in lockstep.
        const wait = Math.max(retryAfterMs(e), cap / 2 + Math.random() * (cap / 2));
        this.opts.onNote?.(
          `the Messages API is unavailable (${this.opts.redact(describe(e))}); retrying in ${Math.round(wait / 1000)} s`,
        );
        await sleep(wait, signal);
      }
    }
  }
}

/**
 * The first tool call of a streamed snapshot whose input does not parse, as a MalformedToolInput;
 * null when every input parses (the stream failed for another reason). The SDK parses a tool
 * input lazily, on first read of `input`, and throws there when it is not JSON.
 */
function malformedIn(snapshot: Message): MalformedToolInput | null {
  for (let i = 0; i < snapshot.content.length; i++) {
    const b = snapshot.content[i];
    if (b.type !== 'tool_use') continue;
    try {
      void b.input;
    } catch (e) {
      const detail = clipDetail((e as Error)?.message ?? String(e));
      return new MalformedToolInput(snapshot.content.slice(0, i), b.id, b.name, detail);
    }
  }
  return null;
}

/** Whether the stream failed parsing JSON (the SDK wraps the SyntaxError in an AnthropicError, as its cause). */
function parseFailure(e: unknown): boolean {
  return e instanceof SyntaxError || (e instanceof AnthropicError && e.cause instanceof SyntaxError);
}

/** A parser message, cut to MALFORMED_DETAIL_CHARS (it may quote the whole input). */
function clipDetail(message: string): string {
  return message.length > MALFORMED_DETAIL_CHARS ? `${message.slice(0, MALFORMED_DETAIL_CHARS)}…` : message;
}

/**
 * What a cut stream was billed: its prompt as message_start reported it, and its output, which
 * the API reports only at the end: the larger of what it had said and what arrived (≈ 4 characters a token).
 */
function lostUsage(snapshot: Message, streamedChars: number): Usage {
  const u = usageOf(snapshot.usage);
  return { ...u, output_tokens: Math.max(u.output_tokens, Math.ceil(streamedChars / 4)) };
}

function deltaChars(delta: RawContentBlockDelta): number {
  switch (delta.type) {
    case 'text_delta':
      return delta.text.length;
    case 'input_json_delta':
      return delta.partial_json.length;
    case 'thinking_delta':
      return delta.thinking.length;
    default:
      return 0;
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

/** "429 rate_limit_error: slow down", or the error's message. */
export function describe(e: unknown): string {
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
