/**
 * How hard the model thinks, said explicitly on every request rather than left to each model's
 * default (which differs: the newest think adaptively at high effort unasked, the 4.5 models not at
 * all). Per Anthropic's thinking pages: Claude 4.6 and later take `thinking: {type: "adaptive"}`
 * with `output_config.effort` (4.6 has no xhigh; 4.7 and later reject a manual budget with a 400);
 * the 4.5 models and earlier only take `thinking: {type: "enabled", budget_tokens}`, so the
 * effort becomes a budget of the same rank. The thinking text is asked for as a summary
 * (`display: "summarized"`; the newest models omit it by default) so that it can be kept in the
 * journal as the proposal's reasoning. The effort never changes within a run: changing it
 * between requests would invalidate the cached prompt.
 */
import type { OutputConfig, ThinkingConfigParam } from '@anthropic-ai/sdk/resources/messages';
import { EFFORT_LEVELS, type Effort } from '../../../core/config/run-options';

/**
 * The effort when neither program.md nor --effort sets one: high, the API's own default for
 * adaptive models. A proposal is one research decision that costs a whole training run when it
 * is poor; a few thousand thinking tokens cost less than that run's electricity.
 */
export const DEFAULT_EFFORT: Effort = 'high';

/** A thinking budget for each effort, for models that take a budget instead (their rank, not a measured equivalence). */
export const BUDGET_TOKENS: Readonly<Record<Effort, number>> = {
  low: 2048,
  medium: 6144,
  high: 12_288,
  xhigh: 20_480,
  max: 32_768,
};

/** Room for thinking plus an edit; output is billed as generated, not as reserved. */
const MAX_TOKENS: Readonly<Record<Effort, number>> = {
  low: 16_384,
  medium: 24_576,
  high: 32_768,
  xhigh: 49_152,
  max: 65_536,
};
/** What a budget-thinking reply needs beyond its thinking: the edit and the finish call. */
const EDIT_ROOM = 16_384;

export interface ThinkingPlan {
  /** The effort used: the one asked for, or the nearest below it that the model has. */
  effort: Effort;
  /** How it is sent, for the journal and the prompt's facts: "adaptive, effort high" or "budget 12288 tokens". */
  thinking: string;
  /** The request's thinking and output_config fields. */
  params: { thinking: ThinkingConfigParam; output_config?: OutputConfig };
  maxTokens: number;
}

type Family = { kind: 'adaptive'; efforts: readonly Effort[] } | { kind: 'budget' };

/** How a model takes thinking; a dated snapshot is its alias, and an unknown id is taken as one of the newest. */
export function familyOf(model: string): Family {
  const id = model.replace(/-\d{8}$/, '');
  if (/^claude-(opus|sonnet)-4-6$/.test(id)) return { kind: 'adaptive', efforts: ['low', 'medium', 'high', 'max'] };
  if (/-4-5$|^claude-(opus|sonnet)-4(-1)?$|^claude-3/.test(id)) return { kind: 'budget' };
  return { kind: 'adaptive', efforts: EFFORT_LEVELS };
}

/** The effort asked for if the model has it, else the nearest below it (xhigh on a 4.6 model is high). */
function fit(asked: Effort, have: readonly Effort[]): Effort {
  for (let i = EFFORT_LEVELS.indexOf(asked); i >= 0; i--) if (have.includes(EFFORT_LEVELS[i])) return EFFORT_LEVELS[i];
  return have[0];
}

/** What to send for a model and an effort; maxTokens overrides the room the effort gets. */
export function thinkingPlan(model: string, asked: Effort = DEFAULT_EFFORT, maxTokens?: number): ThinkingPlan {
  const family = familyOf(model);
  if (family.kind === 'budget') {
    const budget = BUDGET_TOKENS[asked];
    return {
      effort: asked,
      thinking: `budget ${budget} tokens`,
      params: { thinking: { type: 'enabled', budget_tokens: budget, display: 'summarized' } },
      // The API requires max_tokens above the budget.
      maxTokens: Math.max(maxTokens ?? 0, budget + EDIT_ROOM),
    };
  }
  const effort = fit(asked, family.efforts);
  return {
    effort,
    thinking: `adaptive, effort ${effort}`,
    params: { thinking: { type: 'adaptive', display: 'summarized' }, output_config: { effort } },
    maxTokens: maxTokens ?? MAX_TOKENS[effort],
  };
}
