/**
 * The stand-in's prompt cache, as Anthropic's prompt-caching page describes it: a prompt is the
 * ordered blocks of tools, system and messages; a `cache_control` breakpoint writes the prefix
 * ending there, with its TTL (5 minutes, or 1 hour); at each breakpoint the API looks back up to
 * 20 blocks for the longest prefix already cached, and reads it; a hit refreshes the entry's
 * lifetime. Writes are billed by TTL: the tokens from the previous breakpoint (or the end of what
 * was read) to a breakpoint are written at that breakpoint's TTL.
 */
import { createHash } from 'node:crypto';

export type Ttl = '5m' | '1h';
export const CACHE_TTL_MS: Record<Ttl, number> = { '5m': 5 * 60_000, '1h': 60 * 60_000 };
/** How many blocks back from a breakpoint the API looks for a cached prefix. */
export const LOOKBACK_BLOCKS = 20;

export interface Segment {
  text: string;
  /** Set when the block carries `cache_control`; the breakpoint's TTL. */
  ttl?: Ttl;
  /** False for the role markers between messages, which are no blocks (the lookback counts blocks). */
  block: boolean;
}

export function isObject(v: unknown): v is Record<string, any> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

export function estimateTokens(chars: number): number {
  return Math.max(1, Math.ceil(chars / 4));
}

/** The prompt as an ordered list of blocks, in cache-prefix order: tools, system, messages. */
export function segmentsOf(body: Record<string, any>): Segment[] {
  const segs: Segment[] = [];
  const push = (block: unknown) => {
    if (isObject(block)) {
      const { cache_control, ...rest } = block;
      const ttl = isObject(cache_control) ? (cache_control.ttl === '1h' ? '1h' : '5m') : undefined;
      segs.push({ text: JSON.stringify(rest), ttl, block: true });
    } else {
      segs.push({ text: JSON.stringify(block), block: true });
    }
  };
  if (Array.isArray(body.tools)) body.tools.forEach(push);
  if (typeof body.system === 'string') push(body.system);
  else if (Array.isArray(body.system)) body.system.forEach(push);
  if (Array.isArray(body.messages))
    for (const m of body.messages) {
      if (!isObject(m)) continue;
      segs.push({ text: `<${String(m.role)}>`, block: false });
      if (Array.isArray(m.content)) m.content.forEach(push);
      else push(m.content);
    }
  return segs;
}

export interface CacheUsage {
  input_tokens: number;
  cache_creation_input_tokens: number;
  cache_read_input_tokens: number;
  cache_creation: { ephemeral_5m_input_tokens: number; ephemeral_1h_input_tokens: number };
}

/** Prefix hash → when it expires and the TTL it was written with. */
export class PromptCache {
  private readonly entries = new Map<string, { expiry: number; ttl: Ttl }>();

  constructor(
    private readonly minTokens: number,
    private readonly now: () => number,
  ) {}

  /** What one request reads and writes; its writes and refreshes take effect. */
  use(body: Record<string, any>): CacheUsage {
    const segs = segmentsOf(body);
    const now = this.now();
    const hash = createHash('sha256');
    hash.update(`${body.model}\n`);
    let chars = 0;
    const keys: string[] = [];
    const tokens: number[] = [];
    for (const s of segs) {
      hash.update(s.text);
      hash.update('\n');
      chars += s.text.length;
      keys.push(hash.copy().digest('hex'));
      tokens.push(estimateTokens(chars));
    }
    const total = segs.length ? tokens[tokens.length - 1] : 0;
    const breakpoints = segs.flatMap((s, i) => (s.ttl !== undefined ? [i] : []));
    let read = 0;
    let readKey: string | null = null;
    for (const b of breakpoints) {
      for (let j = b, blocks = 0; j >= 0 && blocks <= LOOKBACK_BLOCKS; j--) {
        if (!segs[j].block) continue;
        blocks++;
        const hit = this.entries.get(keys[j]);
        if (hit && hit.expiry > now) {
          if (tokens[j] > read) [read, readKey] = [tokens[j], keys[j]];
          break;
        }
      }
    }
    if (readKey) {
      const hit = this.entries.get(readKey)!;
      hit.expiry = now + CACHE_TTL_MS[hit.ttl];
    }
    const created = { '5m': 0, '1h': 0 };
    let covered = read;
    for (const b of breakpoints) {
      const ttl = segs[b].ttl as Ttl;
      if (tokens[b] < this.minTokens) continue;
      const old = this.entries.get(keys[b]);
      // A refresh keeps the longer of the two lifetimes.
      const keep = old && old.expiry > now && CACHE_TTL_MS[old.ttl] > CACHE_TTL_MS[ttl] ? old.ttl : ttl;
      this.entries.set(keys[b], { expiry: now + CACHE_TTL_MS[keep], ttl: keep });
      if (tokens[b] > covered) {
        created[ttl] += tokens[b] - covered;
        covered = tokens[b];
      }
    }
    const write = created['5m'] + created['1h'];
    return {
      input_tokens: Math.max(total - read - write, 0),
      cache_creation_input_tokens: write,
      cache_read_input_tokens: read,
      cache_creation: { ephemeral_5m_input_tokens: created['5m'], ephemeral_1h_input_tokens: created['1h'] },
    };
  }
}
