/**
 * The tools a claude proposal may call, as the Messages API receives them: Anthropic's text
 * editor tool (schema-less: the API knows it), the fix tool, the move tool, finish_experiment,
 * whose fields are what the engine records of a proposal and what the next prompt shows back to
 * the model, and view_run_log, which reads a past run's log (./run-log.ts).
 */
import type { ToolUnion } from '@anthropic-ai/sdk/resources/messages';
import * as z from 'zod/mini';
import { englishMessages } from '../../../core/journal/zod-english';
import { NOTES_SECTION_CHARS } from '../../../core/journal/research-notes';

englishMessages();

export const EDITOR = 'str_replace_based_edit_tool';
export const FINISH = 'finish_experiment';
export const FIX = 'fix_crashed_experiment';
export const VIEW_LOG = 'view_run_log';
export const MOVE = 'take_move';
export const NOTES = 'write_notes';

/**
 * The tool definitions, in a fixed order so the prompt-cache prefix stays the same. No breakpoint
 * here: the system block's covers the tools before it, and the request has only four.
 */
export function toolDefinitions(): ToolUnion[] {
  return [
    { type: 'text_editor_20250728', name: EDITOR },
    {
      name: FIX,
      description:
        "Only when the prompt offers to fix a crashed experiment: replaces your working copy with that experiment's files, so you can fix its bug instead of trying a new idea. Then edit and call finish_experiment as usual.",
      input_schema: { type: 'object', properties: {}, required: [] },
    },
    {
      name: MOVE,
      description:
        "Only when the prompt lists moves on offer (a re-test, a combination, an ablation the engine prepared): replaces your working copy with that move's files. Then call finish_experiment, at once or after further edits.",
      input_schema: {
        type: 'object',
        properties: {
          index: { type: 'integer', description: "The move's number in the prompt's list (1 is the first)." },
        },
        required: ['index'],
      },
    },
    {
      name: NOTES,
      description:
        'Only when the prompt says your research notes are due: rewrites them from the whole history. They are shown to you in every later prompt until the next rewrite. Call it before finish_experiment.',
      input_schema: {
        type: 'object',
        properties: {
          findings: {
            type: 'string',
            description: `What the experiments established, with their numbers and gains (at most ${NOTES_SECTION_CHARS} characters).`,
          },
          dead_ends: {
            type: 'string',
            description: `What did not help and should not be tried again, and why (at most ${NOTES_SECTION_CHARS} characters).`,
          },
          open_hypotheses: {
            type: 'string',
            description: `What to test next, and why (at most ${NOTES_SECTION_CHARS} characters).`,
          },
        },
        required: ['findings', 'dead_ends', 'open_hypotheses'],
      },
    },
    {
      name: FINISH,
      description:
        'Ends your turn: the engine commits your edits as one experiment, trains, and keeps it only if the metric improves. Call it once, after your edits.',
      input_schema: {
        type: 'object',
        properties: {
          description: {
            type: 'string',
            description:
              'One line, at most ~100 characters: what this experiment changes (becomes the commit message).',
          },
          rationale: { type: 'string', description: 'Why you expect it to help, in two or three sentences.' },
          expected_delta: {
            type: 'number',
            description:
              'The change of the metric you expect from this experiment alone, in its units (negative means lower), your honest best guess; compared with the outcome later.',
          },
          lesson: {
            type: 'string',
            description:
              'What the experiment the prompt asks about taught, in one or two sentences, so later proposals can build on it (omit when the prompt asks for no lesson).',
          },
          direction: {
            type: 'string',
            description:
              'A short name for the idea, when the edit changes no UPPER_CASE constant (e.g. "rotary embeddings", "gradient accumulation").',
          },
        },
        required: ['description', 'rationale', 'expected_delta'],
      },
    },
    {
      name: VIEW_LOG,
      description:
        "Reads a past experiment's training log (read-only): by default its last 60 lines, or tail_lines, or the lines of range; at most 200 lines a call. For what the summary does not say: a warning, the loss going flat or diverging, a traceback.",
      input_schema: {
        type: 'object',
        properties: {
          n: { type: 'integer', description: "The experiment's number (#n in the history)." },
          run: {
            type: 'integer',
            description: 'Which of its runs, 1 for the first (an experiment measured several times has several logs).',
          },
          tail_lines: { type: 'integer', description: 'How many of its last lines to show (at most 200).' },
          range: {
            type: 'array',
            items: { type: 'integer' },
            description: 'The first and last line to show, 1-based ([1, 50] is the start of the log).',
          },
        },
        required: ['n'],
      },
    },
  ];
}

/** finish_experiment's input, as the engine accepts it: description required, the rest optional but typed. */
export const FinishInput = z.object({
  description: z.string().check(z.trim(), z.minLength(1)),
  rationale: z._default(z.string(), ''),
  // Classic zod's .finite() was a no-op: zod 4's number() refuses Infinity and NaN itself.
  expected_delta: z.optional(z.number()),
  lesson: z.optional(z.string()),
  direction: z.optional(z.string()),
});

/** take_move's input: the move's number in the prompt's list. */
export const MoveInput = z.object({ index: z.int() });
/** write_notes' input: three sections, each bounded, so the notes block stays small in every later prompt. */
const section = z.string().check(z.trim(), z.minLength(1), z.maxLength(NOTES_SECTION_CHARS));
export const NotesInput = z.object({ findings: section, dead_ends: section, open_hypotheses: section });

/** What a finished proposal says about itself. */
export interface Finish {
  description: string;
  rationale: string;
  expected_delta?: number;
  lesson?: string;
  direction?: string;
}
