import type { FileHandle } from "node:fs/promises";
import { LogError } from "../event-log.ts";

/** Called for every read a log makes from a segment; lets tests see which bytes were touched. */
export type ReadObserver = (path: string, offset: number, length: number) => void;

const EMPTY = Buffer.alloc(0);

/**
 * Sequential positional reads over one file in large chunks, so that walking
 * many small frames costs one read per chunk instead of one per frame.
 *
 * Every chunk is a fresh buffer that is never written again, so callers may
 * hand out views into it (records keep their chunk alive, not a shared pool).
 */
export class ChunkedFile {
  private buf: Buffer = EMPTY;
  private base = 0;

  constructor(
    private readonly fh: FileHandle,
    readonly path: string,
    /** Bytes past this offset are never read (the durable end, or the size seen at scan time). */
    private readonly limit: number,
    private readonly chunkBytes: number,
    private readonly observe?: ReadObserver,
  ) {}

  /**
   * The chunk holding bytes [pos, pos + n) if it is already in memory. Hot
   * loops try this first: awaiting even a resolved value costs a microtask
   * turn per frame, which dominates when frames are small.
   */
  peek(pos: number, n: number): Buffer | undefined {
    return pos >= this.base && pos + n <= this.base + this.buf.length ? this.buf : undefined;
  }

  /**
   * Makes bytes [pos, pos + n) available and returns the chunk holding them;
   * byte `pos` is at `pos - chunkStart()` in it.
   */
  async at(pos: number, n: number): Promise<Buffer> {
    if (pos >= this.base && pos + n <= this.base + this.buf.length) return this.buf;
    if (pos + n > this.limit) {
      throw new LogError(`read past the end of ${this.path} (offset ${pos}, ${n} bytes)`, "range");
    }
    const length = Math.max(n, Math.min(this.chunkBytes, this.limit - pos));
    const buf = Buffer.allocUnsafe(length);
    let got = 0;
    while (got < length) {
      const { bytesRead } = await this.fh.read(buf, got, length - got, pos + got);
      if (bytesRead === 0) {
        throw new LogError(
          `${this.path} ended at byte offset ${pos + got}, expected ${length - got} more bytes`,
          "io",
        );
      }
      got += bytesRead;
    }
    this.observe?.(this.path, pos, length);
    this.buf = buf;
    this.base = pos;
    return buf;
  }

  chunkStart(): number {
    return this.base;
  }
}
