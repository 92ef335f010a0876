/**
 * A reviewer's note that names a knob: "leave HEAD_DIM alone", "don't touch head_dim". The offline
 * proposer leaves such a knob alone for the rest of the run. The notes come from the journal's
 * review decisions, so a resumed engine applies the same rules. The grammar (docs/step-mode-notes.md):
 *
 * - A knob is one of the constants the proposer tunes, named as a whole word, in any case, with
 *   its underscores written as `_`, a space or a hyphen (HEAD_DIM: `head_dim`, `head dim`,
 *   `Head-Dim`). No synonyms: "the learning rate" names LEARNING_RATE, never MATRIX_LR. Several
 *   knobs may be listed with commas, "and", "or", "nor", "&" or "/"; "the" may go before each.
 * - A note is read one clause at a time (cut at `.`, `;`, `!`, `?` and line ends), and a clause
 *   freezes the knobs it lists in one of these forms:
 *   1. a negative and a verb of change before them: don't / do not / never / stop / quit / avoid /
 *      no more + touch, change, tweak, tune, modify, edit, move, adjust, alter, vary, mess with,
 *      play with (any form: "stop changing", "don't touch"); also "hands off", "no (more)
 *      changes to";
 *   2. leave / freeze / lock / pin before them, unless a negative comes just before the verb
 *      ("don't leave HEAD_DIM alone" freezes nothing);
 *   3. keep / hold before them, then a word that says it stays: alone, as is, fixed, frozen,
 *      unchanged, constant, the same, where it is, put, steady, at …; or nothing more;
 *   4. the knobs, then is / are / stays / should stay / must stay / remains + off limits, frozen,
 *      fixed, unchanged, untouched, as is, put.
 * Anything else freezes nothing: "HEAD_DIM looks good, keep going", "try a larger HEAD_DIM",
 * "keep increasing HEAD_DIM".
 * Pure: the names come from the proposer, which knows the constants.
 */
import * as z from 'zod/mini';
import type { JournalRecord } from '../journal/journal';
import { englishMessages } from '../journal/zod-english';

englishMessages();

/** A reviewer's decision that carried a note (a review record of the journal). */
export interface ReviewNote {
  n: number;
  note: string;
}

/** A knob left alone, and the note it came from. */
export interface KnobRule {
  name: string;
  /** The experiment whose review carried the note. */
  n: number;
  note: string;
}

/** The notes of a journal's review decisions, oldest first. */
export function reviewNotesOf(records: readonly JournalRecord[]): ReviewNote[] {
  return records.flatMap(r =>
    r.type === 'review' && r.event === 'decision' && r.note?.trim() ? [{ n: r.n, note: r.note }] : [],
  );
}

const CHANGE_VERB = String.raw`(?:touch|chang|tweak|tun|modify|modifi|edit|mov|adjust|alter|vary|vari|mess(?:ing)?\s+(?:around\s+)?with|play(?:ing)?\s+with)\w*`;
const NEGATIVE = String.raw`(?:don'?t|do\s+not|never|stop|quit|avoid|no\s+more|no\s+longer|please\s+don'?t)`;
const NEGATED = String.raw`(?<!\b(?:don'?t|do\s+not|never|not|no\s+need\s+to|stop|no\s+longer)\s+)`;
const STAYS = String.raw`(?:alone|as\s+is|as\s+it\s+is|fixed|frozen|unchanged|untouched|constant|the\s+same|where\s+it\s+is|put|steady|stable|at\b)`;
const STATE = String.raw`(?:off[\s-]+limits|frozen|fixed|unchanged|untouched|as\s+is|put)`;
const BE = String.raw`(?:is|are|stays?|should\s+stay|must\s+stay|remains?|should\s+remain|must\s+remain)`;
// What may follow the knobs, so that "the learning rate schedule" is not LEARNING_RATE: the end of
// the clause, a comma, or a word that ends a noun phrase.
const TAIL = String.raw`\s*(?:$|[,:(—–-]|(?:${STAYS}|be|again|any\s*more|for|until|now|please|either|too|and|but|so|or|while|this|in|on|from|it)\b)`;

const escape = (s: string): string => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** The knobs (from `names`) a note tells the proposer to leave alone, in the order the note names them. */
export function knobsNamedIn(note: string, names: readonly string[]): string[] {
  // Longest first, so HEAD_DIM_X is not read as HEAD_DIM followed by "x".
  const sorted = [...new Set(names)].filter(n => /\w/.test(n)).sort((a, b) => b.length - a.length);
  if (sorted.length === 0) return [];
  const knob = `(?:${sorted.map(n => n.split(/_+/).filter(Boolean).map(escape).join('[\\s_-]+')).join('|')})`;
  // `\b` alone would let HEAD_DIM match inside N_HEAD_DIM's "head_dim": an underscore is a word character there.
  const one = String.raw`(?:the\s+)?(?<![\w-])${knob}(?![\w-])`;
  const list = String.raw`${one}(?:\s*(?:,|&|/)?\s*(?:\b(?:and|or|nor)\b)?\s*${one})*`;
  const forms = [
    String.raw`\b${NEGATIVE}\s+(?:\w+\s+)?${CHANGE_VERB}\s+(?:with\s+|to\s+)?(${list})${TAIL}`,
    String.raw`\b(?:hands\s+off|no\s+(?:more\s+)?changes?\s+to)\s+(${list})${TAIL}`,
    String.raw`${NEGATED}\b(?:leave|freeze|lock|pin)\s+(${list})${TAIL}`,
    String.raw`${NEGATED}\b(?:keep|hold)\s+(${list})\s*(?:${STAYS}|$)`,
    String.raw`(${list})\s+${BE}\s+(?:\w+\s+)?${STATE}`,
  ].map(f => new RegExp(f, 'gi'));
  const canonical = new Map(sorted.map(n => [n.toUpperCase().replace(/_+/g, '_'), n]));
  const oneKnob = new RegExp(`(?<![\\w-])${knob}(?![\\w-])`, 'gi');
  const found: string[] = [];
  for (const clause of note.replace(/[‘’]/g, "'").split(/[.;!?\n]+/)) {
    const hits: { at: number; name: string }[] = [];
    for (const form of forms) {
      for (const m of clause.trim().matchAll(form)) {
        for (const k of m[1].matchAll(oneKnob)) {
          const name = canonical.get(k[0].toUpperCase().replace(/[\s_-]+/g, '_'));
          if (name) hits.push({ at: m.index + m[0].indexOf(m[1]) + k.index, name });
        }
      }
    }
    hits.sort((a, b) => a.at - b.at).forEach(h => found.includes(h.name) || found.push(h.name));
  }
  return found;
}

/** Each knob of `names` that a note froze, with the first note that did. */
export function knobRules(notes: readonly ReviewNote[], names: readonly string[]): KnobRule[] {
  const rules: KnobRule[] = [];
  for (const { n, note } of notes) {
    for (const name of knobsNamedIn(note, names)) {
      if (!rules.some(r => r.name === name)) rules.push({ name, n, note });
    }
  }
  return rules;
}

/** The rule as the panel and the CLI say it: "Leaving HEAD_DIM alone (from your note on #7)". */
export function knobRuleWords(rule: Pick<KnobRule, 'name' | 'n'>): string {
  return `Leaving ${rule.name} alone (from your note on #${rule.n})`;
}

/** The rules a proposal followed, as the offline proposer's meta holds them (`leave_alone`). */
export const KnobRulesMeta = z.array(z.object({ name: z.string(), n: z.int().check(z.nonnegative()) }));
export type KnobRulesMeta = z.infer<typeof KnobRulesMeta>;

/** The rules in a proposal's meta (the offline proposer's `leave_alone`); [] for any other meta. */
export function knobRulesOfMeta(meta: unknown): KnobRulesMeta {
  const rules = meta && typeof meta === 'object' ? (meta as { leave_alone?: unknown }).leave_alone : undefined;
  const parsed = KnobRulesMeta.safeParse(rules);
  return parsed.success ? parsed.data : [];
}
