/** A first-come, first-served async lock, for work that must not interleave across workers. */
export class Mutex {
  private tail: Promise<void> = Promise.resolve();

  /** Runs fn once every earlier holder has finished; its result or error passes through. */
  run<T>(fn: () => Promise<T>): Promise<T> {
    const result = this.tail.then(fn);
    // The next holder waits for this one whether it succeeded or not.
    this.tail = result.then(
      () => undefined,
      () => undefined,
    );
    return result;
  }
}

/** Counts events (experiments finished) and lets a task wait for the next one after those it saw. */
export class EventCount {
  count = 0;
  private waiters: Array<() => void> = [];

  /** Resolves once the count passes `seen`, or at once when `done()` (the run is stopping). */
  after(seen: number, done: () => boolean): Promise<void> {
    return new Promise(resolve => {
      if (this.count > seen || done()) resolve();
      else this.waiters.push(resolve);
    });
  }

  /** Counts one event and wakes every waiter. */
  add(): void {
    this.count++;
    this.wakeAll();
  }

  /** Wakes every waiter without counting (they check why themselves). */
  wakeAll(): void {
    const waiting = this.waiters;
    this.waiters = [];
    waiting.forEach(w => w());
  }
}
