import { closeSync, fstatSync, ftruncateSync, openSync, readSync, writeSync } from "node:fs";
import { mkdir, readFile, rename, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { Logger } from "pino";
import type { HistoryEntry } from "../../projections/history.ts";
import { packPlain, unpackPlain } from "../codec/envelope-codec.ts";
import { frameChecksum } from "../log/file/format.ts";
import { loopTurn } from "../store/loop-turn.ts";
import {
  CHUNK_HEADER_SIZE,
  type ChunkHead,
  decodeChunk,
  decodeHead,
  encodeChunk,
  HistoryFileDamaged,
} from "./history-chunk.ts";

/**
 * Per-object history on disk instead of in the heap (issue 22a).
 *
 * One append-only file, `history.log`, holds chunks: the entries one log
 * record added to one object's history. Each chunk points back to the
 * previous chunk of the same object (its offset and length), so an object's
 * history is a chain read newest first, one `readSync` per chunk, and a
 * reverse page (or a page after a token) stops reading as soon as it has
 * what it needs. In memory: one small pointer per object (its last chunk,
 * how many entries it has in all, the last log index that added some).
 *
 * The file is derived data, a cache of the log like a snapshot: it is never
 * the source of truth, so it is not fsynced per chunk. `history.idx`
 * checkpoints the pointers, the file length they cover and the last log
 * index applied; opening reads the checkpoint and scans only the chunks
 * written after it. A chunk whose checksum fails at the tail, or chunks
 * after the last mark (a crash while writing), are cut off with a warning; anything worse makes `open` report
 * the file as unusable, and the caller rebuilds it from the log.
 *
 * Layout of `history.log`:
 *   header: magic "CMHISTRY", format version u32 LE, 4 bytes reserved
 *   chunks, back to back:
 *     0  payload length, u32 LE
 *     4  masked CRC-32C of the payload, u32 LE
 *     8  length of the payload's head, u32 LE
 *     12 payload: head (prevOffset f64, prevLength u32, index f64, count u32,
 *        key UTF-8), then the entries (history-chunk.ts)
 * `count` is the object's number of entries up to and including the chunk,
 * so a scan learns everything it needs from the small head alone. After
 * each applied batch of log records, a mark (a chunk with the empty key and
 * no entries, its index the batch's last) says the batch is whole: a scan
 * after a crash keeps the chunks up to the last mark and cuts the rest.
 */

const MAGIC = Buffer.from("CMHISTRY", "latin1");
// 2: job and volume keys carry their namespace (projections/history.ts historyKey):
// a file of version 1 is rebuilt from the log under the new keys.
// 3: entries of one record in the shared form (history-chunk.ts), half the
// CPU a chunk of format 2 took to encode: a file of version 2 is rebuilt too.
export const FORMAT_VERSION = 3;
const HEADER_SIZE = 16;
/** Chunks waiting to be written are flushed at this size (and after every applied batch). */
const FLUSH_BYTES = 256 * 1024;
/** How many bytes an open scan reads at a time (then yields the event loop). */
const SCAN_BYTES = 4 * 1024 * 1024;
const LOG_NAME = "history.log";
/**
 * How long encoding queued chunks may hold the event loop at a time. A
 * placement burst's plan record changes a thousand allocations, each change
 * a chunk: encoding them where they are applied was a sixth of applying the
 * record, in one step with it.
 */
const ENCODE_SLICE_MS = 4;
/**
 * The slice's least when the loop's iteration is spent (LoopTurn): a burst
 * queues thousands of chunks a second, and a queue that fell behind to
 * MAX_QUEUED would be encoded all at once.
 */
const ENCODE_MIN_MS = 1;
/** Chunks queued beyond this are encoded at once: the queue stays bounded if the loop never has a turn to spare. */
const MAX_QUEUED = 65_536;
/** The key of an applied mark: no object's key is empty. */
const MARK_KEY = "";
const INDEX_NAME = "history.idx";

/** Where an object's newest chunk is, and what its history holds in all. */
interface Pointer {
  offset: number;
  length: number;
  count: number;
}

/** A chunk (or, with the mark's key, a mark) not encoded yet. */
interface Queued {
  readonly key: string;
  readonly index: number;
  readonly entries: readonly HistoryEntry[];
}

/** One chunk read back: the entries one record added, and where the previous chunk is. */
export interface HistoryChunk {
  readonly index: number;
  /** Entries of the object before this chunk (the position of its first entry). */
  readonly before: number;
  readonly entries: readonly HistoryEntry[];
}

interface Checkpoint {
  readonly length: number;
  readonly applied: number;
  readonly keys: readonly string[];
  /** offset, length, count of each key, flattened (three numbers per key). */
  readonly pointers: readonly number[];
}

export class HistoryFile {
  private readonly pointers = new Map<string, Pointer>();
  /** Bytes on disk; chunks beyond it are still in `pending`. */
  private written = 0;
  private pending: Buffer[] = [];
  private pendingBytes = 0;
  private appliedIndex = 0;
  /**
   * Chunks and marks in the order they were fed, encoded a few milliseconds
   * at a time on turns of their own (the apply that fed them goes on). Every
   * read, checkpoint and flush encodes what is queued first, so they see
   * everything fed.
   */
  private queued: Queued[] = [];
  private queuedHead = 0;
  private encodeScheduled = false;
  /** The last index markApplied was given: records at or below it are skipped when fed again. */
  private accepted = 0;
  private checkpointed = 0;
  private closed = false;

  private constructor(
    readonly dir: string,
    private fd: number,
    private readonly logger: Logger,
  ) {}

  /**
   * Opens the history in `dir`, making it if missing. `rebuild` is true when
   * what was on disk could not be used (missing, damaged, another format):
   * the file is then empty and the caller feeds it every record from the
   * log's start; otherwise it feeds records after `appliedIndex` (records
   * at or below an object's newest chunk are skipped, so feeding a few
   * again is harmless).
   */
  static async open(dir: string, logger: Logger): Promise<{ file: HistoryFile; rebuild: boolean }> {
    await mkdir(dir, { recursive: true });
    const path = join(dir, LOG_NAME);
    const fd = openSync(path, "a+");
    const file = new HistoryFile(dir, fd, logger);
    let rebuild = false;
    try {
      rebuild = !(await file.load());
    } catch (err) {
      closeSync(fd);
      throw err;
    }
    if (rebuild) file.reset();
    file.accepted = file.appliedIndex;
    return { file, rebuild };
  }

  /** Every record up to this index has its entries in the file. */
  get applied(): number {
    this.settle();
    return this.appliedIndex;
  }

  /** Bytes appended since the last checkpoint (what the next open would scan); queued chunks not counted yet. */
  get bytesSinceCheckpoint(): number {
    return this.written + this.pendingBytes - this.checkpointed;
  }

  /** How many objects have a history. */
  get objects(): number {
    this.settle();
    return this.pointers.size;
  }

  /** How many entries the object's history holds (0: none). */
  count(key: string): number {
    this.settle();
    return this.pointers.get(key)?.count ?? 0;
  }

  /**
   * Adds the entries record `index` made for `key` (one record may change an
   * object several times: each change is a chunk). Records at or below the
   * applied index are in the file already (a catch-up feeding them again)
   * and are skipped.
   */
  append(key: string, index: number, entries: readonly HistoryEntry[]): void {
    if (entries.length === 0 || index <= this.accepted) return;
    this.enqueue({ key, index, entries });
  }

  /**
   * Records up to `index` are all in: said once per applied batch. A mark
   * goes in the file, so a scan after a crash keeps whole batches only.
   */
  markApplied(index: number): void {
    if (index <= this.accepted) return;
    this.accepted = index;
    this.enqueue({ key: MARK_KEY, index, entries: [] });
  }

  private enqueue(item: Queued): void {
    this.queued.push(item);
    if (this.queued.length - this.queuedHead >= MAX_QUEUED) this.settle();
    else if (!this.encodeScheduled) {
      this.encodeScheduled = true;
      setImmediate(this.encodeTurn);
    }
  }

  private readonly encodeTurn = (): void => {
    this.encodeScheduled = false;
    if (this.closed) return;
    // Within what is left of the loop's iteration (LoopTurn), at least
    // ENCODE_MIN_MS so the queue keeps moving when the others spent it.
    loopTurn.enterTurn();
    const now = performance.now();
    const deadline = now + Math.min(ENCODE_SLICE_MS, Math.max(ENCODE_MIN_MS, loopTurn.share(this)));
    for (let n = 1; this.queuedHead < this.queued.length; n++) {
      this.encodeNext();
      // A chunk takes a few microseconds: the clock is read every 16.
      if (n % 16 === 0 && performance.now() >= deadline) break;
    }
    if (this.queuedHead < this.queued.length) {
      this.encodeScheduled = true;
      loopTurn.deferred(this);
      setImmediate(this.encodeTurn);
    } else this.clearQueue();
  };

  /** Encodes everything queued, now. */
  private settle(): void {
    while (this.queuedHead < this.queued.length) this.encodeNext();
    this.clearQueue();
  }

  private clearQueue(): void {
    this.queued = [];
    this.queuedHead = 0;
  }

  private encodeNext(): void {
    const { key, index, entries } = this.queued[this.queuedHead]!;
    this.queued[this.queuedHead++] = SPENT;
    if (key === MARK_KEY) {
      this.write([MARK_KEY, -1, 0, index, 0], []);
      this.appliedIndex = index;
      this.writePending();
      return;
    }
    const last = this.pointers.get(key);
    const count = (last?.count ?? 0) + entries.length;
    const length = this.write([key, last?.offset ?? -1, last?.length ?? 0, index, count], entries);
    const offset = this.written + this.pendingBytes - length;
    if (last === undefined) this.pointers.set(key, { offset, length, count });
    else {
      last.offset = offset;
      last.length = length;
      last.count = count;
    }
    if (this.pendingBytes >= FLUSH_BYTES) this.writePending();
  }

  /** Queues one chunk; returns its length. */
  private write(head: ChunkHead, entries: readonly HistoryEntry[]): number {
    const chunk = encodeChunk(head, entries);
    this.pending.push(chunk);
    this.pendingBytes += chunk.length;
    return chunk.length;
  }

  /**
   * Rewrites the file with only the entries `keep` accepts (history_retention):
   * each object's kept entries as chunks of their own chain, then a mark of
   * the applied index; the new file replaces the old one by a rename. Only
   * before the file is fed (at open): nothing is appended meanwhile. Runs in
   * slices of a few milliseconds. The log is not touched: a rebuild brings
   * everything back.
   */
  async compact(
    keep: (entry: HistoryEntry) => boolean,
  ): Promise<{ readonly kept: number; readonly dropped: number }> {
    this.flush();
    const path = join(this.dir, LOG_NAME);
    const temp = join(this.dir, `${LOG_NAME}.compact`);
    const out = openSync(temp, "w");
    const header = Buffer.alloc(HEADER_SIZE);
    MAGIC.copy(header, 0);
    header.writeUInt32LE(FORMAT_VERSION, 8);
    const buffers: Buffer[] = [header];
    let size = HEADER_SIZE;
    let buffered = HEADER_SIZE;
    const put = (chunk: Buffer) => {
      buffers.push(chunk);
      size += chunk.length;
      buffered += chunk.length;
      if (buffered >= FLUSH_BYTES) {
        writeAll(out, Buffer.concat(buffers, buffered));
        buffers.length = 0;
        buffered = 0;
      }
    };
    const pointers = new Map<string, Pointer>();
    let kept = 0;
    let dropped = 0;
    let slice = performance.now();
    try {
      for (const key of this.pointers.keys()) {
        const chunks = [...this.chunksNewestFirst(key)].reverse();
        let last: Pointer | undefined;
        for (const c of chunks) {
          const entries = c.entries.filter(keep);
          dropped += c.entries.length - entries.length;
          if (entries.length === 0) continue;
          kept += entries.length;
          const count = (last?.count ?? 0) + entries.length;
          const chunk = encodeChunk([key, last?.offset ?? -1, last?.length ?? 0, c.index, count], entries);
          last = { offset: size, length: chunk.length, count };
          put(chunk);
        }
        if (last !== undefined) pointers.set(key, last);
        if (performance.now() - slice > 5) {
          await new Promise<void>((resolve) => setImmediate(resolve));
          slice = performance.now();
        }
      }
      put(encodeChunk([MARK_KEY, -1, 0, this.appliedIndex, 0], []));
      if (buffered > 0) writeAll(out, Buffer.concat(buffers, buffered));
    } finally {
      closeSync(out);
    }
    await rename(temp, path);
    closeSync(this.fd);
    this.fd = openSync(path, "a+");
    this.pointers.clear();
    for (const [key, p] of pointers) this.pointers.set(key, p);
    this.written = size;
    await this.checkpoint();
    return { kept, dropped };
  }

  /**
   * The object's chunks, newest first; stop iterating as soon as the page
   * is full, and the older chunks are never read.
   */
  *chunksNewestFirst(key: string): Generator<HistoryChunk> {
    this.settle();
    const last = this.pointers.get(key);
    if (last === undefined) return;
    let offset = last.offset;
    let length = last.length;
    let count = last.count;
    while (offset >= 0) {
      const bytes = this.readAt(offset, length);
      const { head, entries } = decodeChunk(bytes, offset);
      if (head[0] !== key || head[4] !== count) {
        throw new HistoryFileDamaged(`history chunk at ${offset} is not the one its successor names`);
      }
      const before = count - entries.length;
      yield { index: head[3], before, entries };
      offset = head[1];
      length = head[2];
      count = before;
    }
  }

  /** The whole history of one object, in log order (every chunk read). */
  entries(key: string): HistoryEntry[] {
    const chunks = [...this.chunksNewestFirst(key)];
    const all: HistoryEntry[] = [];
    for (let i = chunks.length - 1; i >= 0; i--) for (const e of chunks[i]!.entries) all.push(e);
    return all;
  }

  /** Encodes what is queued and writes what is pending; reads see both either way. */
  flush(): void {
    this.settle();
    this.writePending();
  }

  private writePending(): void {
    if (this.pendingBytes === 0) return;
    const bytes =
      this.pending.length === 1 ? this.pending[0]! : Buffer.concat(this.pending, this.pendingBytes);
    let done = 0;
    while (done < bytes.length) done += writeSync(this.fd, bytes, done, bytes.length - done);
    this.written += bytes.length;
    this.pending = [];
    this.pendingBytes = 0;
  }

  /**
   * Saves the pointers, so the next open scans only what comes after. Taken
   * with snapshots and at shutdown; its cost grows with the number of
   * objects, not of entries.
   */
  async checkpoint(): Promise<void> {
    this.flush();
    const keys: string[] = [];
    const pointers: number[] = [];
    for (const [key, p] of this.pointers) {
      keys.push(key);
      pointers.push(p.offset, p.length, p.count);
    }
    const data: Checkpoint = { length: this.written, applied: this.appliedIndex, keys, pointers };
    this.checkpointed = this.written;
    const body = packPlain(data);
    const framed = Buffer.allocUnsafe(8 + body.length);
    framed.set(body, 8);
    framed.writeUInt32LE(body.length, 0);
    framed.writeUInt32LE(frameChecksum(framed, 8), 4);
    const tmp = join(this.dir, `${INDEX_NAME}.tmp`);
    await writeFile(tmp, framed);
    await rename(tmp, join(this.dir, INDEX_NAME));
  }

  async close(): Promise<void> {
    if (this.closed) return;
    await this.checkpoint();
    this.closed = true;
    closeSync(this.fd);
  }

  private readAt(offset: number, length: number): Buffer {
    if (offset >= this.written) {
      // Still pending: find it among the buffers not yet written.
      let at = this.written;
      for (const b of this.pending) {
        if (offset < at + b.length) return b.subarray(offset - at, offset - at + length);
        at += b.length;
      }
      throw new HistoryFileDamaged(`history chunk at ${offset} is beyond the file`);
    }
    const bytes = Buffer.allocUnsafe(length);
    let done = 0;
    while (done < length) {
      const n = readSync(this.fd, bytes, done, length - done, offset + done);
      if (n === 0) throw new HistoryFileDamaged(`history chunk at ${offset} is cut short`);
      done += n;
    }
    return bytes;
  }

  /** Empties the file: the caller feeds it every record again (a rebuild). */
  reset(): void {
    ftruncateSync(this.fd, 0);
    const header = Buffer.alloc(HEADER_SIZE);
    MAGIC.copy(header, 0);
    header.writeUInt32LE(FORMAT_VERSION, 8);
    writeSync(this.fd, header, 0, header.length, 0);
    this.written = HEADER_SIZE;
    this.checkpointed = 0;
    this.pointers.clear();
    this.pending = [];
    this.pendingBytes = 0;
    this.appliedIndex = 0;
    this.accepted = 0;
    this.clearQueue();
  }

  /** Reads the checkpoint and scans after it; false when the file cannot be used. */
  private async load(): Promise<boolean> {
    const size = fstatSync(this.fd).size;
    if (size === 0) {
      this.logger.info({ dir: this.dir }, "history file missing: building it from the log");
      return false;
    }
    const header = Buffer.alloc(HEADER_SIZE);
    readSync(this.fd, header, 0, HEADER_SIZE, 0);
    if (!header.subarray(0, 8).equals(MAGIC) || header.readUInt32LE(8) !== FORMAT_VERSION) {
      this.logger.warn(
        { dir: this.dir },
        "history file is not one this version writes: rebuilding it from the log",
      );
      return false;
    }
    const checkpoint = await this.readCheckpoint(size);
    let from = HEADER_SIZE;
    if (checkpoint !== undefined) {
      for (let i = 0; i < checkpoint.keys.length; i++) {
        const p = checkpoint.pointers;
        this.pointers.set(checkpoint.keys[i]!, {
          offset: p[3 * i]!,
          length: p[3 * i + 1]!,
          count: p[3 * i + 2]!,
        });
      }
      this.appliedIndex = checkpoint.applied;
      from = checkpoint.length;
    } else {
      this.logger.warn({ dir: this.dir }, "history index missing or damaged: scanning the history file");
    }
    this.written = from;
    const scanned = await this.scan(from, size);
    if (scanned === undefined) return false;
    if (scanned < size) {
      this.logger.warn(
        { dir: this.dir, kept: scanned, size },
        "history file ends with a partial chunk (a crash while writing): cut off",
      );
      ftruncateSync(this.fd, scanned);
    }
    this.written = scanned;
    this.checkpointed = from;
    return true;
  }

  private async readCheckpoint(size: number): Promise<Checkpoint | undefined> {
    let bytes: Buffer;
    try {
      bytes = await readFile(join(this.dir, INDEX_NAME));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ENOENT") return undefined;
      throw err;
    }
    if (bytes.length < 8 || bytes.readUInt32LE(0) !== bytes.length - 8) return undefined;
    if (bytes.readUInt32LE(4) !== frameChecksum(bytes, 8)) return undefined;
    const data = unpackPlain(bytes.subarray(8)) as Checkpoint;
    // A checkpoint of more than the file holds belongs to another file.
    if (data.length > size || data.length < HEADER_SIZE) return undefined;
    return data;
  }

  /**
   * Follows the chunks from `from` to the end, taking each one's pointer as
   * of the last applied mark: chunks after it belong to a batch whose end
   * was never written, and are cut off with the torn tail. Returns where the
   * kept chunks end, or undefined when a chunk before the tail is damaged.
   */
  private async scan(from: number, size: number): Promise<number | undefined> {
    let at = from;
    let kept = from;
    const started = Date.now();
    /** Pointers of the chunks since the last mark: taken when the next mark says their batch is whole. */
    const staged: [string, Pointer][] = [];
    const take = (head: ChunkHead, offset: number, length: number) => {
      if (head[0] === MARK_KEY) {
        for (const [key, p] of staged) this.pointers.set(key, p);
        staged.length = 0;
        this.appliedIndex = head[3];
        kept = offset + length;
      } else staged.push([head[0], { offset, length, count: head[4] }]);
    };
    while (at < size) {
      const want = Math.min(SCAN_BYTES, size - at);
      const buf = Buffer.allocUnsafe(want);
      const got = readSync(this.fd, buf, 0, want, at);
      let pos = 0;
      while (pos + CHUNK_HEADER_SIZE <= got) {
        const length = buf.readUInt32LE(pos);
        const end = pos + CHUNK_HEADER_SIZE + length;
        if (end > got) break;
        if (buf.readUInt32LE(pos + 4) !== frameChecksum(buf, pos + CHUNK_HEADER_SIZE, end)) {
          // Damage at the very end is a torn write; anywhere else the file cannot be trusted.
          if (at + end >= size) return kept;
          this.logger.warn(
            { dir: this.dir, offset: at + pos },
            "history file damaged: rebuilding it from the log",
          );
          return undefined;
        }
        const headLength = buf.readUInt32LE(pos + 8);
        const head = decodeHead(buf, pos + CHUNK_HEADER_SIZE, pos + CHUNK_HEADER_SIZE + headLength);
        take(head, at + pos, CHUNK_HEADER_SIZE + length);
        pos = end;
      }
      if (pos === 0) {
        // A chunk larger than the scan window, or a header cut short at the end.
        const length = got >= CHUNK_HEADER_SIZE ? buf.readUInt32LE(0) : Number.POSITIVE_INFINITY;
        if (at + CHUNK_HEADER_SIZE + length > size) break;
        const whole = Buffer.allocUnsafe(CHUNK_HEADER_SIZE + length);
        readSync(this.fd, whole, 0, whole.length, at);
        take(decodeChunk(whole, at).head, at, whole.length);
        pos = whole.length;
      }
      at += pos;
      // Let the loop breathe between windows.
      await new Promise<void>((resolve) => setImmediate(resolve));
    }
    if (kept > from) {
      this.logger.info(
        { dir: this.dir, bytes: kept - from, ms: Date.now() - started },
        "history file: caught up with the chunks written after its index",
      );
    }
    return kept;
  }
}

const SPENT: Queued = { key: MARK_KEY, index: 0, entries: [] };

function writeAll(fd: number, bytes: Buffer): void {
  let done = 0;
  while (done < bytes.length) done += writeSync(fd, bytes, done, bytes.length - done);
}

/** Removes a history file and its index (tests, and `--rebuild-history`). */
export async function removeHistoryFile(dir: string): Promise<void> {
  await rm(join(dir, LOG_NAME), { force: true });
  await rm(join(dir, INDEX_NAME), { force: true });
}
