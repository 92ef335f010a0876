/**
 * What the Messages API stand-in knows of each model: the ids GET /v1/models lists, and which
 * thinking configurations and effort levels a model accepts, as Anthropic's thinking
 * troubleshooting page tabulates them (platform.claude.com/docs/en/build-with-claude/thinking-troubleshooting)
 * and the effort page lists them. A request outside them gets the 400 the real API gives.
 */

/** GET /v1/models: current ids from the SDK's own `Model` union (none of them deprecated there). */
export const MODELS = [
  { id: 'claude-opus-5-5', display_name: 'Claude Opus 5.5', created_at: '2026-09-01T00:00:00Z' },
  { id: 'claude-sonnet-5-5', display_name: 'Claude Sonnet 5.5', created_at: '2026-09-01T00:00:00Z' },
  { id: 'claude-haiku-5-5', display_name: 'Claude Haiku 5.5', created_at: '2026-09-01T00:00:00Z' },
  { id: 'claude-sonnet-4-6', display_name: 'Claude Sonnet 4.6', created_at: '2026-02-17T00:00:00Z' },
].map(m => ({ type: 'model', ...m, deprecated_at: null, capabilities: null }));

export const EFFORTS = ['low', 'medium', 'high', 'xhigh', 'max'] as const;

export interface ModelCaps {
  /** thinking.type values accepted ('disabled' included where it may be turned off). */
  thinking: ReadonlyArray<'adaptive' | 'enabled' | 'disabled'>;
  /** Whether the model thinks when the request sets no thinking (adaptive, on by default). */
  thinksByDefault: boolean;
  /** What `display` is when the request does not say: newer models omit the thinking text. */
  defaultDisplay: 'summarized' | 'omitted';
  /** output_config.effort values accepted; empty: the parameter is refused. */
  efforts: readonly string[];
}

const NEWEST: ModelCaps = {
  thinking: ['adaptive', 'disabled'],
  thinksByDefault: true,
  defaultDisplay: 'omitted',
  efforts: EFFORTS,
};

/** The capabilities of a model id (a dated snapshot is its alias); an unknown id is taken as one of the newest. */
export function capsOf(model: string): ModelCaps {
  const id = model.replace(/-\d{8}$/, '');
  if (/^claude-(opus|sonnet)-4-6$/.test(id))
    return {
      thinking: ['adaptive', 'enabled', 'disabled'],
      thinksByDefault: false,
      defaultDisplay: 'summarized',
      efforts: ['low', 'medium', 'high', 'max'],
    };
  if (id === 'claude-opus-4-5')
    return {
      thinking: ['enabled', 'disabled'],
      thinksByDefault: false,
      defaultDisplay: 'summarized',
      efforts: ['low', 'medium', 'high'],
    };
  if (/^claude-(sonnet|haiku)-4-5$|^claude-(opus|sonnet)-4(-1)?$|^claude-3/.test(id))
    return { thinking: ['enabled', 'disabled'], thinksByDefault: false, defaultDisplay: 'summarized', efforts: [] };
  // Fable and Mythos cannot be turned off; Opus 4.7 and later, Sonnet 5 and later, Haiku 5.5 can.
  if (/^claude-(fable|mythos)-/.test(id)) return { ...NEWEST, thinking: ['adaptive'] };
  return NEWEST;
}
