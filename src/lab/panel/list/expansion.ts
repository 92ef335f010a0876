/**
 * Which finished experiments of a run the panel shows expanded, in a form small enough to keep in
 * JupyterLab's state database across reloads: a base rule (the kept ones, all, or none) and the
 * numbers the user flipped from it. *Expand all* on a run of 10,000 experiments is one word, not
 * 10,000 numbers, and a run nobody touched saves nothing.
 */

/** Which experiments are expanded before any the user flipped: kept ones (the default), all, none. */
export type ExpansionBase = 'kept' | 'all' | 'none';

/** The saved form: the base and the experiments whose state differs from it. */
export interface IExpansionState {
  base: ExpansionBase;
  flipped: number[];
}

const BASES: readonly ExpansionBase[] = ['kept', 'all', 'none'];

/** The saved state read back, or null when it is not one (an older or foreign value). */
export function parseExpansion(value: unknown): IExpansionState | null {
  if (!value || typeof value !== 'object') {
    return null;
  }
  const { base, flipped } = value as Record<string, unknown>;
  if (!BASES.includes(base as ExpansionBase) || !Array.isArray(flipped)) {
    return null;
  }
  return { base: base as ExpansionBase, flipped: flipped.filter((n): n is number => Number.isInteger(n)) };
}

export class Expansion {
  private base: ExpansionBase = 'kept';
  private readonly flipped = new Set<number>();

  /** Whether experiment `n`, of this status, is expanded. */
  isExpanded(n: number, status: string): boolean {
    const byBase = this.base === 'all' || (this.base === 'kept' && status === 'keep');
    return byBase !== this.flipped.has(n);
  }

  /** Sets one experiment's state. */
  set(n: number, status: string, expanded: boolean): void {
    if (this.isExpanded(n, status) !== expanded) {
      if (!this.flipped.delete(n)) {
        this.flipped.add(n);
      }
    }
  }

  /** Every experiment expanded, or every one collapsed. */
  setAll(expanded: boolean): void {
    this.base = expanded ? 'all' : 'none';
    this.flipped.clear();
  }

  /** Back to the default: the kept ones expanded. */
  reset(): void {
    this.base = 'kept';
    this.flipped.clear();
  }

  restore(state: IExpansionState): void {
    this.base = state.base;
    this.flipped.clear();
    state.flipped.forEach(n => this.flipped.add(n));
  }

  get state(): IExpansionState {
    return { base: this.base, flipped: [...this.flipped].sort((a, b) => a - b) };
  }

  /** Whether nothing differs from the default, so nothing needs saving. */
  get isDefault(): boolean {
    return this.base === 'kept' && this.flipped.size === 0;
  }
}
