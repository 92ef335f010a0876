/** The Messages API stand-in's public types: scripted turns, recorded requests, options. */

export type Block =
  | { type: 'text'; text: string }
  /** partial_json: the raw input streamed instead of input, as a reply cut at max_tokens leaves it. */
  | { type: 'tool_use'; id?: string; name: string; input: unknown; partial_json?: string }
  | { type: 'thinking'; thinking: string }
  | { type: 'redacted_thinking' };

export type Turn =
  | {
      type: 'message';
      content: Block[];
      stop_reason?: 'end_turn' | 'tool_use' | 'max_tokens' | 'stop_sequence' | 'refusal';
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
  /** The part of cache_creation_input_tokens written with the 1-hour lifetime (a scripted usage may say). */
  cache_creation_1h_input_tokens?: number;
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
  /** The clock the prompt cache's lifetimes run on (default Date.now): a benchmark replays hours in seconds. */
  now?: () => number;
}
