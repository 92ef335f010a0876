/**
 * How the Messages API stand-in checks a request body, as the real API does (the shape of each
 * field, role alternation, tool_use ↔ tool_result pairing, at most 4 cache breakpoints with the
 * longer TTLs first, thinking and effort as each model accepts them, thinking blocks passed back
 * with the signatures the API issued). Each failure is the 400 invalid_request_error the API gives.
 */
import { isObject, segmentsOf } from './messages-cache';
import { capsOf, EFFORTS } from './messages-models';

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly errorType: string,
    message: string,
  ) {
    super(message);
  }
}
export const invalid = (message: string) => new ApiError(400, 'invalid_request_error', message);

const MAX_CACHE_BREAKPOINTS = 4;

/** Text editor tool versions and the tool name each one requires. */
const TEXT_EDITOR_NAMES: Record<string, string> = {
  text_editor_20241022: 'str_replace_editor',
  text_editor_20250124: 'str_replace_editor',
  text_editor_20250429: 'str_replace_based_edit_tool',
  text_editor_20250728: 'str_replace_based_edit_tool',
};

export interface ValidateOptions {
  countTokens: boolean;
  allowConsecutiveRoles: boolean;
  /** The thinking signatures (and redacted data) this server issued: anything else sent back is refused. */
  issued: ReadonlySet<string>;
}

/** Validates a Messages request body like the real API does, minimally. Throws ApiError(400). */
export function validateBody(body: unknown, opts: ValidateOptions): void {
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
      checkThinkingBlock(b, m.role, `messages.${i}.content.${j}`, opts.issued);
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

  const ttls = segmentsOf(body).flatMap(s => (s.ttl !== undefined ? [s.ttl] : []));
  if (ttls.length > MAX_CACHE_BREAKPOINTS)
    throw invalid(
      `A maximum of ${MAX_CACHE_BREAKPOINTS} blocks with cache_control may be provided. Found ${ttls.length}.`,
    );
  // Prompt caching: entries with a longer TTL must come before those with a shorter one.
  const firstShort = ttls.indexOf('5m');
  if (firstShort !== -1 && ttls.slice(firstShort).includes('1h'))
    throw invalid(
      "cache_control: a breakpoint with ttl '1h' may not follow one with ttl '5m'; put the longer-lived breakpoints first",
    );
  if (!opts.countTokens) checkThinking(body);
}

/** thinking and output_config.effort, as the model accepts them. */
function checkThinking(body: Record<string, any>): void {
  const caps = capsOf(body.model);
  const t = body.thinking;
  if (t !== undefined) {
    if (!isObject(t)) throw invalid('thinking: Input should be a valid dictionary');
    if (!['enabled', 'disabled', 'adaptive'].includes(t.type))
      throw invalid("thinking.type: Input should be 'enabled', 'disabled' or 'adaptive'");
    if (!caps.thinking.includes(t.type)) {
      throw invalid(
        t.type === 'enabled'
          ? 'thinking.type.enabled is not supported for this model. Use thinking.type.adaptive and output_config.effort to control thinking behavior.'
          : `thinking.type.${t.type} is not supported for this model.`,
      );
    }
    if (t.type === 'enabled') {
      if (!Number.isInteger(t.budget_tokens)) throw invalid('thinking.enabled.budget_tokens: Field required');
      if (t.budget_tokens < 1024)
        throw invalid('thinking.enabled.budget_tokens: Input should be greater than or equal to 1024');
      if (t.budget_tokens >= body.max_tokens)
        throw invalid('`max_tokens` must be greater than `thinking.budget_tokens`.');
    }
    if (t.display !== undefined && t.display !== null && !['summarized', 'omitted'].includes(t.display))
      throw invalid(`thinking.${t.type}.display: Input should be 'summarized' or 'omitted'`);
  }
  const oc = body.output_config;
  if (oc === undefined) return;
  if (!isObject(oc)) throw invalid('output_config: Input should be a valid dictionary');
  if (oc.effort === undefined || oc.effort === null) return;
  if (!(EFFORTS as readonly string[]).includes(oc.effort))
    throw invalid("output_config.effort: Input should be 'low', 'medium', 'high', 'xhigh' or 'max'");
  if (caps.efforts.length === 0)
    throw invalid('output_config.effort: This model does not support the effort parameter.');
  if (!caps.efforts.includes(oc.effort))
    throw invalid(
      `output_config.effort: '${oc.effort}' is not supported by this model; supported values: ${caps.efforts.join(', ')}`,
    );
}

/** A thinking block is the assistant's, and comes back with the signature it was issued with. */
function checkThinkingBlock(b: Record<string, any>, role: string, where: string, issued: ReadonlySet<string>): void {
  if (b.type !== 'thinking' && b.type !== 'redacted_thinking') return;
  if (role !== 'assistant') throw invalid(`${where}: ${b.type} blocks can only appear in assistant messages`);
  if (b.type === 'thinking') {
    if (typeof b.thinking !== 'string') throw invalid(`${where}.thinking.thinking: Field required`);
    if (typeof b.signature !== 'string' || !issued.has(b.signature))
      throw invalid(`${where}: Invalid \`signature\` in \`thinking\` block`);
  } else if (typeof b.data !== 'string' || !issued.has(b.data)) {
    throw invalid(`${where}: Invalid \`data\` in \`redacted_thinking\` block`);
  }
}
