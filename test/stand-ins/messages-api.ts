/**
 * A local stand-in for Anthropic's Messages API, for tests and benchmarks.
 *
 * The real `@anthropic-ai/sdk` talks to it through `baseURL` exactly as it talks to
 * api.anthropic.com: same paths, headers, JSON bodies, SSE events and error shapes.
 * Replies are scripted (`enqueue`) or computed (`handler`); every request is recorded.
 *
 *   const server = await MessagesApiServer.start();
 *   server.enqueue({ type: 'message', content: [{ type: 'text', text: 'hi' }] });
 *   const client = new Anthropic({ apiKey: server.apiKey, baseURL: server.url });
 *
 * Wire format followed (docs: Messages API, Streaming Messages, Errors, Prompt caching):
 * - message: {id: 'msg_…', type: 'message', role: 'assistant', model, content, stop_reason,
 *   stop_sequence, usage: {input_tokens, cache_creation_input_tokens, cache_read_input_tokens,
 *   cache_creation: {ephemeral_5m_input_tokens, ephemeral_1h_input_tokens}, output_tokens, service_tier}}
 * - SSE: message_start, content_block_start, ping, content_block_delta (text_delta |
 *   input_json_delta), content_block_stop, message_delta, message_stop; `event: NAME\ndata: JSON\n\n`.
 * - errors: {type: 'error', error: {type, message}, request_id} with a `request-id` header.
 */
import { createHash, randomBytes } from 'node:crypto';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';

export type Block = { type: 'text'; text: string } | { type: 'tool_use'; id?: string; name: string; input: unknown };

export type Turn =
  | {
      type: 'message';
      content: Block[];
      stop_reason?: 'end_turn' | 'tool_use' | 'max_tokens' | 'stop_sequence';
      usage?: Partial<UsageWire>;
    }
  | {
      type: 'error';
      status: number;
      error_type: string;
      message: string;
      retry_after_ms?: number;
      /** Sets `x-should-retry: true|false`, a header the SDK obeys over its own retry rules. */
      should_retry?: boolean;
    }
  | { type: 'stream_error'; content: Block[]; after_events: number; error_type: string; message: string }
  | { type: 'truncated'; content: Block[]; after_events: number };

export interface UsageWire {
  input_tokens: number;
  output_tokens: number;
  cache_creation_input_tokens: number;
  cache_read_input_tokens: number;
}

export interface RecordedRequest {
  method: string;
  /** Path with any query string, e.g. `/v1/messages` or `/v1/messages?beta=true`. */
  path: string;
  headers: Record<string, string | string[] | undefined>;
  /** Parsed JSON body; the raw text when it was not JSON; null when empty. */
  body: any;
  stream: boolean;
  /** Date.now() when the request's body had arrived. */
  at: number;
}

export interface MessagesApiOptions {
  /** The one key accepted (default 'sk-ant-test-key'); any other, or none, gets 401 authentication_error. */
  apiKey?: string;
  /** Added before each response to POST /v1/messages (the pipelining benchmark uses 20 s). */
  latencyMs?: number;
  /** Dynamic replies. Scripted turns (`enqueue`) are used first while any are left. */
  handler?: (req: RecordedRequest) => Turn | Promise<Turn>;
  /**
   * Smallest prefix (in estimated tokens) that prompt caching will store; shorter prefixes are
   * silently not cached, as on the real API (1024 for Sonnet-class models). Default 0.
   */
  minCacheTokens?: number;
  /**
   * The real API merges consecutive same-role turns; by default this stand-in rejects them
   * (400) so a conversation built wrongly is caught. Set true to accept them.
   */
  allowConsecutiveRoles?: boolean;
  /** Delay between SSE events, ms (default 0). */
  eventIntervalMs?: number;
}

const DEFAULT_KEY = 'sk-ant-test-key';
const MAX_BODY_BYTES = 32 * 1024 * 1024;
const CACHE_TTL_MS = { '5m': 5 * 60_000, '1h': 60 * 60_000 } as const;
const MAX_CACHE_BREAKPOINTS = 4;

/** Text editor tool versions and the tool name each one requires. */
const TEXT_EDITOR_NAMES: Record<string, string> = {
  text_editor_20241022: 'str_replace_editor',
  text_editor_20250124: 'str_replace_editor',
  text_editor_20250429: 'str_replace_based_edit_tool',
  text_editor_20250728: 'str_replace_based_edit_tool',
};

/** GET /v1/models: current ids from the SDK's own `Model` union (none of them deprecated there). */
const MODELS = [
  { id: 'claude-opus-5-5', display_name: 'Claude Opus 5.5', created_at: '2026-09-01T00:00:00Z' },
  { id: 'claude-sonnet-5-5', display_name: 'Claude Sonnet 5.5', created_at: '2026-09-01T00:00:00Z' },
  { id: 'claude-haiku-5-5', display_name: 'Claude Haiku 5.5', created_at: '2026-09-01T00:00:00Z' },
  { id: 'claude-sonnet-4-6', display_name: 'Claude Sonnet 4.6', created_at: '2026-02-17T00:00:00Z' },
].map(m => ({ type: 'model', ...m, deprecated_at: null, capabilities: null }));

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
function randomId(prefix: string): string {
  const bytes = randomBytes(22);
  let s = '';
  for (const b of bytes) s += BASE62[b % 62];
  return `${prefix}01${s}`;
}

function estimateTokens(chars: number): number {
  return Math.max(1, Math.ceil(chars / 4));
}

class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly errorType: string,
    message: string,
  ) {
    super(message);
  }
}
const invalid = (message: string) => new ApiError(400, 'invalid_request_error', message);

function isObject(v: unknown): v is Record<string, any> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function sleep(ms: number, timers: Set<NodeJS.Timeout>): Promise<void> {
  if (ms <= 0) return Promise.resolve();
  return new Promise(resolve => {
    const t = setTimeout(() => {
      timers.delete(t);
      resolve();
    }, ms);
    timers.add(t);
  });
}

/** Validates a Messages request body like the real API does, minimally. Throws ApiError(400). */
function validateBody(body: unknown, opts: { countTokens: boolean; allowConsecutiveRoles: boolean }): void {
  if (!isObject(body)) throw invalid('Request body must be a JSON object');
  if (body.model === undefined) throw invalid('model: Field required');
  if (typeof body.model !== 'string' || body.model === '') throw invalid('model: Input should be a valid string');
  if (!opts.countTokens) {
    if (body.max_tokens === undefined) throw invalid('max_tokens: Field required');
    if (typeof body.max_tokens !== 'number' || !Number.isInteger(body.max_tokens))
      throw invalid('max_tokens: Input should be a valid integer');
    if (body.max_tokens < 1) throw invalid('max_tokens: Input should be greater than or equal to 1');
  }
  if (body.stream !== undefined && typeof body.stream !== 'boolean')
    throw invalid('stream: Input should be a valid boolean');
  if (body.messages === undefined) throw invalid('messages: Field required');
  if (!Array.isArray(body.messages)) throw invalid('messages: Input should be a valid list');
  if (body.messages.length === 0) throw invalid('messages: at least one message is required');

  if (body.system !== undefined && typeof body.system !== 'string') {
    if (!Array.isArray(body.system)) throw invalid('system: Input should be a valid string or list');
    body.system.forEach((b: unknown, i: number) => {
      if (!isObject(b) || b.type !== 'text' || typeof b.text !== 'string')
        throw invalid(`system.${i}: Input should be a text block ({"type": "text", "text": ...})`);
    });
  }

  if (body.tools !== undefined) {
    if (!Array.isArray(body.tools)) throw invalid('tools: Input should be a valid list');
    const names = new Set<string>();
    body.tools.forEach((t: unknown, i: number) => {
      if (!isObject(t)) throw invalid(`tools.${i}: Input should be a valid dictionary`);
      if (typeof t.name !== 'string' || t.name === '') throw invalid(`tools.${i}.name: Field required`);
      if (names.has(t.name)) throw invalid(`tools: Tool names must be unique. Duplicate: ${t.name}`);
      names.add(t.name);
      if (t.type === undefined || t.type === 'custom') {
        if (!/^[a-zA-Z0-9_-]{1,128}$/.test(t.name))
          throw invalid(`tools.${i}.custom.name: String should match pattern '^[a-zA-Z0-9_-]{1,128}$'`);
        if (!isObject(t.input_schema)) throw invalid(`tools.${i}.custom.input_schema: Field required`);
      } else if (typeof t.type === 'string' && t.type in TEXT_EDITOR_NAMES) {
        const want = TEXT_EDITOR_NAMES[t.type];
        if (t.name !== want) throw invalid(`tools.${i}.${t.type}.name: Input should be '${want}'`);
      }
    });
  }

  let prevRole: string | undefined;
  let prevToolUseIds: string[] = [];
  body.messages.forEach((m: unknown, i: number) => {
    if (!isObject(m)) throw invalid(`messages.${i}: Input should be a valid dictionary`);
    if (m.role !== 'user' && m.role !== 'assistant')
      throw invalid(`messages.${i}.role: Input should be 'user' or 'assistant'`);
    if (i === 0 && m.role !== 'user') throw invalid('messages: first message must use the "user" role');
    if (prevRole === m.role && !opts.allowConsecutiveRoles)
      throw invalid(
        `messages: roles must alternate between "user" and "assistant", but found multiple "${m.role}" roles in a row`,
      );
    if (m.content === undefined) throw invalid(`messages.${i}.content: Field required`);
    const blocks: any[] = typeof m.content === 'string' ? [] : m.content;
    if (typeof m.content !== 'string' && !Array.isArray(m.content))
      throw invalid(`messages.${i}.content: Input should be a valid string or list`);
    if (
      typeof m.content === 'string' &&
      m.content === '' &&
      !(m.role === 'assistant' && i === body.messages.length - 1)
    )
      throw invalid(
        `messages.${i}: all messages must have non-empty content except for the optional final assistant message`,
      );
    if (
      Array.isArray(m.content) &&
      m.content.length === 0 &&
      !(m.role === 'assistant' && i === body.messages.length - 1)
    )
      throw invalid(
        `messages.${i}: all messages must have non-empty content except for the optional final assistant message`,
      );
    blocks.forEach((b, j) => {
      if (!isObject(b) || typeof b.type !== 'string') throw invalid(`messages.${i}.content.${j}.type: Field required`);
      if (b.type === 'text' && typeof b.text !== 'string')
        throw invalid(`messages.${i}.content.${j}.text.text: Field required`);
      if (b.type === 'tool_use' && m.role !== 'assistant')
        throw invalid(`messages.${i}.content.${j}: tool_use blocks can only appear in assistant messages`);
      if (b.type === 'tool_result' && m.role !== 'user')
        throw invalid(`messages.${i}.content.${j}: tool_result blocks can only appear in user messages`);
    });

    // tool_use ↔ tool_result pairing, as the real API enforces it.
    const resultIds = blocks.filter(b => b.type === 'tool_result').map(b => String(b.tool_use_id));
    if (m.role === 'user') {
      const unexpected = resultIds.filter(id => !prevToolUseIds.includes(id));
      if (unexpected.length > 0)
        throw invalid(
          `messages.${i}.content: unexpected \`tool_use_id\` found in \`tool_result\` blocks: ${unexpected.join(', ')}. ` +
            'Each `tool_result` block must have a corresponding `tool_use` block in the previous message.',
        );
      const missing = prevToolUseIds.filter(id => !resultIds.includes(id));
      if (missing.length > 0)
        throw invalid(
          `messages.${i - 1}: \`tool_use\` ids were found without \`tool_result\` blocks immediately after: ${missing.join(', ')}. ` +
            'Each `tool_use` block must have a corresponding `tool_result` block in the next message.',
        );
      prevToolUseIds = [];
    } else {
      if (prevToolUseIds.length > 0)
        throw invalid(
          `messages.${i - 1}: \`tool_use\` ids were found without \`tool_result\` blocks immediately after: ${prevToolUseIds.join(', ')}. ` +
            'Each `tool_use` block must have a corresponding `tool_result` block in the next message.',
        );
      prevToolUseIds = blocks.filter(b => b.type === 'tool_use').map(b => String(b.id));
    }
    prevRole = m.role;
  });

  const breakpoints = segmentsOf(body).filter(s => s.ttl !== undefined).length;
  if (breakpoints > MAX_CACHE_BREAKPOINTS)
    throw invalid(
      `A maximum of ${MAX_CACHE_BREAKPOINTS} blocks with cache_control may be provided. Found ${breakpoints}.`,
    );
}

interface Segment {
  text: string;
  /** Set when the block carries `cache_control`; the breakpoint's TTL. */
  ttl?: '5m' | '1h';
}

/** The prompt as an ordered list of blocks, in cache-prefix order: tools, system, messages. */
function segmentsOf(body: Record<string, any>): Segment[] {
  const segs: Segment[] = [];
  const push = (block: unknown) => {
    if (isObject(block)) {
      const { cache_control, ...rest } = block;
      const ttl = isObject(cache_control) ? (cache_control.ttl === '1h' ? '1h' : '5m') : undefined;
      segs.push({ text: JSON.stringify(rest), ttl });
    } else {
      segs.push({ text: JSON.stringify(block) });
    }
  };
  if (Array.isArray(body.tools)) body.tools.forEach(push);
  if (typeof body.system === 'string') push(body.system);
  else if (Array.isArray(body.system)) body.system.forEach(push);
  if (Array.isArray(body.messages))
    for (const m of body.messages) {
      if (!isObject(m)) continue;
      segs.push({ text: `<${String(m.role)}>` });
      if (Array.isArray(m.content)) m.content.forEach(push);
      else push(m.content);
    }
  return segs;
}

export class MessagesApiServer {
  readonly url: string;
  readonly apiKey: string;
  readonly requests: RecordedRequest[] = [];

  private readonly queue: Turn[] = [];
  private readonly timers = new Set<NodeJS.Timeout>();
  /** Prompt cache: prefix hash → expiry time. */
  private readonly cache = new Map<string, number>();
  private closed = false;

  private constructor(
    private readonly server: http.Server,
    private readonly opts: MessagesApiOptions,
  ) {
    const { port } = server.address() as AddressInfo;
    this.url = `http://127.0.0.1:${port}`;
    this.apiKey = opts.apiKey ?? DEFAULT_KEY;
  }

  static start(opts: MessagesApiOptions = {}): Promise<MessagesApiServer> {
    return new Promise((resolve, reject) => {
      let self: MessagesApiServer | undefined;
      const server = http.createServer((req, res) => {
        self!.handle(req, res).catch(err => {
          if (!res.headersSent && !res.destroyed) {
            self!.sendError(res, 500, 'api_error', `stand-in failure: ${String(err?.message ?? err)}`);
          } else {
            res.destroy();
          }
        });
      });
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => {
        self = new MessagesApiServer(server, opts);
        resolve(self);
      });
    });
  }

  /** Scripted replies, consumed one per accepted POST /v1/messages (rejected requests consume none). */
  enqueue(...turns: Turn[]): void {
    this.queue.push(...turns);
  }

  /** How many scripted turns are left. */
  get remaining(): number {
    return this.queue.length;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
    await new Promise<void>(resolve => {
      this.server.close(() => resolve());
      this.server.closeAllConnections();
    });
  }

  // ---------------------------------------------------------------- request handling

  private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    let raw: string;
    try {
      raw = await readBody(req);
    } catch (err) {
      if (err instanceof ApiError) {
        this.sendError(res, err.status, err.errorType, err.message);
        return;
      }
      throw err;
    }
    let body: any = null;
    let parseError: string | undefined;
    if (raw.length > 0) {
      try {
        body = JSON.parse(raw);
      } catch (err) {
        body = raw;
        parseError = (err as Error).message;
      }
    }
    const path = req.url ?? '/';
    const pathname = path.split('?')[0];
    const recorded: RecordedRequest = {
      method: req.method ?? 'GET',
      path,
      headers: { ...req.headers },
      body,
      stream: isObject(body) && body.stream === true,
      at: Date.now(),
    };
    this.requests.push(recorded);

    const route =
      req.method === 'POST' && pathname === '/v1/messages'
        ? 'messages'
        : req.method === 'POST' && pathname === '/v1/messages/count_tokens'
          ? 'count_tokens'
          : req.method === 'GET' && pathname === '/v1/models'
            ? 'models'
            : req.method === 'GET' && pathname.startsWith('/v1/models/')
              ? 'model'
              : undefined;
    if (!route) {
      this.sendError(res, 404, 'not_found_error', 'Not found');
      return;
    }
    try {
      this.checkAuth(req);
      if (!req.headers['anthropic-version']) throw invalid('anthropic-version: header is required');
      if (route === 'models') {
        this.sendJson(res, 200, {
          data: MODELS,
          has_more: false,
          first_id: MODELS[0].id,
          last_id: MODELS[MODELS.length - 1].id,
        });
        return;
      }
      if (route === 'model') {
        const id = decodeURIComponent(pathname.slice('/v1/models/'.length));
        const m = MODELS.find(x => x.id === id);
        if (!m) throw new ApiError(404, 'not_found_error', `model: ${id}`);
        this.sendJson(res, 200, m);
        return;
      }
      if (parseError !== undefined) throw invalid(`There was an error parsing the body of your request: ${parseError}`);
      validateBody(body, {
        countTokens: route === 'count_tokens',
        allowConsecutiveRoles: this.opts.allowConsecutiveRoles ?? false,
      });
    } catch (err) {
      if (!(err instanceof ApiError)) throw err;
      await sleep(route === 'messages' ? (this.opts.latencyMs ?? 0) : 0, this.timers);
      this.sendError(res, err.status, err.errorType, err.message);
      return;
    }

    if (route === 'count_tokens') {
      const total = segmentsOf(body).reduce((n, s) => n + s.text.length, 0);
      this.sendJson(res, 200, { input_tokens: estimateTokens(total) });
      return;
    }

    let turn: Turn;
    if (this.queue.length > 0) turn = this.queue.shift()!;
    else if (this.opts.handler) {
      try {
        turn = await this.opts.handler(recorded);
      } catch (err) {
        turn = {
          type: 'error',
          status: 500,
          error_type: 'api_error',
          message: `handler threw: ${String((err as Error)?.message ?? err)}`,
        };
      }
    } else turn = { type: 'error', status: 500, error_type: 'api_error', message: 'no scripted turn left' };

    await sleep(this.opts.latencyMs ?? 0, this.timers);
    if (this.closed || res.destroyed) return;

    if (turn.type === 'error') {
      this.sendError(res, turn.status, turn.error_type, turn.message, turn.retry_after_ms, turn.should_retry);
      return;
    }
    if (!recorded.stream) {
      if (turn.type === 'stream_error') {
        // Without streaming the same failure arrives as an HTTP error.
        this.sendError(res, statusOf(turn.error_type), turn.error_type, turn.message);
        return;
      }
      if (turn.type === 'truncated') {
        res.socket?.destroy();
        return;
      }
      this.sendJson(res, 200, this.messageOf(body, turn));
      return;
    }
    await this.sendStream(res, body, turn);
  }

  private checkAuth(req: http.IncomingMessage): void {
    const xKey = req.headers['x-api-key'];
    const auth = req.headers['authorization'];
    if (typeof xKey === 'string' && xKey !== '') {
      if (xKey !== this.apiKey) throw new ApiError(401, 'authentication_error', 'invalid x-api-key');
      return;
    }
    if (typeof auth === 'string' && auth !== '') {
      const m = /^Bearer\s+(.+)$/i.exec(auth);
      if (!m || m[1] !== this.apiKey) throw new ApiError(401, 'authentication_error', 'Invalid bearer token');
      return;
    }
    throw new ApiError(401, 'authentication_error', 'x-api-key header is required');
  }

  // ---------------------------------------------------------------- replies

  private messageOf(
    body: Record<string, any>,
    turn: { content: Block[]; stop_reason?: string; usage?: Partial<UsageWire> },
  ) {
    const content = turn.content.map(b =>
      b.type === 'text'
        ? { type: 'text', text: b.text }
        : { type: 'tool_use', id: b.id ?? randomId('toolu_'), name: b.name, input: b.input ?? {} },
    );
    const stopReason = turn.stop_reason ?? (content.some(b => b.type === 'tool_use') ? 'tool_use' : 'end_turn');
    const stopSequence =
      stopReason === 'stop_sequence' && Array.isArray(body.stop_sequences) && body.stop_sequences.length > 0
        ? String(body.stop_sequences[0])
        : null;
    return {
      id: randomId('msg_'),
      type: 'message',
      role: 'assistant',
      model: body.model,
      content,
      stop_reason: stopReason,
      stop_sequence: stopSequence,
      usage: this.usageOf(body, content, turn.usage),
    };
  }

  /** Plausible usage, with prompt caching: a prefix written once is read on later requests. */
  private usageOf(
    body: Record<string, any>,
    content: any[],
    given: Partial<UsageWire> | undefined,
  ): Record<string, any> {
    const segs = segmentsOf(body);
    const total = estimateTokens(segs.reduce((n, s) => n + s.text.length, 0));
    const now = Date.now();
    const minTokens = this.opts.minCacheTokens ?? 0;
    const hash = createHash('sha256');
    hash.update(`${body.model}\n`);
    let chars = 0;
    let read = 0; // tokens of the longest breakpoint prefix found in the cache
    let cachedPrefix = 0; // tokens up to the last (cacheable) breakpoint
    let lastTtl: '5m' | '1h' = '5m';
    for (const s of segs) {
      hash.update(s.text);
      hash.update('\n');
      chars += s.text.length;
      if (s.ttl === undefined) continue;
      const tokens = estimateTokens(chars);
      if (tokens < minTokens) continue;
      const key = hash.copy().digest('hex');
      const expiry = this.cache.get(key);
      if (expiry !== undefined && expiry > now) read = tokens;
      this.cache.set(key, now + CACHE_TTL_MS[s.ttl]);
      cachedPrefix = tokens;
      lastTtl = s.ttl;
    }
    const created = cachedPrefix - read;
    const created1h = lastTtl === '1h' ? created : 0;
    const outputChars = content.reduce(
      (n, b) => n + (b.type === 'text' ? b.text.length : JSON.stringify(b.input).length + b.name.length),
      0,
    );
    const usage = {
      input_tokens: Math.max(total - cachedPrefix, 0),
      cache_creation_input_tokens: created,
      cache_read_input_tokens: read,
      cache_creation: { ephemeral_5m_input_tokens: created - created1h, ephemeral_1h_input_tokens: created1h },
      output_tokens: estimateTokens(outputChars),
      service_tier: 'standard',
      ...given,
    };
    if (given?.cache_creation_input_tokens !== undefined)
      usage.cache_creation = {
        ephemeral_5m_input_tokens: given.cache_creation_input_tokens,
        ephemeral_1h_input_tokens: 0,
      };
    return usage;
  }

  private async sendStream(
    res: http.ServerResponse,
    body: Record<string, any>,
    turn: Extract<Turn, { type: 'message' | 'stream_error' | 'truncated' }>,
  ): Promise<void> {
    const message = this.messageOf(body, turn);
    const events: [string, unknown][] = [];
    events.push([
      'message_start',
      {
        type: 'message_start',
        message: {
          ...message,
          content: [],
          stop_reason: null,
          stop_sequence: null,
          usage: { ...message.usage, output_tokens: Math.min(1, message.usage.output_tokens) },
        },
      },
    ]);
    message.content.forEach((block: any, index: number) => {
      if (block.type === 'text') {
        events.push([
          'content_block_start',
          { type: 'content_block_start', index, content_block: { type: 'text', text: '' } },
        ]);
        if (index === 0) events.push(['ping', { type: 'ping' }]);
        for (const piece of chunks(block.text, 4))
          events.push([
            'content_block_delta',
            { type: 'content_block_delta', index, delta: { type: 'text_delta', text: piece } },
          ]);
      } else {
        events.push([
          'content_block_start',
          {
            type: 'content_block_start',
            index,
            content_block: { type: 'tool_use', id: block.id, name: block.name, input: {} },
          },
        ]);
        if (index === 0) events.push(['ping', { type: 'ping' }]);
        const json = JSON.stringify(block.input);
        for (const piece of ['', ...chunks(json, 3)])
          events.push([
            'content_block_delta',
            { type: 'content_block_delta', index, delta: { type: 'input_json_delta', partial_json: piece } },
          ]);
      }
      events.push(['content_block_stop', { type: 'content_block_stop', index }]);
    });
    if (message.content.length === 0) events.push(['ping', { type: 'ping' }]);
    const { cache_creation: _unused, service_tier: _tier, ...deltaUsage } = message.usage;
    events.push([
      'message_delta',
      {
        type: 'message_delta',
        delta: { stop_reason: message.stop_reason, stop_sequence: message.stop_sequence },
        usage: deltaUsage,
      },
    ]);
    events.push(['message_stop', { type: 'message_stop' }]);

    const limit = turn.type === 'message' ? events.length : Math.max(0, Math.min(turn.after_events, events.length));
    res.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache',
      'request-id': randomId('req_'),
    });
    res.flushHeaders();
    const interval = this.opts.eventIntervalMs ?? 0;
    for (let i = 0; i < limit; i++) {
      if (this.closed || res.destroyed) return;
      const [name, data] = events[i];
      await write(res, `event: ${name}\ndata: ${JSON.stringify(data)}\n\n`);
      if (interval > 0 && i < limit - 1) await sleep(interval, this.timers);
    }
    if (this.closed || res.destroyed) return;
    if (turn.type === 'stream_error') {
      await write(
        res,
        `event: error\ndata: ${JSON.stringify({ type: 'error', error: { type: turn.error_type, message: turn.message } })}\n\n`,
      );
      res.end();
    } else if (turn.type === 'truncated') {
      res.socket?.destroy();
    } else {
      res.end();
    }
  }

  private sendJson(
    res: http.ServerResponse,
    status: number,
    payload: unknown,
    headers: Record<string, string> = {},
    requestId = randomId('req_'),
  ): string {
    const text = JSON.stringify(payload);
    res.writeHead(status, {
      'content-type': 'application/json',
      'content-length': Buffer.byteLength(text),
      'request-id': requestId,
      ...headers,
    });
    res.end(text);
    return requestId;
  }

  private sendError(
    res: http.ServerResponse,
    status: number,
    errorType: string,
    message: string,
    retryAfterMs?: number,
    shouldRetry?: boolean,
  ): void {
    if (res.headersSent || res.destroyed) return;
    const requestId = randomId('req_');
    const headers: Record<string, string> = {};
    if (retryAfterMs !== undefined) {
      headers['retry-after-ms'] = String(retryAfterMs);
      headers['retry-after'] = String(Math.ceil(retryAfterMs / 1000));
    }
    if (shouldRetry !== undefined) headers['x-should-retry'] = String(shouldRetry);
    this.sendJson(
      res,
      status,
      { type: 'error', error: { type: errorType, message }, request_id: requestId },
      headers,
      requestId,
    );
  }
}

/** The HTTP status the API uses for an error type. */
function statusOf(errorType: string): number {
  switch (errorType) {
    case 'invalid_request_error':
      return 400;
    case 'authentication_error':
      return 401;
    case 'permission_error':
      return 403;
    case 'not_found_error':
      return 404;
    case 'request_too_large':
      return 413;
    case 'rate_limit_error':
      return 429;
    case 'overloaded_error':
      return 529;
    default:
      return 500;
  }
}

/** Splits text into about `n` pieces (never splitting a UTF-16 surrogate pair). */
function chunks(text: string, n: number): string[] {
  const chars = Array.from(text);
  if (chars.length === 0) return [];
  const size = Math.max(1, Math.ceil(chars.length / n));
  const out: string[] = [];
  for (let i = 0; i < chars.length; i += size) out.push(chars.slice(i, i + size).join(''));
  return out;
}

function write(res: http.ServerResponse, data: string): Promise<void> {
  return new Promise(resolve => {
    res.write(data, () => resolve());
  });
}

function readBody(req: http.IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const parts: Buffer[] = [];
    let size = 0;
    let tooLarge = false;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_BODY_BYTES) tooLarge = true;
      else parts.push(chunk);
    });
    req.on('end', () =>
      tooLarge
        ? reject(new ApiError(413, 'request_too_large', 'Request exceeds the maximum allowed number of bytes.'))
        : resolve(Buffer.concat(parts).toString('utf8')),
    );
    req.on('error', reject);
  });
}
