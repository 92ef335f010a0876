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
 * Wire format followed (docs: Messages API, Streaming Messages, Errors, Prompt caching, Thinking):
 * - message: {id: 'msg_…', type: 'message', role: 'assistant', model, content, stop_reason,
 *   stop_sequence, usage: {input_tokens, cache_creation_input_tokens, cache_read_input_tokens,
 *   cache_creation: {ephemeral_5m_input_tokens, ephemeral_1h_input_tokens}, output_tokens, service_tier}}
 * - SSE: ./messages-sse.ts; the prompt cache (5-minute and 1-hour TTLs, the 20-block lookback):
 *   ./messages-cache.ts; what a body may be (thinking and effort per model): ./messages-validate.ts.
 * - thinking: scripted thinking blocks appear only when the request's thinking is on (or the
 *   model thinks by default), their text empty where display is omitted, each with a signature
 *   the API checks when it is sent back.
 * - errors: {type: 'error', error: {type, message}, request_id} with a `request-id` header.
 */
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { estimateTokens, isObject, PromptCache, segmentsOf } from './messages-cache';
import { readBody, sleep, statusOf, write } from './messages-http';
import { MODELS } from './messages-models';
import { randomId, replyOf } from './messages-reply';
import { jsonOf, streamEvents } from './messages-sse';
import type { MessagesApiOptions, RecordedRequest, Turn } from './messages-types';
import { ApiError, invalid, validateBody } from './messages-validate';

export type { Block, MessagesApiOptions, RecordedRequest, Turn, UsageWire } from './messages-types';

const DEFAULT_KEY = 'sk-ant-test-key';

export class MessagesApiServer {
  readonly url: string;
  readonly apiKey: string;
  readonly requests: RecordedRequest[] = [];

  private readonly queue: Turn[] = [];
  private readonly timers = new Set<NodeJS.Timeout>();
  private readonly cache: PromptCache;
  /** Signatures of the thinking blocks (and data of redacted ones) issued, which a request may send back. */
  private readonly issued = new Set<string>();
  private closed = false;

  private constructor(
    private readonly server: http.Server,
    private readonly opts: MessagesApiOptions,
  ) {
    const { port } = server.address() as AddressInfo;
    this.url = `http://127.0.0.1:${port}`;
    this.apiKey = opts.apiKey ?? DEFAULT_KEY;
    this.cache = new PromptCache(opts.minCacheTokens ?? 0, opts.now ?? Date.now);
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
        issued: this.issued,
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
      this.sendJson(res, 200, jsonOf(replyOf(body, turn, this.issued, this.cache)));
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

  private async sendStream(
    res: http.ServerResponse,
    body: Record<string, any>,
    turn: Extract<Turn, { type: 'message' | 'stream_error' | 'truncated' }>,
  ): Promise<void> {
    const events = streamEvents(replyOf(body, turn, this.issued, this.cache));
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
