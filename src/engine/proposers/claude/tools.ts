/**
 * The tools a claude proposal calls, run over an in-memory copy of the editable files:
 * Anthropic's text editor (view, str_replace, insert; view also reads the read-only files, from
 * the workspace), a tool that starts from a crashed experiment to fix it, one that takes a move the
 * engine prepared (its files ready), view_run_log (a past run's log, read-only: ./run-log.ts),
 * write_notes (the research notes, when due: finish_experiment is refused until they are written,
 * a bounded number of times), and finish_experiment.
 * Nothing here writes to the workspace; the engine applies the finished proposal. A path of any
 * spelling that is none of the run's files (`toString`, `__proto__`, `../x`) is an is_error result.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import * as z from 'zod/mini';
import { englishMessages } from '../../../core/journal/zod-english';
import { syntaxCheck } from '../../workspace/python';
import { NOTES_SECTION_CHARS, type ResearchNotes } from '../../../core/journal/research-notes';
import { NOTES_EVERY, notesText, type NotesDue } from './notes';
import { lineOf, numbered, occurrences, readonlyText } from './text';
import type { ExperimentRecord } from '../../../core/journal/journal';
import { viewRunLog } from './run-log';
import {
  EDITOR,
  FINISH,
  FinishInput,
  FIX,
  MOVE,
  MoveInput,
  NOTES,
  NotesInput,
  VIEW_LOG,
  type Finish,
} from './tool-defs';
import type { MoveCandidate } from '../types';

englishMessages();

export interface ToolOutcome {
  content: string;
  isError: boolean;
  /** An edit that was refused (counts toward the proposal's failed-edit limit). */
  failedEdit: boolean;
  finish?: Finish;
}

const ViewInput = z.object({
  command: z.literal('view'),
  path: z.string(),
  view_range: z.optional(z.array(z.int()).check(z.length(2))),
});
const ReplaceInput = z.object({
  command: z.literal('str_replace'),
  path: z.string(),
  old_str: z.string(),
  new_str: z.optional(z.string()),
});
const InsertInput = z.object({
  command: z.literal('insert'),
  path: z.string(),
  insert_line: z.int(),
  new_str: z.optional(z.string()),
  insert_text: z.optional(z.string()),
});

/**
 * How many times finish_experiment is refused while due notes are unwritten; the next finish goes
 * through without them (the experiment is worth more than the notes, which stay due for the next
 * proposal) rather than the proposal being abandoned.
 */
export const MAX_NOTES_REFUSALS = 2;

const ok = (content: string): ToolOutcome => ({ content, isError: false, failedEdit: false });
const refused = (content: string, failedEdit = true): ToolOutcome => ({ content, isError: true, failedEdit });

/** One proposal's working copy of the editable files and the tool calls on it. */
export class EditSession {
  files: Record<string, string>;
  usedFix = false;
  /** The move taken (take_move), if the working copy is a move's; a later fix replaces it. */
  taken: MoveCandidate | null = null;
  /** Edits applied since the session (or the fix, or the move) started. */
  edits = 0;
  /** The research notes written in this proposal (write_notes), for its meta. */
  notes: ResearchNotes | null = null;
  /** finish_experiment calls refused for want of the due notes. */
  notesRefusals = 0;
  private tmp: string | null = null;

  constructor(
    private readonly base: Record<string, string>,
    private readonly opts: {
      workdir: string;
      python: string;
      fix?: { n: number; files: Record<string, string> };
      /** The read-only files (relative to workdir): viewable, never editable. */
      readonly?: string[];
      /** The journal's experiments: view_run_log reads only the logs they name. */
      history?: readonly ExperimentRecord[];
      /** The moves on offer, in the prompt's order (take_move's index is 1-based into it). */
      moves?: MoveCandidate[];
      /** Whether the research notes are due in this proposal (./notes.ts), and what they would cover. */
      notesDue?: NotesDue | null;
    },
  ) {
    this.files = { ...base };
  }

  /** The files whose content differs from the best commit's. */
  changed(): Record<string, string> {
    return Object.fromEntries(Object.entries(this.files).filter(([f, text]) => text !== this.base[f]));
  }

  /** Runs one tool call and says what to tell the model. */
  async handle(name: string, input: unknown): Promise<ToolOutcome> {
    if (name === FINISH) return this.finish(input);
    if (name === FIX) return this.startFix();
    if (name === VIEW_LOG)
      return { ...viewRunLog(this.opts.workdir, this.opts.history ?? [], input), failedEdit: false };
    if (name === MOVE) return this.takeMove(input);
    if (name === NOTES) return this.writeNotes(input);
    if (name !== EDITOR) return refused(`there is no tool named ${name}`, false);
    const command = (input as { command?: unknown } | null)?.command;
    if (command === 'view') return this.view(input);
    if (command === 'str_replace') return this.replace(input);
    if (command === 'insert') return this.insert(input);
    return refused(
      `the ${String(command)} command is not available here; use view, str_replace or insert on the editable files (${this.editable()})`,
    );
  }

  /** Removes the temporary folder of the syntax check. */
  dispose(): void {
    if (this.tmp) fs.rmSync(this.tmp, { recursive: true, force: true });
    this.tmp = null;
  }

  private editable(): string {
    return Object.keys(this.files).join(', ');
  }

  private readonlyList(): string[] {
    return this.opts.readonly ?? [];
  }

  private seeable(): string {
    const ro = this.readonlyList();
    return `the editable files are: ${this.editable()}${ro.length ? `; the read-only ones (view only): ${ro.join(', ')}` : ''}`;
  }

  /**
   * The run's file a path names, or why it names none. Accepts `train.py`, `/train.py` and absolute
   * paths ending in it; the files are looked up as own keys, so `toString` or `__proto__` name nothing.
   */
  private resolve(p: string): { file: string; readonly?: true } | { error: string; dir?: boolean } {
    const raw = p.trim().replace(/\\/g, '/');
    const rel =
      path.isAbsolute(raw) && !path.relative(this.opts.workdir, raw).startsWith('..')
        ? path.relative(this.opts.workdir, raw)
        : raw.replace(/^\/+/, '');
    const norm = path.posix.normalize(rel || '.');
    const ro = this.readonlyList();
    if (Object.hasOwn(this.files, norm)) return { file: norm };
    if (ro.includes(norm)) return { file: norm, readonly: true };
    // An absolute path from another checkout (`/repo/train.py`) names the file it ends in; `../train.py` names none.
    const suffix = (list: string[]) => (raw.startsWith('/') ? list.filter(f => raw.endsWith('/' + f)) : []);
    const editable = suffix(Object.keys(this.files));
    if (editable.length === 1) return { file: editable[0] };
    const viewable = suffix(ro);
    if (viewable.length === 1) return { file: viewable[0], readonly: true };
    if (norm === '.' || norm === './') return { error: '', dir: true };
    const inside = !norm.startsWith('..') && !path.isAbsolute(norm);
    if (inside && fs.existsSync(path.join(this.opts.workdir, norm))) {
      return { error: `${norm} is not one of the run's files you can see; ${this.seeable()}` };
    }
    return { error: `${p} is not a file you can see; ${this.seeable()}` };
  }

  /** Why an edit of a path is refused, or the editable file it names. */
  private editTarget(p: string): { file: string } | { error: string } {
    const where = this.resolve(p);
    if ('error' in where) return { error: where.error || `${p} is a folder; edit one of ${this.editable()}` };
    if (where.readonly)
      return { error: `${where.file} is read-only: view it if you need to, but only ${this.editable()} may be edited` };
    return { file: where.file };
  }

  private view(input: unknown): ToolOutcome {
    const parsed = ViewInput.safeParse(input);
    if (!parsed.success)
      return refused(
        `view needs a path (and optionally view_range [start, end]): ${z.prettifyError(parsed.error)}`,
        false,
      );
    const where = this.resolve(parsed.data.path);
    if ('error' in where)
      return where.dir
        ? ok([...Object.keys(this.files), ...this.readonlyList().map(f => `${f} (read-only)`)].join('\n'))
        : refused(where.error, false);
    const text = where.readonly ? readonlyText(this.opts.workdir, where.file) : this.files[where.file];
    if (text === null) return refused(`${where.file} could not be read`, false);
    const lines = text.split('\n');
    const [start, end] = parsed.data.view_range ?? [1, -1];
    const last = end === -1 ? lines.length : Math.min(end, lines.length);
    if (start < 1 || start > lines.length || last < start)
      return refused(`view_range [${start}, ${end}] is outside ${where.file}, which has ${lines.length} lines`, false);
    return ok(numbered(lines, start, last));
  }

  private async replace(input: unknown): Promise<ToolOutcome> {
    const parsed = ReplaceInput.safeParse(input);
    if (!parsed.success)
      return refused(`str_replace needs path, old_str and new_str: ${z.prettifyError(parsed.error)}`);
    const { old_str: oldStr, new_str: newStr = '' } = parsed.data;
    const where = this.editTarget(parsed.data.path);
    if ('error' in where) return refused(where.error);
    const text = this.files[where.file];
    if (oldStr === '') return refused('old_str is empty; give the exact text to replace');
    const at = occurrences(text, oldStr);
    if (at.length === 0) {
      return refused(
        `old_str was not found in ${where.file}; it must match the file exactly, whitespace and indentation included (view the file to copy the text)`,
      );
    }
    if (at.length > 1) {
      const lines = at.map(i => lineOf(text, i)).join(', ');
      return refused(
        `old_str matches ${at.length} times in ${where.file} (lines ${lines}); include more context to make it unique`,
      );
    }
    if (oldStr === newStr) return refused('old_str and new_str are the same; nothing would change');
    const next = text.slice(0, at[0]) + newStr + text.slice(at[0] + oldStr.length);
    const line = lineOf(text, at[0]);
    return this.commitEdit(where.file, next, line, line + newStr.split('\n').length - 1, 'replaced the text');
  }

  private async insert(input: unknown): Promise<ToolOutcome> {
    const parsed = InsertInput.safeParse(input);
    if (!parsed.success) return refused(`insert needs path, insert_line and new_str: ${z.prettifyError(parsed.error)}`);
    const add = parsed.data.new_str ?? parsed.data.insert_text;
    if (add === undefined) return refused('insert needs the text to insert, in new_str');
    const where = this.editTarget(parsed.data.path);
    if ('error' in where) return refused(where.error);
    const text = this.files[where.file];
    const lines = text.split('\n');
    const count = text.endsWith('\n') ? lines.length - 1 : lines.length;
    const after = parsed.data.insert_line;
    if (after < 0 || after > count)
      return refused(
        `insert_line ${after} is outside ${where.file}; use 0 (the top) to ${count} (after the last line)`,
      );
    const added = (add.endsWith('\n') ? add.slice(0, -1) : add).split('\n');
    lines.splice(after, 0, ...added);
    return this.commitEdit(
      where.file,
      lines.join('\n'),
      after + 1,
      after + added.length,
      `inserted ${added.length} line(s) after line ${after}`,
    );
  }

  /** Keeps an edit if the file still parses; a syntax error undoes it. */
  private async commitEdit(file: string, next: string, from: number, to: number, what: string): Promise<ToolOutcome> {
    const problem = await this.syntax(file, next);
    if (problem) {
      return refused(
        `the edit was not applied: it would leave ${file} with a syntax error (${problem}); fix the edit and try again`,
      );
    }
    this.files[file] = next;
    this.edits++;
    const lines = next.split('\n');
    const a = Math.max(1, from - 3);
    const b = Math.min(lines.length, to + 3);
    return ok(`${file}: ${what}. Lines ${a}–${b} now read:\n${numbered(lines, a, b)}`);
  }

  /** The syntax check runs on a temporary copy: the workspace is the engine's, not the proposal's. */
  private async syntax(file: string, text: string): Promise<string | null> {
    if (!file.endsWith('.py')) return null;
    this.tmp ??= fs.mkdtempSync(path.join(os.tmpdir(), 'ar-claude-'));
    const target = path.join(this.tmp, file);
    fs.mkdirSync(path.dirname(target), { recursive: true });
    fs.writeFileSync(target, text);
    return syntaxCheck(this.opts.python, this.tmp, [file]);
  }

  private startFix(): ToolOutcome {
    const fix = this.opts.fix;
    if (!fix)
      return refused(
        'no crashed experiment is offered for fixing now; edit the files for a new experiment instead',
        false,
      );
    this.files = { ...this.base, ...fix.files };
    this.usedFix = true;
    this.taken = null;
    this.edits = 0;
    return ok(
      `Your working copy is now experiment #${fix.n}'s version, the one that crashed. Fix its bug with the editor, then call ${FINISH}.`,
    );
  }

  /** Replaces the working copy with a move's files; finish_experiment then needs no further edit. */
  private takeMove(input: unknown): ToolOutcome {
    const moves = this.opts.moves ?? [];
    if (!moves.length) return refused('no moves are on offer now; edit the files for a new experiment instead', false);
    const parsed = MoveInput.safeParse(input);
    const range = moves.length === 1 ? '1 (the only one)' : `1 to ${moves.length}`;
    if (!parsed.success) return refused(`${MOVE} needs index, the move's number in the list: ${range}`, false);
    const index = parsed.data.index;
    const move = moves[index - 1];
    if (!move) return refused(`there is no move ${index}; the moves on offer are numbered ${range}`, false);
    // Only the run's editable files: a candidate naming anything else does not widen what may change.
    const files = Object.fromEntries(Object.entries(move.files).filter(([f]) => Object.hasOwn(this.base, f)));
    this.files = { ...this.base, ...files };
    this.taken = move;
    this.usedFix = false;
    this.edits = 0;
    const what = `${move.kind} of ${move.of.map(k => `#${k}`).join(' + ')}`;
    return ok(
      `Your working copy is now move ${index}'s files (${what}). Call ${FINISH} to run it as it is, or edit further first.`,
    );
  }

  private writeNotes(input: unknown): ToolOutcome {
    const due = this.opts.notesDue;
    if (!due)
      return refused(
        `your research notes are not due now; they are asked for after every ${NOTES_EVERY} experiments. Edit the files and call ${FINISH}`,
        false,
      );
    const parsed = NotesInput.safeParse(input);
    if (!parsed.success)
      return refused(
        `${NOTES} needs findings, dead_ends and open_hypotheses, each non-empty text of at most ${NOTES_SECTION_CHARS} characters: ${z.prettifyError(parsed.error)}`,
        false,
      );
    this.notes = { text: notesText(parsed.data), through: due.through };
    return ok(
      `Your notes are recorded; they replace the previous ones from the next proposal on. Now finish the experiment (${FINISH}).`,
    );
  }

  private finish(input: unknown): ToolOutcome {
    const parsed = FinishInput.safeParse(input);
    if (!parsed.success)
      return refused(
        `${FINISH} needs a one-line description, a rationale and expected_delta (a number): ${z.prettifyError(parsed.error)}`,
        false,
      );
    // A taken move is an experiment as it stands: finishing it needs no edit of its own.
    if (this.edits === 0 && !this.taken)
      return refused(`make an edit first: use ${EDITOR} to change ${this.editable()}, then call ${FINISH}`, false);
    if (Object.keys(this.changed()).length === 0)
      return refused(
        this.taken && this.edits === 0
          ? 'the move leaves the files as they are at the best commit; make an edit that changes something'
          : 'your edits leave the files as they are at the best commit; make an edit that changes something',
        false,
      );
    if (this.opts.notesDue && !this.notes && this.notesRefusals < MAX_NOTES_REFUSALS) {
      this.notesRefusals++;
      return refused(
        `your research notes are due: call ${NOTES} (findings, dead_ends, open_hypotheses), then ${FINISH} again; your edits are kept`,
        false,
      );
    }
    // The description becomes a commit subject and a results.tsv cell: one line.
    const description = parsed.data.description.replace(/\s+/g, ' ').trim().slice(0, 200);
    const { expected_delta, lesson, direction } = parsed.data;
    return {
      content: 'Recorded; the engine will run it.',
      isError: false,
      failedEdit: false,
      finish: {
        description,
        rationale: parsed.data.rationale.trim(),
        ...(expected_delta !== undefined ? { expected_delta } : {}),
        ...(lesson?.trim() ? { lesson: lesson.trim() } : {}),
        ...(direction?.trim() ? { direction: direction.trim().slice(0, 80) } : {}),
      },
    };
  }
}
