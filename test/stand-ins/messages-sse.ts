/**
 * The stand-in's replies as the real API streams them (Streaming Messages): message_start with
 * the usage known so far, one content_block_start / _delta / _stop group per block (text_delta,
 * input_json_delta, thinking_delta then signature_delta; a redacted_thinking block whole in its
 * start), ping, message_delta with the stop reason and final usage, message_stop.
 */

/** A reply block as the stand-in sends it; `partial_json` streams a tool input cut at max_tokens. */
export type ReplyBlock =
  | { type: 'text'; text: string }
  | { type: 'tool_use'; id: string; name: string; input: unknown; partial_json?: string }
  | { type: 'thinking'; thinking: string; signature: string }
  | { type: 'redacted_thinking'; data: string };

export interface ReplyMessage {
  id: string;
  type: 'message';
  role: 'assistant';
  model: string;
  content: ReplyBlock[];
  stop_reason: string;
  stop_sequence: string | null;
  usage: Record<string, any>;
}

/** The message as a JSON body carries it: a cut tool input is what of it parses, else {}. */
export function jsonOf(message: ReplyMessage): ReplyMessage {
  const content = message.content.map(b => {
    if (b.type !== 'tool_use' || b.partial_json === undefined) return b;
    const { partial_json, ...rest } = b;
    let input: unknown = {};
    try {
      input = JSON.parse(partial_json);
    } catch {
      // Cut mid-value: the API's own JSON body never carries a half-written input.
    }
    return { ...rest, input };
  });
  return { ...message, content };
}

/** Splits text into about `n` pieces (never splitting a UTF-16 surrogate pair). */
export function chunks(text: string, n: number): string[] {
  const chars = Array.from(text);
  if (chars.length === 0) return [];
  const size = Math.max(1, Math.ceil(chars.length / n));
  const out: string[] = [];
  for (let i = 0; i < chars.length; i += size) out.push(chars.slice(i, i + size).join(''));
  return out;
}

/** The SSE events of a reply, in order, as [event name, data]. */
export function streamEvents(message: ReplyMessage): Array<[string, unknown]> {
  const events: Array<[string, unknown]> = [];
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
  const delta = (index: number, d: Record<string, unknown>) =>
    events.push(['content_block_delta', { type: 'content_block_delta', index, delta: d }]);
  message.content.forEach((block, index) => {
    const start = (content_block: unknown) =>
      events.push(['content_block_start', { type: 'content_block_start', index, content_block }]);
    if (block.type === 'text') {
      start({ type: 'text', text: '' });
      if (index === 0) events.push(['ping', { type: 'ping' }]);
      for (const piece of chunks(block.text, 4)) delta(index, { type: 'text_delta', text: piece });
    } else if (block.type === 'thinking') {
      start({ type: 'thinking', thinking: '', signature: '' });
      if (index === 0) events.push(['ping', { type: 'ping' }]);
      for (const piece of chunks(block.thinking, 3)) delta(index, { type: 'thinking_delta', thinking: piece });
      delta(index, { type: 'signature_delta', signature: block.signature });
    } else if (block.type === 'redacted_thinking') {
      start(block);
      if (index === 0) events.push(['ping', { type: 'ping' }]);
    } else {
      start({ type: 'tool_use', id: block.id, name: block.name, input: {} });
      if (index === 0) events.push(['ping', { type: 'ping' }]);
      const json = block.partial_json ?? JSON.stringify(block.input);
      for (const piece of ['', ...chunks(json, 3)]) delta(index, { type: 'input_json_delta', partial_json: piece });
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
  return events;
}
