/**
 * The Messages API stand-in stays faithful where the claude proposer now leans on it: thinking
 * blocks (streamed with signatures, omitted or absent as each model does, checked when sent
 * back), the thinking and effort each model accepts, cache lifetimes (1 hour and 5 minutes, the
 * longer first, billed apart), the 20-block lookback, and a tool input cut at max_tokens.
 */
import Anthropic from '@anthropic-ai/sdk';
import { afterEach, describe, expect, it } from 'vitest';
import { MessagesApiServer, type MessagesApiOptions } from './stand-ins/messages-api';

let server: MessagesApiServer | null = null;
afterEach(() => server?.close());

async function start(o: MessagesApiOptions = {}) {
  server = await MessagesApiServer.start(o);
  return { s: server, c: new Anthropic({ apiKey: server.apiKey, baseURL: server.url, maxRetries: 0 }) };
}
const USER = [{ role: 'user' as const, content: 'Propose.' }];
const text = (t: string) => ({ type: 'text' as const, text: t });
const block = (t: string, ttl?: '5m' | '1h') => ({
  type: 'text' as const,
  text: t,
  ...(ttl ? { cache_control: { type: 'ephemeral' as const, ...(ttl === '1h' ? { ttl: '1h' as const } : {}) } } : {}),
});

describe('the Messages API stand-in', () => {
  it('streams thinking with its signature; omits its text where the model does; gives none when thinking is off', async () => {
    const { s, c } = await start();
    const turn = {
      type: 'message' as const,
      content: [{ type: 'thinking' as const, thinking: 'Let me think.' }, text('Done.')],
    };
    s.enqueue(turn, turn, turn);
    const summarized = await c.messages
      .stream({
        model: 'claude-sonnet-5-5',
        max_tokens: 2000,
        thinking: { type: 'adaptive', display: 'summarized' },
        messages: USER,
      })
      .finalMessage();
    expect(summarized.content[0]).toEqual({
      type: 'thinking',
      thinking: 'Let me think.',
      signature: expect.stringMatching(/^sig_01/),
    });
    // Sonnet 5.5 thinks by default, and omits the thinking text unless asked for a summary.
    const omitted = await c.messages.create({ model: 'claude-sonnet-5-5', max_tokens: 2000, messages: USER });
    expect(omitted.content[0]).toMatchObject({ type: 'thinking', thinking: '' });
    // Sonnet 4.6 does not think unless asked.
    const off = await c.messages.create({ model: 'claude-sonnet-4-6', max_tokens: 2000, messages: USER });
    expect(off.content).toEqual(
      [{ type: 'text', text: 'Done.', citations: undefined }].map(({ citations: _c, ...b }) => b),
    );
  });

  it('checks the signatures of thinking blocks sent back', async () => {
    const { s, c } = await start();
    s.enqueue(
      { type: 'message', content: [{ type: 'thinking', thinking: 'Hmm.' }, text('A')] },
      { type: 'message', content: [text('B')] },
    );
    const first = await c.messages.create({
      model: 'claude-opus-5-5',
      max_tokens: 2000,
      thinking: { type: 'adaptive' },
      messages: USER,
    });
    const thinking = first.content[0] as { type: 'thinking'; thinking: string; signature: string };
    const again = (signature: string) =>
      c.messages.create({
        model: 'claude-opus-5-5',
        max_tokens: 2000,
        messages: [
          ...USER,
          { role: 'assistant', content: [{ ...thinking, signature }, text('A')] },
          { role: 'user', content: 'More.' },
        ],
      });
    await expect(again('sig_forged')).rejects.toThrow(
      /messages\.1\.content\.0: Invalid `signature` in `thinking` block/,
    );
    await expect(again(thinking.signature)).resolves.toMatchObject({ content: [{ type: 'text', text: 'B' }] });
  });

  it('refuses the thinking and effort a model does not take, as the API does', async () => {
    const { s, c } = await start();
    s.enqueue({ type: 'message', content: [text('never')] });
    const ask = (body: Record<string, unknown>) =>
      c.messages.create({ model: 'claude-sonnet-5-5', max_tokens: 4000, messages: USER, ...body } as never);
    await expect(ask({ thinking: { type: 'enabled', budget_tokens: 2000 } })).rejects.toThrow(
      /400 .*thinking\.type\.enabled is not supported for this model/,
    );
    await expect(ask({ model: 'claude-haiku-4-5', thinking: { type: 'adaptive' } })).rejects.toThrow(
      /thinking\.type\.adaptive is not supported/,
    );
    await expect(ask({ model: 'claude-haiku-4-5', output_config: { effort: 'low' } })).rejects.toThrow(
      /does not support the effort parameter/,
    );
    await expect(ask({ model: 'claude-sonnet-4-6', output_config: { effort: 'xhigh' } })).rejects.toThrow(
      /'xhigh' is not supported by this model/,
    );
    await expect(ask({ output_config: { effort: 'extreme' } })).rejects.toThrow(
      /Input should be 'low', 'medium', 'high', 'xhigh' or 'max'/,
    );
    await expect(ask({ model: 'claude-haiku-4-5', thinking: { type: 'enabled', budget_tokens: 512 } })).rejects.toThrow(
      /greater than or equal to 1024/,
    );
    await expect(
      ask({ model: 'claude-haiku-4-5', thinking: { type: 'enabled', budget_tokens: 4000 } }),
    ).rejects.toThrow(/`max_tokens` must be greater than `thinking.budget_tokens`/);
    expect(s.remaining).toBe(1);
  });

  it('keeps 1-hour and 5-minute entries for their lifetimes, refreshed by a hit, the longer ones first, billed apart', async () => {
    let now = 0;
    const { s, c } = await start({ now: () => now });
    for (let i = 0; i < 6; i++) s.enqueue({ type: 'message', content: [text('ok')] });
    const long = 'The run and its files. '.repeat(400);
    const body = (ttlA: '5m' | '1h', ttlB: '5m' | '1h') => ({
      model: 'claude-sonnet-5-5',
      max_tokens: 100,
      messages: [
        { role: 'user' as const, content: [block(long, ttlA), block('History. '.repeat(400), ttlB), text('Now.')] },
      ],
    });
    await expect(c.messages.create(body('5m', '1h'))).rejects.toThrow(/ttl '1h' may not follow one with ttl '5m'/);
    const first = await c.messages.create(body('1h', '5m'));
    expect(first.usage.cache_creation).toEqual({
      ephemeral_1h_input_tokens: Math.ceil((JSON.stringify(text(long)).length + 6) / 4),
      ephemeral_5m_input_tokens:
        (first.usage.cache_creation_input_tokens ?? 0) - first.usage.cache_creation!.ephemeral_1h_input_tokens,
    });
    now += 6 * 60_000;
    // The 5-minute entry expired; the 1-hour one is read (and refreshed).
    const second = await c.messages.create(body('1h', '5m'));
    expect(second.usage.cache_read_input_tokens).toBe(first.usage.cache_creation!.ephemeral_1h_input_tokens);
    now += 59 * 60_000;
    const third = await c.messages.create(body('1h', '5m'));
    expect(third.usage.cache_read_input_tokens).toBeGreaterThanOrEqual(second.usage.cache_read_input_tokens!);
    now += 2 * 3600_000;
    expect((await c.messages.create(body('1h', '5m'))).usage.cache_read_input_tokens).toBe(0);
  });

  it('looks back up to 20 blocks from a breakpoint for a prefix written before', async () => {
    const { s, c } = await start();
    for (let i = 0; i < 4; i++) s.enqueue({ type: 'message', content: [text('ok')] });
    const lines = Array.from({ length: 40 }, (_, i) => text(`experiment ${i}: `.repeat(30)));
    const marked = (upTo: number) =>
      c.messages.create({
        model: 'claude-sonnet-5-5',
        max_tokens: 100,
        messages: [
          {
            role: 'user',
            content: lines
              .slice(0, upTo)
              .map((b, i) => (i === upTo - 1 ? { ...b, cache_control: { type: 'ephemeral' } } : b)),
          },
        ],
      });
    const at10 = await marked(10);
    // The breakpoint moved 5 blocks on: the prefix written at block 10 is found and read.
    expect((await marked(15)).usage.cache_read_input_tokens).toBe(at10.usage.cache_creation_input_tokens);
    // 25 blocks on from block 15 is past the lookback: nothing is read.
    expect((await marked(40)).usage.cache_read_input_tokens).toBe(0);
  });

  it('streams a tool input cut at max_tokens as it was cut: the SDK parses what arrived, dropping the cut string', async () => {
    const { s, c } = await start();
    s.enqueue({
      type: 'message',
      stop_reason: 'max_tokens',
      content: [
        { type: 'tool_use', name: 'edit', input: {}, partial_json: '{"path": "train.py", "new_str": "N_LAYER = 1' },
      ],
    });
    const msg = await c.messages
      .stream({
        model: 'claude-sonnet-5-5',
        max_tokens: 100,
        tools: [{ name: 'edit', input_schema: { type: 'object', properties: {} } }],
        messages: USER,
      })
      .finalMessage();
    expect(msg.stop_reason).toBe('max_tokens');
    // new_str was cut mid-string and is gone: an edit run from this input would replace old text with nothing.
    expect(msg.content[0]).toMatchObject({ type: 'tool_use', input: { path: 'train.py' } });
    expect((msg.content[0] as { input: object }).input).not.toHaveProperty('new_str');
  });
});
