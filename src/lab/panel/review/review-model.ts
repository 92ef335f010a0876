/**
 * What the panel knows of step mode for the run it shows: the proposal awaiting review as GET
 * review gave it (diff, files, proposer and why), whether the reviewer is editing it, a decision
 * handed over and not yet taken, the last refusal, and the step-mode switch (the choice for the
 * next Start, and a switch asked of the running engine that it has not applied yet).
 * Changed only through its methods, each of which emits `changed`; the review output, the
 * toolbar's toggle and the commands read it.
 */
import { Signal, type ISignal } from '@lumino/signaling';
import type { PendingReview } from '../../../core/step-mode/review';

export type ReviewModelChange = 'proposal' | 'editing' | 'busy' | 'sent' | 'error' | 'step';

export class ReviewModel {
  private _proposal: PendingReview | null = null;
  private _editing = false;
  private _busy = false;
  private _sent: number | null = null;
  private _error: string | null = null;
  private _stepChoice = false;
  private _stepTouched = false;
  private _stepWanted: boolean | null = null;
  private readonly _changed = new Signal<this, ReviewModelChange>(this);

  get changed(): ISignal<this, ReviewModelChange> {
    return this._changed;
  }
  /** The proposal awaiting review, whole; null when none does or it is not read yet. */
  get proposal(): PendingReview | null {
    return this._proposal;
  }
  /** The reviewer has the proposed files open in editors. */
  get editing(): boolean {
    return this._editing;
  }
  /** A request to the server is under way. */
  get busy(): boolean {
    return this._busy;
  }
  /** The proposal a decision was handed over for, until the engine takes it (or refuses an edit). */
  get sent(): number | null {
    return this._sent;
  }
  /** Why the last request failed, in the server's words. */
  get error(): string | null {
    return this._error;
  }
  /** Whether the next Start (or Resume) reviews each proposal. */
  get stepChoice(): boolean {
    return this._stepChoice;
  }
  /** A switch the running engine was asked for and has not applied yet (it does so before its next proposal). */
  get stepWanted(): boolean | null {
    return this._stepWanted;
  }

  /** A proposal (or none): editing and a decision handed over belong to the one before. */
  setProposal(proposal: PendingReview | null): void {
    const other = proposal?.n !== this._proposal?.n;
    this._proposal = proposal;
    if (other) {
      this._editing = false;
      this._sent = null;
      this._error = null;
    }
    this._changed.emit('proposal');
  }

  setEditing(editing: boolean): void {
    if (editing !== this._editing) {
      this._editing = editing;
      this._changed.emit('editing');
    }
  }

  setBusy(busy: boolean): void {
    this._busy = busy;
    this._changed.emit('busy');
  }

  setSent(n: number | null): void {
    this._sent = n;
    this._changed.emit('sent');
  }

  setError(error: string | null): void {
    this._error = error;
    this._changed.emit('error');
  }

  /** The reviewer's choice for the next Start. */
  setStepChoice(step: boolean): void {
    this._stepTouched = true;
    this._stepChoice = step;
    this._changed.emit('step');
  }

  /** program.md's `step:`, unless the reviewer chose already. */
  suggestStep(step: boolean): void {
    if (!this._stepTouched && step !== this._stepChoice) {
      this._stepChoice = step;
      this._changed.emit('step');
    }
  }

  setStepWanted(step: boolean | null): void {
    if (step !== this._stepWanted) {
      this._stepWanted = step;
      this._changed.emit('step');
    }
  }
}
