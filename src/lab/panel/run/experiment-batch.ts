/**
 * Experiments asked for whole, batched: the numbers asked for in one turn of the event loop go
 * in one request (the list asks for each output it renders, which the replay sent light).
 */
import type { ExperimentRecord } from '../../../core/journal/journal';

/** The most experiments one request fetches whole (the server takes up to 200). */
const EXPERIMENTS_PER_REQUEST = 100;

export class ExperimentBatch {
  private batch: { tag: string; wanted: number[]; request: Promise<Map<number, ExperimentRecord>> } | null = null;

  /** @param fetch the request: run `tag`'s experiments numbered `wanted`, whole. */
  constructor(private readonly fetch: (tag: string, wanted: number[]) => Promise<ExperimentRecord[]>) {}

  /** Experiment n of run `tag` whole, as the journal holds it; null when the server has none. */
  get(tag: string, n: number): Promise<ExperimentRecord | null> {
    let batch = this.batch;
    if (!batch || batch.tag !== tag || batch.wanted.length >= EXPERIMENTS_PER_REQUEST) {
      const wanted: number[] = [];
      const request = Promise.resolve().then(async () => {
        if (this.batch === batch) {
          this.batch = null;
        }
        const experiments = await this.fetch(tag, wanted);
        return new Map(experiments.map(e => [e.n, e]));
      });
      batch = this.batch = { tag, wanted, request };
    }
    batch.wanted.push(n);
    return batch.request.then(found => found.get(n) ?? null);
  }
}
