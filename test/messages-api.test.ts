/** The Messages API stand-in, driven by the real @anthropic-ai/sdk through `baseURL`. */
import Anthropic from '@anthropic-ai/sdk';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { MessagesApiServer, type RecordedRequest, type Turn } from './stand-ins/messages-api';

const MODEL = 'claude-sonnet-5-5';
const EDIT_TOOL = { type: 'text_editor_20250728', name: 'str_replace_based_edit_tool' } as const;
const FINISH_TOOL = {
  name: 'finish_experiment',
  description: 'End the proposal.',
  input_schema: {
    type: 'object' as const,
    properties: { description: { type: 'string' }, rationale: { type: 'string' } },
    required: ['description', 'rationale'],
  },
};
const USER = [{ role: 'user' as const, content: 'Propose the next experiment.' }];

let server: MessagesApiServer;
const extra: MessagesApiServer[] = [];

function client(opts: Partial<ConstructorParameters<typeof Anthropic>[0]> = {}): Anthropic {
  return new Anthropic({ apiKey: server.apiKey, baseURL: server.url, maxRetries: 0, ...opts });
}

const reply = (text: string): Turn => ({ type: 'message', content: [{ type: 'text', text }] });

beforeEach(async () => {
  server = await MessagesApiServer.start();
});
afterEach(async () => {
  await server.close();
  while (extra.length) await extra.pop()!.close();
});

describe('Messages API stand-in with the real SDK', () => {
  it('returns a JSON tool_use reply the SDK parses', async () => {
    server.enqueue({
      type: 'message',
      content: [
        { type: 'text', text: 'Raising the learning rate.' },
        {
          type: 'tool_use',
          name: 'finish_experiment',
          input: { description: 'lr 0.04', rationale: 'loss still falling' },
        },
      ],
    });
    const msg = await client().messages.create({
      model: MODEL,
      max_tokens: 1024,
      tools: [EDIT_TOOL, FINISH_TOOL],
      messages: USER,
    });
    expect(msg.type).toBe('message');
    expect(msg.role).toBe('assistant');
    expect(msg.model).toBe(MODEL);
    expect(msg.id).toMatch(/^msg_/);
    expect(msg.stop_reason).toBe('tool_use');
    expect(msg.stop_sequence).toBeNull();
    expect(msg.content[0]).toEqual({ type: 'text', text: 'Raising the learning rate.' });
    const tool = msg.content[1];
    expect(tool.type).toBe('tool_use');
    if (tool.type !== 'tool_use') throw new Error('unreachable');
    expect(tool.id).toMatch(/^toolu_/);
    expect(tool.name).toBe('finish_experiment');
    expect(tool.input).toEqual({ description: 'lr 0.04', rationale: 'loss still falling' });
    expect(msg.usage.input_tokens).toBeGreaterThan(0);
    expect(msg.usage.output_tokens).toBeGreaterThan(0);
    expect(msg.usage.cache_creation_input_tokens).toBe(0);
    expect(msg.usage.cache_read_input_tokens).toBe(0);
  });

  it('honours scripted ids, stop_reason and usage', async () => {
    server.enqueue({
      type: 'message',
      content: [
        {
          type: 'tool_use',
          id: 'toolu_fixed',
          name: 'str_replace_based_edit_tool',
          input: { command: 'view', path: 'train.py' },
        },
      ],
      stop_reason: 'max_tokens',
      usage: { input_tokens: 1234, output_tokens: 56, cache_read_input_tokens: 7 },
    });
    const msg = await client().messages.create({ model: MODEL, max_tokens: 50, tools: [EDIT_TOOL], messages: USER });
    expect(msg.stop_reason).toBe('max_tokens');
    expect(msg.content[0]).toMatchObject({ id: 'toolu_fixed', input: { command: 'view', path: 'train.py' } });
    expect(msg.usage).toMatchObject({
      input_tokens: 1234,
      output_tokens: 56,
      cache_read_input_tokens: 7,
      cache_creation_input_tokens: 0,
    });
  });

  it('streams text and tool input; finalMessage() reassembles them', async () => {
    const input = { command: 'str_replace', path: 'train.py', old_str: 'LR = 0.02', new_str: 'LR = 0.04' };
    server.enqueue({
      type: 'message',
      content: [
        { type: 'text', text: 'I will double the learning rate, since the loss curve is still steep.' },
        { type: 'tool_use', name: 'str_replace_based_edit_tool', input },
      ],
    });
    const stream = client().messages.stream({ model: MODEL, max_tokens: 1024, tools: [EDIT_TOOL], messages: USER });
    const events: string[] = [];
    const jsonPieces: string[] = [];
    stream.on('streamEvent', e => {
      events.push(e.type);
      if (e.type === 'content_block_delta' && e.delta.type === 'input_json_delta')
        jsonPieces.push(e.delta.partial_json);
    });
    const msg = await stream.finalMessage();
    expect(msg.content[0]).toEqual({
      type: 'text',
      text: 'I will double the learning rate, since the loss curve is still steep.',
    });
    expect(msg.content[1]).toMatchObject({ type: 'tool_use', name: 'str_replace_based_edit_tool', input });
    expect(msg.stop_reason).toBe('tool_use');
    expect(msg.usage.output_tokens).toBeGreaterThan(1);
    expect(msg.usage.input_tokens).toBeGreaterThan(0);
    expect(jsonPieces.filter(p => p !== '').length).toBeGreaterThan(1);
    expect(jsonPieces.join('')).toBe(JSON.stringify(input));
    expect(events[0]).toBe('message_start');
    expect(events.slice(-2)).toEqual(['message_delta', 'message_stop']);
    expect(events.filter(e => e === 'content_block_start')).toHaveLength(2);
    expect(events.filter(e => e === 'content_block_stop')).toHaveLength(2);
    expect(events.filter(e => e === 'content_block_delta').length).toBeGreaterThan(4);
    expect(server.requests[0].stream).toBe(true);
  });

  it('speaks SSE on the wire: content-type, event/data lines, ping', async () => {
    server.enqueue(reply('hello'));
    const res = await fetch(`${server.url}/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': server.apiKey, 'anthropic-version': '2023-06-01' },
      body: JSON.stringify({ model: MODEL, max_tokens: 10, stream: true, messages: USER }),
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
    expect(res.headers.get('request-id')).toMatch(/^req_/);
    const text = await res.text();
    const frames = text.split('\n\n').filter(Boolean);
    const names = frames.map(f => /^event: (\w+)\ndata: (\{.*\})$/.exec(f)![1]);
    expect(names).toEqual([
      'message_start',
      'content_block_start',
      'ping',
      ...Array(names.length - 6).fill('content_block_delta'),
      'content_block_stop',
      'message_delta',
      'message_stop',
    ]);
    for (const f of frames) {
      const [, name, data] = /^event: (\w+)\ndata: (\{.*\})$/.exec(f)!;
      expect(JSON.parse(data).type).toBe(name);
    }
    const start = JSON.parse(frames[0].split('data: ')[1]);
    expect(start.message).toMatchObject({
      type: 'message',
      role: 'assistant',
      content: [],
      stop_reason: null,
      model: MODEL,
    });
    const delta = JSON.parse(frames[frames.length - 2].split('data: ')[1]);
    expect(delta.delta).toEqual({ stop_reason: 'end_turn', stop_sequence: null });
    expect(delta.usage.output_tokens).toBeGreaterThan(0);
  });

  it('accepts both auth header forms', async () => {
    server.enqueue(reply('a'), reply('b'), reply('c'));
    // This SDK version sends `apiKey` as `Authorization: Bearer …`.
    await client().messages.create({ model: MODEL, max_tokens: 10, messages: USER });
    expect(server.requests[0].headers['authorization']).toBe(`Bearer ${server.apiKey}`);

    await client({ apiKey: undefined, authToken: server.apiKey }).messages.create({
      model: MODEL,
      max_tokens: 10,
      messages: USER,
    });
    expect(server.requests[1].headers['authorization']).toBe(`Bearer ${server.apiKey}`);

    const viaHeader = new Anthropic({
      apiKey: server.apiKey,
      baseURL: server.url,
      maxRetries: 0,
      defaultHeaders: { 'x-api-key': server.apiKey, Authorization: null },
    });
    const msg = await viaHeader.messages.create({ model: MODEL, max_tokens: 10, messages: USER });
    expect(msg.content[0]).toEqual({ type: 'text', text: 'c' });
    expect(server.requests[2].headers['x-api-key']).toBe(server.apiKey);
    expect(server.requests[2].headers['authorization']).toBeUndefined();
  });

  it('rejects a wrong key with 401 → AuthenticationError', async () => {
    server.enqueue(reply('never'));
    const bad = client({ apiKey: 'sk-ant-wrong' });
    const err = await bad.messages.create({ model: MODEL, max_tokens: 10, messages: USER }).catch(e => e);
    expect(err).toBeInstanceOf(Anthropic.AuthenticationError);
    expect(err.status).toBe(401);
    expect(err.type).toBe('authentication_error');
    expect(err.requestID).toMatch(/^req_/);

    const viaHeader = new Anthropic({
      apiKey: 'x',
      baseURL: server.url,
      maxRetries: 0,
      defaultHeaders: { 'x-api-key': 'nope', Authorization: null },
    });
    const err2 = await viaHeader.messages.create({ model: MODEL, max_tokens: 10, messages: USER }).catch(e => e);
    expect(err2).toBeInstanceOf(Anthropic.AuthenticationError);
    expect(err2.error).toMatchObject({
      type: 'error',
      error: { type: 'authentication_error', message: 'invalid x-api-key' },
    });
    expect(server.requests).toHaveLength(2); // rejected requests are recorded
    expect(server.remaining).toBe(1); // …and consume no scripted turn
  });

  it('429 with retry-after-ms: the SDK waits and retries by itself', async () => {
    server.enqueue(
      {
        type: 'error',
        status: 429,
        error_type: 'rate_limit_error',
        message: 'Number of request tokens has exceeded your per-minute rate limit',
        retry_after_ms: 200,
      },
      reply('after the wait'),
    );
    const msg = await client({ maxRetries: 2 }).messages.create({ model: MODEL, max_tokens: 10, messages: USER });
    expect(msg.content[0]).toEqual({ type: 'text', text: 'after the wait' });
    expect(server.requests).toHaveLength(2);
    const gap = server.requests[1].at - server.requests[0].at;
    expect(gap).toBeGreaterThanOrEqual(200);
    expect(gap).toBeLessThan(450); // the header, not the SDK's default 0.5 s backoff
    expect(server.requests[1].headers['x-stainless-retry-count']).toBe('1');
  });

  it('sends retry-after-ms and retry-after headers with the error body', async () => {
    server.enqueue({
      type: 'error',
      status: 429,
      error_type: 'rate_limit_error',
      message: 'slow down',
      retry_after_ms: 1500,
    });
    const res = await fetch(`${server.url}/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': server.apiKey, 'anthropic-version': '2023-06-01' },
      body: JSON.stringify({ model: MODEL, max_tokens: 10, messages: USER }),
    });
    expect(res.status).toBe(429);
    expect(res.headers.get('retry-after-ms')).toBe('1500');
    expect(res.headers.get('retry-after')).toBe('2');
    const body = await res.json();
    expect(body).toEqual({
      type: 'error',
      error: { type: 'rate_limit_error', message: 'slow down' },
      request_id: res.headers.get('request-id'),
    });
  });

  it('529 with maxRetries 0 → APIError with status 529', async () => {
    server.enqueue({ type: 'error', status: 529, error_type: 'overloaded_error', message: 'Overloaded' });
    const err = await client()
      .messages.create({ model: MODEL, max_tokens: 10, messages: USER })
      .catch(e => e);
    expect(err).toBeInstanceOf(Anthropic.APIError);
    expect(err).toBeInstanceOf(Anthropic.InternalServerError);
    expect(err.status).toBe(529);
    expect(err.type).toBe('overloaded_error');
    expect(err.message).toContain('Overloaded');
    expect(server.requests).toHaveLength(1);
  });

  it('x-should-retry: false stops the SDK retrying a 529', async () => {
    server.enqueue(
      { type: 'error', status: 529, error_type: 'overloaded_error', message: 'Overloaded', should_retry: false },
      reply('unused'),
    );
    const err = await client({ maxRetries: 2 })
      .messages.create({ model: MODEL, max_tokens: 10, messages: USER })
      .catch(e => e);
    expect(err.status).toBe(529);
    expect(server.requests).toHaveLength(1);
  });

  it('400 invalid_request_error for bad bodies, naming the problem', async () => {
    server.enqueue(reply('kept for later'));
    const c = client();
    const cases: [any, RegExp][] = [
      [
        { model: MODEL, max_tokens: 10, messages: [{ role: 'assistant', content: 'hi' }] },
        /first message must use the "user" role/,
      ],
      [
        {
          model: MODEL,
          max_tokens: 10,
          messages: [
            { role: 'user', content: 'a' },
            { role: 'user', content: 'b' },
          ],
        },
        /roles must alternate/,
      ],
      [{ model: MODEL, max_tokens: 10, messages: [] }, /at least one message/],
      [{ model: MODEL, messages: USER }, /max_tokens: Field required/],
      [{ model: MODEL, max_tokens: 0, messages: USER }, /max_tokens/],
      [{ max_tokens: 10, messages: USER }, /model: Field required/],
      [
        { model: MODEL, max_tokens: 10, messages: USER, tools: [{ type: 'text_editor_20250728', name: 'edit' }] },
        /str_replace_based_edit_tool/,
      ],
      [
        {
          model: MODEL,
          max_tokens: 10,
          messages: [
            ...USER,
            { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_1', name: 'finish_experiment', input: {} }] },
            { role: 'user', content: [{ type: 'text', text: 'no result' }] },
          ],
        },
        /tool_use` ids were found without `tool_result`.*toolu_1/,
      ],
      [
        {
          model: MODEL,
          max_tokens: 10,
          messages: [
            ...USER,
            { role: 'assistant', content: 'ok' },
            { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_x', content: 'r' }] },
          ],
        },
        /unexpected `tool_use_id`.*toolu_x/,
      ],
    ];
    for (const [body, pattern] of cases) {
      const err = await c.messages.create(body).catch(e => e);
      expect(err, JSON.stringify(body)).toBeInstanceOf(Anthropic.BadRequestError);
      expect(err.type).toBe('invalid_request_error');
      expect(err.apiMessage).toMatch(pattern);
    }
    expect(server.requests).toHaveLength(cases.length);
    expect(server.remaining).toBe(1);
    // A well-formed tool loop passes.
    const ok = await c.messages.create({
      model: MODEL,
      max_tokens: 10,
      tools: [FINISH_TOOL],
      messages: [
        ...USER,
        { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_1', name: 'finish_experiment', input: {} }] },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: 'done', is_error: true }] },
      ],
    });
    expect(ok.content[0]).toEqual({ type: 'text', text: 'kept for later' });
  });

  it('requires anthropic-version, and 404s unknown paths', async () => {
    const noVersion = await fetch(`${server.url}/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': server.apiKey },
      body: JSON.stringify({ model: MODEL, max_tokens: 10, messages: USER }),
    });
    expect(noVersion.status).toBe(400);
    expect((await noVersion.json()).error).toEqual({
      type: 'invalid_request_error',
      message: 'anthropic-version: header is required',
    });

    const missing = await fetch(`${server.url}/v1/complete-nonsense`, { method: 'POST' });
    expect(missing.status).toBe(404);
    expect((await missing.json()).error.type).toBe('not_found_error');

    const models = await client().models.list();
    expect(models.data.map(m => m.id)).toContain(MODEL);
  });

  it('a mid-stream `event: error` rejects the SDK stream with overloaded_error', async () => {
    server.enqueue({
      type: 'stream_error',
      content: [{ type: 'text', text: 'Thinking about the learning rate schedule and warmup.' }],
      after_events: 4,
      error_type: 'overloaded_error',
      message: 'Overloaded',
    });
    const stream = client({ maxRetries: 2 }).messages.stream({ model: MODEL, max_tokens: 100, messages: USER });
    let text = '';
    stream.on('text', t => (text += t));
    const err = await stream.finalMessage().catch(e => e);
    expect(err).toBeInstanceOf(Anthropic.APIError);
    expect(err.type).toBe('overloaded_error');
    expect(err.apiMessage).toBe('Overloaded');
    expect(err.message).toMatch(/overloaded/i);
    expect(text.length).toBeGreaterThan(0); // some text arrived before the error
    expect(server.requests).toHaveLength(1); // a started stream is not retried by the SDK
  });

  it('a truncated stream rejects the SDK stream', async () => {
    server.enqueue({
      type: 'truncated',
      content: [{ type: 'tool_use', name: 'finish_experiment', input: { description: 'x', rationale: 'y' } }],
      after_events: 3,
    });
    const stream = client({ maxRetries: 2 }).messages.stream({
      model: MODEL,
      max_tokens: 100,
      tools: [FINISH_TOOL],
      messages: USER,
    });
    const err = await stream.finalMessage().catch(e => e);
    expect(err).toBeInstanceOf(Anthropic.AnthropicError);
    expect(String(err.message)).toMatch(/terminated|closed|socket|connection/i);
    expect(server.requests).toHaveLength(1);
  });

  it('no scripted turn left → 500 api_error', async () => {
    const err = await client()
      .messages.create({ model: MODEL, max_tokens: 10, messages: USER })
      .catch(e => e);
    expect(err).toBeInstanceOf(Anthropic.InternalServerError);
    expect(err.status).toBe(500);
    expect(err.apiMessage).toBe('no scripted turn left');
  });

  it('latencyMs delays each reply', async () => {
    const slow = await MessagesApiServer.start({ latencyMs: 300 });
    extra.push(slow);
    slow.enqueue(reply('slow'));
    const t0 = Date.now();
    const msg = await new Anthropic({ apiKey: slow.apiKey, baseURL: slow.url, maxRetries: 0 }).messages.create({
      model: MODEL,
      max_tokens: 10,
      messages: USER,
    });
    expect(Date.now() - t0).toBeGreaterThanOrEqual(300);
    expect(msg.content[0]).toEqual({ type: 'text', text: 'slow' });
  });

  it('prompt caching: the second identical request reads what the first wrote', async () => {
    server.enqueue(reply('one'), reply('two'), reply('three'));
    const c = client();
    const program = 'Lower val_bpb. Do not touch prepare.py. '.repeat(200);
    const params = {
      model: MODEL,
      max_tokens: 100,
      tools: [EDIT_TOOL, { ...FINISH_TOOL, cache_control: { type: 'ephemeral' as const } }],
      system: [{ type: 'text' as const, text: program, cache_control: { type: 'ephemeral' as const } }],
      messages: USER,
    };
    const first = await c.messages.create(params);
    expect(first.usage.cache_creation_input_tokens).toBeGreaterThan(1000);
    expect(first.usage.cache_read_input_tokens).toBe(0);
    const second = await c.messages.create(params);
    expect(second.usage.cache_read_input_tokens).toBe(first.usage.cache_creation_input_tokens);
    expect(second.usage.cache_creation_input_tokens).toBe(0);
    expect(second.usage.input_tokens).toBe(first.usage.input_tokens);
    // A longer history with a breakpoint on it reads the old prefix and writes only the new part.
    const third = await c.messages.create({
      ...params,
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'History: 40 experiments. '.repeat(50), cache_control: { type: 'ephemeral' } },
          ],
        },
        { role: 'assistant', content: 'Noted.' },
        { role: 'user', content: 'Next.' },
      ],
    });
    expect(third.usage.cache_read_input_tokens).toBe(first.usage.cache_creation_input_tokens);
    expect(third.usage.cache_creation_input_tokens).toBeGreaterThan(100);
  });

  it('prompt caching respects minCacheTokens, and no markers means no caching', async () => {
    server.enqueue(reply('a'));
    const plain = await client().messages.create({ model: MODEL, max_tokens: 10, system: 'short', messages: USER });
    expect(plain.usage.cache_creation_input_tokens).toBe(0);
    const strict = await MessagesApiServer.start({ minCacheTokens: 1024 });
    extra.push(strict);
    strict.enqueue(reply('b'));
    const small = await new Anthropic({ apiKey: strict.apiKey, baseURL: strict.url, maxRetries: 0 }).messages.create({
      model: MODEL,
      max_tokens: 10,
      system: [{ type: 'text', text: 'short', cache_control: { type: 'ephemeral' } }],
      messages: USER,
    });
    expect(small.usage.cache_creation_input_tokens).toBe(0);
  });

  it('records requests: headers and parsed body', async () => {
    server.enqueue(reply('x'));
    await client().messages.create({
      model: MODEL,
      max_tokens: 64,
      system: 'You propose one experiment.',
      tools: [EDIT_TOOL, FINISH_TOOL],
      messages: USER,
    });
    const r: RecordedRequest = server.requests[0];
    expect(r.method).toBe('POST');
    expect(r.path).toBe('/v1/messages');
    expect(r.headers['anthropic-version']).toMatch(/^\d{4}-\d{2}-\d{2}$/);
    expect(r.headers['content-type']).toBe('application/json');
    expect(r.stream).toBe(false);
    expect(r.body.tools.map((t: any) => t.name)).toEqual(['str_replace_based_edit_tool', 'finish_experiment']);
    expect(r.body.system).toBe('You propose one experiment.');
    expect(r.body.max_tokens).toBe(64);
    expect(typeof r.at).toBe('number');
  });

  it('a handler answers dynamically once scripted turns run out', async () => {
    const dyn = await MessagesApiServer.start({
      handler: req => reply(`you sent ${req.body.messages.length} message(s)`),
    });
    extra.push(dyn);
    dyn.enqueue(reply('scripted first'));
    const c = new Anthropic({ apiKey: dyn.apiKey, baseURL: dyn.url, maxRetries: 0 });
    const a = await c.messages.create({ model: MODEL, max_tokens: 10, messages: USER });
    const b = await c.messages.create({ model: MODEL, max_tokens: 10, messages: USER });
    expect(a.content[0]).toEqual({ type: 'text', text: 'scripted first' });
    expect(b.content[0]).toEqual({ type: 'text', text: 'you sent 1 message(s)' });
  });
});
