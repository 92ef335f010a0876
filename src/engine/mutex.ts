/** A first-come, first-served async lock, for work that must not interleave across workers. */
export class Mutex {
  private tail: Promise<void> = Promise.resolve();

  /** Runs fn once every earlier holder has finished; its result or error passes through. */
  run<T>(fn: () => Promise<T>): Promise<T> {
    const result = this.tail.then(fn);
    // The next holder waits for this one whether it succeeded or not.
    this.tail = result.then(
      () => undefined,
      () => undefined
    );
    return result;
  }
}
