/** How the stand-in answers a request with a scripted turn: the message, its thinking and its usage. */
import { randomBytes } from 'node:crypto';
import { estimateTokens, isObject, type PromptCache } from './messages-cache';
import { capsOf } from './messages-models';
import type { ReplyBlock, ReplyMessage } from './messages-sse';
import type { Block, UsageWire } from './messages-types';

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
/** An id shaped like the API's (`msg_01…`, `toolu_01…`, `req_01…`). */
export function randomId(prefix: string): string {
  const bytes = randomBytes(22);
  let s = '';
  for (const b of bytes) s += BASE62[b % 62];
  return `${prefix}01${s}`;
}

/** Whether the model thinks on this request: thinking on, or not set on a model that thinks by default. */
function thinkingOn(body: Record<string, any>): boolean {
  const t = body.thinking;
  return isObject(t) ? t.type === 'enabled' || t.type === 'adaptive' : capsOf(body.model).thinksByDefault;
}

/** The reply a scripted turn makes to a request: ids, signatures (remembered in `issued`), stop reason, usage. */
export function replyOf(
  body: Record<string, any>,
  turn: { content: Block[]; stop_reason?: string; usage?: Partial<UsageWire> },
  issued: Set<string>,
  cache: PromptCache,
): ReplyMessage {
  const thinks = thinkingOn(body);
  const omitted = (body.thinking?.display ?? capsOf(body.model).defaultDisplay) === 'omitted';
  const content = turn.content.flatMap((b): ReplyBlock[] => {
    if (b.type === 'text') return [{ type: 'text', text: b.text }];
    if (b.type === 'tool_use')
      return [
        {
          type: 'tool_use',
          id: b.id ?? randomId('toolu_'),
          name: b.name,
          input: b.input ?? {},
          ...(b.partial_json !== undefined ? { partial_json: b.partial_json } : {}),
        },
      ];
    // A model that is not thinking on this request gives no thinking, scripted or not.
    if (!thinks) return [];
    const signature = randomId(b.type === 'thinking' ? 'sig_' : 'redacted_');
    issued.add(signature);
    return b.type === 'thinking'
      ? [{ type: 'thinking', thinking: omitted ? '' : b.thinking, signature }]
      : [{ type: 'redacted_thinking', data: signature }];
  });
  const stopReason = turn.stop_reason ?? (content.some(b => b.type === 'tool_use') ? 'tool_use' : 'end_turn');
  const stopSequence =
    stopReason === 'stop_sequence' && Array.isArray(body.stop_sequences) && body.stop_sequences.length > 0
      ? String(body.stop_sequences[0])
      : null;
  // Thinking is billed as output even where its text is omitted.
  const outputChars = turn.content.reduce(
    (n, b) =>
      n +
      (b.type === 'text'
        ? b.text.length
        : b.type === 'thinking'
          ? thinks
            ? b.thinking.length
            : 0
          : b.type === 'redacted_thinking'
            ? 0
            : (b.partial_json ?? JSON.stringify(b.input ?? {})).length + b.name.length),
    0,
  );
  return {
    id: randomId('msg_'),
    type: 'message',
    role: 'assistant',
    model: body.model,
    content,
    stop_reason: stopReason,
    stop_sequence: stopSequence,
    usage: usageOf(cache, body, outputChars, turn.usage),
  };
}

/** Plausible usage, with prompt caching: a prefix written once is read on later requests. */
function usageOf(
  cache: PromptCache,
  body: Record<string, any>,
  outputChars: number,
  given: Partial<UsageWire> | undefined,
): Record<string, any> {
  const { cache_creation_1h_input_tokens: hour, ...rest } = given ?? {};
  const usage = {
    ...cache.use(body),
    output_tokens: estimateTokens(outputChars),
    service_tier: 'standard',
    ...rest,
  };
  if (given?.cache_creation_input_tokens !== undefined)
    usage.cache_creation = {
      ephemeral_5m_input_tokens: given.cache_creation_input_tokens - (hour ?? 0),
      ephemeral_1h_input_tokens: hour ?? 0,
    };
  return usage;
}
