import { createHash } from "node:crypto";
import { mkdir, open, readdir, readFile, rename, rm } from "node:fs/promises";
import { join } from "node:path";
import type { Logger } from "pino";
import { packPlain, unpackPlain } from "../codec/envelope-codec.ts";

export interface SnapshotData {
  /** Every record up to and including this index is reflected in the tables. */
  readonly index: number;
  readonly projections: readonly {
    readonly name: string;
    readonly version: number;
    readonly tables: readonly {
      readonly name: string;
      readonly index: number;
      readonly rows: readonly unknown[];
    }[];
  }[];
}

const MAGIC = Buffer.from("CHRONOMAD-SNAPSHOT-1\n");
/** Most rows in a frame; how many a frame takes is sized after the bytes the last one took. */
const ROWS_PER_FRAME = 2048;
/** Rows in a table's first frame, before its rows' size is known. */
const FIRST_FRAME_ROWS = 32;
/**
 * About how many bytes a row frame holds. Packing a frame runs without a
 * break on the event loop: 2,048 allocations (each with its job) were
 * megabytes, and held it for hundreds of milliseconds.
 */
const FRAME_BYTES = 256 * 1024;
const NAME = /^state-(\d{20})\.snapshot$/;

/** The file name of the snapshot at `index`: zero-padded so names sort by index. */
export const snapshotFileName = (index: number) => `state-${String(index).padStart(20, "0")}.snapshot`;

/**
 * The tables at some log indexes, one file per index in a directory; the
 * last `retain` are kept, so reads of the past ("state at index N") start
 * from a nearby snapshot instead of the first record. A snapshot is only a
 * cache of the log: a missing, damaged or stale one costs a longer replay,
 * never state. File layout: magic, then length-prefixed msgpack frames (a
 * header, row chunks per table), then a frame with the SHA-256 of all bytes
 * before it.
 */
export class SnapshotFile {
  constructor(
    readonly dir: string,
    private readonly logger: Logger,
    private readonly retain = 8,
  ) {}

  /** Indexes of the snapshots on disk, newest first. */
  async indexes(): Promise<number[]> {
    let names: string[];
    try {
      names = await readdir(this.dir);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ENOENT") return [];
      throw err;
    }
    return names
      .map((n) => NAME.exec(n)?.[1])
      .filter((n): n is string => n !== undefined)
      .map(Number)
      .sort((a, b) => b - a);
  }

  pathOf(index: number): string {
    return join(this.dir, snapshotFileName(index));
  }

  /** Writes atomically (temp file, fsync, rename, fsync of the directory), then prunes old ones. */
  async save(data: SnapshotData): Promise<void> {
    await mkdir(this.dir, { recursive: true });
    const final = this.pathOf(data.index);
    const tmp = `${final}.tmp`;
    const fh = await open(tmp, "w");
    const hash = createHash("sha256");
    try {
      const write = async (bytes: Uint8Array) => {
        hash.update(bytes);
        await fh.write(bytes);
      };
      await write(MAGIC);
      const header = {
        index: data.index,
        projections: data.projections.map((p) => ({
          name: p.name,
          version: p.version,
          tables: p.tables.map((t) => ({ name: t.name, index: t.index, count: t.rows.length })),
        })),
      };
      await write(frame(packPlain(header)));
      for (const p of data.projections) {
        for (const t of p.tables) {
          let rows = FIRST_FRAME_ROWS;
          for (let i = 0; i < t.rows.length; ) {
            const chunk = t.rows.slice(i, i + rows);
            const bytes = packPlain(chunk);
            await write(frame(bytes));
            i += chunk.length;
            rows = Math.max(
              1,
              Math.min(ROWS_PER_FRAME, Math.floor((chunk.length * FRAME_BYTES) / bytes.length)),
            );
          }
        }
      }
      await fh.write(frame(hash.digest()));
      await fh.datasync();
    } finally {
      await fh.close();
    }
    await rename(tmp, final);
    const dirHandle = await open(this.dir, "r");
    try {
      await dirHandle.sync();
    } finally {
      await dirHandle.close();
    }
    for (const old of (await this.indexes()).slice(this.retain)) await rm(this.pathOf(old), { force: true });
  }

  /**
   * The newest usable snapshot at or before `atOrBefore` (any index when not
   * given); damaged ones are skipped with a warning.
   */
  async load(atOrBefore = Number.POSITIVE_INFINITY): Promise<SnapshotData | undefined> {
    for (const index of await this.indexes()) {
      if (index > atOrBefore) continue;
      const path = this.pathOf(index);
      try {
        return decodeSnapshot(await readFile(path));
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === "ENOENT") continue;
        this.logger.warn({ path, reason: (err as Error).message }, "ignoring unusable snapshot");
      }
    }
    return undefined;
  }
}

/** What a snapshot file's header frame says: the index, and per projection its tables and their row counts. */
export interface SnapshotHeader {
  readonly index: number;
  readonly projections: readonly {
    readonly name: string;
    readonly version: number;
    readonly tables: readonly { readonly name: string; readonly index: number; readonly count: number }[];
  }[];
}

/** A snapshot file's frames, its checksum checked: the header, then the row frames (arrays of rows, by table). */
export function snapshotFrames(bytes: Buffer): { header: SnapshotHeader; rowFrames: Buffer[] } {
  if (!bytes.subarray(0, MAGIC.length).equals(MAGIC)) throw new Error("not a chronomad snapshot");
  const frames: { start: number; body: Buffer }[] = [];
  for (let at = MAGIC.length; at < bytes.length; ) {
    if (at + 4 > bytes.length) throw new Error(`truncated frame at byte ${at}`);
    const len = bytes.readUInt32LE(at);
    if (at + 4 + len > bytes.length) throw new Error(`truncated frame at byte ${at}`);
    frames.push({ start: at, body: bytes.subarray(at + 4, at + 4 + len) });
    at += 4 + len;
  }
  const trailer = frames.pop();
  if (!trailer) throw new Error("empty snapshot");
  const digest = createHash("sha256").update(bytes.subarray(0, trailer.start)).digest();
  if (!digest.equals(trailer.body)) throw new Error("checksum mismatch");
  const [headerFrame, ...rowFrames] = frames;
  if (!headerFrame) throw new Error("no header");
  return { header: unpackPlain(headerFrame.body) as SnapshotHeader, rowFrames: rowFrames.map((f) => f.body) };
}

/** Decodes and checks a snapshot file's bytes; throws if anything is off. */
export function decodeSnapshot(bytes: Buffer): SnapshotData {
  const { header, rowFrames } = snapshotFrames(bytes);
  let next = 0;
  const projections = header.projections.map((p) => ({
    name: p.name,
    version: p.version,
    tables: p.tables.map((t) => {
      const rows: unknown[] = [];
      while (rows.length < t.count) {
        const f = rowFrames[next++];
        if (!f) throw new Error(`table ${t.name}: rows missing`);
        for (const r of unpackPlain(f) as unknown[]) rows.push(r);
      }
      return { name: t.name, index: t.index, rows };
    }),
  }));
  return { index: header.index, projections };
}

function frame(body: Uint8Array): Buffer {
  const out = Buffer.allocUnsafe(4 + body.length);
  out.writeUInt32LE(body.length, 0);
  out.set(body, 4);
  return out;
}
