/**
 * Where some records of one segment start: one entry per `intervalBytes` of
 * frames, so a read seeks to within one interval of any index instead of
 * scanning the segment from its start.
 *
 * The interval defaults to 32 KiB rather than a page: a reader fetches at
 * least a 128 KiB chunk anyway, so a denser index would not save a read but
 * would cost memory (about 12 bytes per entry, 24 MB per 1 TB of log at 32 KiB).
 */
export class SparseIndex {
  private readonly indexes: number[] = [];
  private readonly offsets: number[] = [];
  private lastOffset = Number.NEGATIVE_INFINITY;

  constructor(private readonly intervalBytes: number) {}

  /** An index restored from its entries (as `entries()` gave them): a sealed segment's, read from its index file. */
  static of(intervalBytes: number, indexes: readonly number[], offsets: readonly number[]): SparseIndex {
    const index = new SparseIndex(intervalBytes);
    for (const [i, n] of indexes.entries()) {
      index.indexes.push(n);
      index.offsets.push(offsets[i]!);
    }
    index.lastOffset = offsets.at(-1) ?? Number.NEGATIVE_INFINITY;
    return index;
  }

  /** Every entry, in order: what a sealed segment's index file holds. */
  entries(): { readonly indexes: readonly number[]; readonly offsets: readonly number[] } {
    return { indexes: this.indexes, offsets: this.offsets };
  }

  /** Offers the frame of `index` at byte `offset`; frames must be offered in order. */
  note(index: number, offset: number): void {
    if (offset - this.lastOffset < this.intervalBytes) return;
    this.indexes.push(index);
    this.offsets.push(offset);
    this.lastOffset = offset;
  }

  /** The nearest known frame at or before `index`, or undefined if none is known. */
  seek(index: number): { index: number; offset: number } | undefined {
    let lo = 0;
    let hi = this.indexes.length - 1;
    let found = -1;
    while (lo <= hi) {
      const mid = (lo + hi) >>> 1;
      if (this.indexes[mid]! <= index) {
        found = mid;
        lo = mid + 1;
      } else {
        hi = mid - 1;
      }
    }
    return found < 0 ? undefined : { index: this.indexes[found]!, offset: this.offsets[found]! };
  }

  get size(): number {
    return this.indexes.length;
  }
}
