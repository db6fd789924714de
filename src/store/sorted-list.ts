/**
 * An ordered collection kept as a list of small sorted chunks. Inserts and
 * removals touch one chunk (a short splice) instead of shifting the whole
 * list, so a table of a million rows stays cheap to update in any order,
 * while iteration from any position is a binary search away.
 */
const MAX_CHUNK = 512;

export type Compare<T> = (a: T, b: T) => number;

export class SortedList<T> {
  private chunks: T[][] = [];
  private count = 0;

  /** Ordered by compareStrings: searched without calls through `compare`. */
  private readonly strings: boolean;

  constructor(private readonly compare: Compare<T>) {
    this.strings = (compare as unknown) === compareStrings;
  }

  get size(): number {
    return this.count;
  }

  clear(): void {
    this.chunks = [];
    this.count = 0;
  }

  /** Adds `value`; an equal value (compare = 0) is replaced. Returns true if it was new. */
  upsert(value: T): boolean {
    if (this.chunks.length === 0) {
      this.chunks.push([value]);
      this.count = 1;
      return true;
    }
    // A listing order by creation (byCreateIndexThenId) takes every new row
    // at its end: one comparison instead of two binary searches.
    const lastChunk = this.chunks.length - 1;
    const tail = this.chunks[lastChunk]!;
    if (this.compare(tail[tail.length - 1]!, value) < 0) {
      this.insertAt(lastChunk, tail.length, value);
      return true;
    }
    const c = this.chunkFor(value);
    return this.upsertIn(c, value);
  }

  /**
   * Upserts each of `values`, which must be in ascending order (equal
   * values allowed): the same list as upserting them one by one. The
   * chunk of each is found by walking forward from the previous one's,
   * and consecutive values land in the same few chunks, whose keys are
   * then still in the processor's cache: a binary search of a large list
   * of strings costs a cache miss for nearly every key it compares.
   */
  upsertSorted(values: readonly T[]): void {
    // The first value's chunk by a binary search (a restore files keys in
    // order, all past the end), the rest by the walk.
    let c = values.length > 0 && this.chunks.length > 0 ? this.chunkFor(values[0]!) : 0;
    for (const value of values) {
      if (this.chunks.length === 0) {
        this.chunks.push([value]);
        this.count = 1;
        continue;
      }
      while (c + 1 < this.chunks.length && this.atOrBefore(this.chunks[c + 1]![0]!, value)) c++;
      this.upsertIn(c, value);
    }
  }

  /** Upserts `value` into chunk `c`, the chunk whose range holds it. */
  private upsertIn(c: number, value: T): boolean {
    const chunk = this.chunks[c]!;
    const i = this.lowerBound(chunk, value);
    if (i < chunk.length && this.compare(chunk[i]!, value) === 0) {
      chunk[i] = value;
      return false;
    }
    this.insertAt(c, i, value);
    return true;
  }

  private insertAt(c: number, i: number, value: T): void {
    const chunk = this.chunks[c]!;
    if (i === chunk.length) chunk.push(value);
    else chunk.splice(i, 0, value);
    this.count++;
    if (chunk.length > MAX_CHUNK)
      this.chunks.splice(c, 1, chunk.slice(0, MAX_CHUNK / 2), chunk.slice(MAX_CHUNK / 2));
  }

  private atOrBefore(a: T, b: T): boolean {
    return this.strings ? (a as unknown as string) <= (b as unknown as string) : this.compare(a, b) <= 0;
  }

  /** Removes the value equal to `value` (compare = 0). Returns true if one was there. */
  remove(value: T): boolean {
    if (this.chunks.length === 0) return false;
    const c = this.chunkFor(value);
    const chunk = this.chunks[c]!;
    const i = this.lowerBound(chunk, value);
    if (i >= chunk.length || this.compare(chunk[i]!, value) !== 0) return false;
    chunk.splice(i, 1);
    this.count--;
    if (chunk.length === 0) this.chunks.splice(c, 1);
    return true;
  }

  first(): T | undefined {
    return this.chunks[0]?.[0];
  }

  last(): T | undefined {
    const chunk = this.chunks[this.chunks.length - 1];
    return chunk?.[chunk.length - 1];
  }

  /**
   * Values in order, starting at the first value >= `from` (or, in reverse,
   * the last value <= `from`); from the very start when `from` is undefined.
   * The list must not be changed while an iteration is in progress.
   */
  *iterate(from?: T, reverse = false): Generator<T> {
    if (this.chunks.length === 0) return;
    if (!reverse) {
      let c = 0;
      let i = 0;
      if (from !== undefined) {
        c = this.chunkFor(from);
        i = this.lowerBound(this.chunks[c]!, from);
      }
      for (; c < this.chunks.length; c++, i = 0) {
        const chunk = this.chunks[c]!;
        for (; i < chunk.length; i++) yield chunk[i]!;
      }
      return;
    }
    let c = this.chunks.length - 1;
    let i = this.chunks[c]!.length - 1;
    if (from !== undefined) {
      c = this.chunkFor(from);
      i = upperBound(this.chunks[c]!, from, this.compare) - 1;
    }
    for (; c >= 0; c--, i = c >= 0 ? this.chunks[c]!.length - 1 : 0) {
      const chunk = this.chunks[c]!;
      for (; i >= 0; i--) yield chunk[i]!;
    }
  }

  /** The chunk whose range holds `value` (the last chunk whose first value <= value). */
  private chunkFor(value: T): number {
    if (this.strings) return lastChunkAtOrBefore(this.chunks as unknown as string[][], value as string);
    let lo = 0;
    let hi = this.chunks.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (this.compare(this.chunks[mid]![0]!, value) <= 0) lo = mid;
      else hi = mid - 1;
    }
    return lo;
  }

  private lowerBound(arr: T[], value: T): number {
    if (this.strings) return lowerBoundString(arr as unknown as string[], value as string);
    return lowerBound(arr, value, this.compare);
  }
}

/*
 * compareStrings's searches, with the comparison written inline: a call
 * through `compare` is not inlined where both kinds of list share the
 * search (it sees two functions), and primary keys are searched on every
 * new row of a table (a plan record's placements). Same order, same answers.
 */
function lastChunkAtOrBefore(chunks: readonly (readonly string[])[], value: string): number {
  let lo = 0;
  let hi = chunks.length - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (chunks[mid]![0]! <= value) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

function lowerBoundString(arr: readonly string[], value: string): number {
  let lo = 0;
  let hi = arr.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (arr[mid]! < value) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

function lowerBound<T>(arr: T[], value: T, compare: Compare<T>): number {
  let lo = 0;
  let hi = arr.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (compare(arr[mid]!, value) < 0) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

function upperBound<T>(arr: T[], value: T, compare: Compare<T>): number {
  let lo = 0;
  let hi = arr.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (compare(arr[mid]!, value) <= 0) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

export const compareStrings: Compare<string> = (a, b) => (a < b ? -1 : a > b ? 1 : 0);
