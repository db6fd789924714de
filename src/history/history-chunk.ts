import { Packr } from "msgpackr";
import type { HistoryEntry } from "../../projections/history.ts";
import type { Actor } from "../../streams/event-schema.ts";
import { plainOptions } from "../codec/envelope-codec.ts";
import { frameChecksum } from "../log/file/format.ts";

/**
 * One chunk of `history.log` (history-file.ts has the file's layout):
 *   0  payload length, u32 LE
 *   4  masked CRC-32C of the payload, u32 LE
 *   8  length of the payload's head, u32 LE
 *   12 payload: head (prevOffset f64, prevLength u32, index f64, count u32,
 *      key UTF-8), then the entries' body
 *
 * The body is one plain msgpack array, in one of two forms, told apart by
 * its first item:
 * - shared, when every entry has the first one's Index, Time, Cause and
 *   Actor (the same objects: the projection makes one Cause and Actor per
 *   record, or per run of one node's allocations), which is every chunk of
 *   a load run: `[[Time, Cause, Actor], [Index, Field₁, From₁, To₁,
 *   Field₂, …]]`. No key is written per entry, and Cause and Actor once
 *   per chunk, not once per entry;
 * - entries: the array of entry maps, as format 2 wrote it, for anything
 *   else (a job's Version entry with its Diff, a mark's empty list,
 *   entries of several records). An entry is a map, never an array.
 * `[Time, Cause, Actor]` is the same for every chunk of one record (a plan
 * record's thousand allocations): its bytes are kept from one chunk to the
 * next while the objects are the same.
 *
 * Unlike the log, integers past 32 bits are left as msgpackr writes them
 * (float64, wide-integers.ts): the file is read by chronomad alone, and
 * the numbers read back are the same.
 */
export const CHUNK_HEADER_SIZE = 12;

/** A chunk that is not what it claims: the file must be rebuilt from the log. */
export class HistoryFileDamaged extends Error {
  constructor(message: string) {
    super(message);
    this.name = "HistoryFileDamaged";
  }
}

/** [key, prevOffset, prevLength, index, count] */
export type ChunkHead = [string, number, number, number, number];

const packr = new Packr(plainOptions);

/**
 * The shared form's first item, kept while chunks come from one record:
 * packing it once for a plan record's thousand chunks rather than a
 * thousand times. Keyed by the objects themselves, which are never changed
 * once an entry holds them.
 */
let common: { time: string; cause: object; actor: Actor; bytes: Buffer } | undefined;

function commonBytes(e: HistoryEntry): Buffer {
  if (
    common === undefined ||
    common.time !== e.Time ||
    common.cause !== e.Cause ||
    common.actor !== e.Actor
  ) {
    // A copy: packr's output is a view of its buffer, reused by the next pack.
    const bytes = Buffer.from(packr.pack([e.Time, e.Cause, e.Actor]));
    common = { time: e.Time, cause: e.Cause, actor: e.Actor, bytes };
  }
  return common.bytes;
}

/** Whether the entries fit the shared form: all of one record, no Diff, no value left undefined. */
function shared(entries: readonly HistoryEntry[]): boolean {
  if (entries.length === 0) return false;
  const first = entries[0]!;
  for (const e of entries) {
    if (
      e.Index !== first.Index ||
      e.Time !== first.Time ||
      e.Cause !== first.Cause ||
      e.Actor !== first.Actor
    )
      return false;
    if (e.Diff !== undefined || e.From === undefined || e.To === undefined) return false;
  }
  return true;
}

/**
 * One chunk: its header, its head, its entries. Written straight into the
 * one buffer it needs (one per audited change of a burst): no head or key
 * buffer of its own to allocate and copy.
 */
export function encodeChunk(
  [key, prevOffset, prevLength, index, count]: ChunkHead,
  entries: readonly HistoryEntry[],
): Buffer {
  let first: Buffer | undefined;
  let body: Uint8Array;
  if (shared(entries)) {
    first = commonBytes(entries[0]!);
    const fields: unknown[] = [entries[0]!.Index];
    for (const e of entries) fields.push(e.Field, e.From, e.To);
    body = packr.pack(fields);
  } else body = packr.pack(entries);
  // The shared form's array header (fixarray of 2), then its two items.
  const firstLength = first === undefined ? 0 : 1 + first.length;
  const headLength = HEAD_FIXED + Buffer.byteLength(key, "utf8");
  const chunk = Buffer.allocUnsafe(CHUNK_HEADER_SIZE + headLength + firstLength + body.length);
  const h = CHUNK_HEADER_SIZE;
  chunk.writeDoubleLE(prevOffset, h);
  chunk.writeUInt32LE(prevLength, h + 8);
  chunk.writeDoubleLE(index, h + 12);
  chunk.writeUInt32LE(count, h + 20);
  chunk.write(key, h + HEAD_FIXED, "utf8");
  if (first !== undefined) {
    chunk[h + headLength] = 0x92;
    chunk.set(first, h + headLength + 1);
  }
  chunk.set(body, h + headLength + firstLength);
  chunk.writeUInt32LE(headLength + firstLength + body.length, 0);
  chunk.writeUInt32LE(frameChecksum(chunk, CHUNK_HEADER_SIZE), 4);
  chunk.writeUInt32LE(headLength, 8);
  return chunk;
}

/**
 * Fixed fields of a head, before its key. A head is fixed binary fields
 * (prevOffset f64, prevLength u32, index f64, count u32, then the key in
 * UTF-8): every read and scan decodes one per chunk, and this costs next to
 * nothing next to a msgpack decode.
 */
const HEAD_FIXED = 24;

export function decodeHead(bytes: Buffer, start: number, end: number): ChunkHead {
  if (end - start < HEAD_FIXED || end > bytes.length)
    throw new HistoryFileDamaged("history chunk head is cut short");
  return [
    bytes.toString("utf8", start + HEAD_FIXED, end),
    bytes.readDoubleLE(start),
    bytes.readUInt32LE(start + 8),
    bytes.readDoubleLE(start + 12),
    bytes.readUInt32LE(start + 20),
  ];
}

export function decodeChunk(bytes: Buffer, offset: number): { head: ChunkHead; entries: HistoryEntry[] } {
  if (bytes.length < CHUNK_HEADER_SIZE || bytes.readUInt32LE(0) !== bytes.length - CHUNK_HEADER_SIZE) {
    throw new HistoryFileDamaged(`history chunk at ${offset} has the wrong length`);
  }
  if (bytes.readUInt32LE(4) !== frameChecksum(bytes, CHUNK_HEADER_SIZE)) {
    throw new HistoryFileDamaged(`history chunk at ${offset} fails its checksum`);
  }
  const headLength = bytes.readUInt32LE(8);
  const head = decodeHead(bytes, CHUNK_HEADER_SIZE, CHUNK_HEADER_SIZE + headLength);
  const body = packr.unpack(bytes.subarray(CHUNK_HEADER_SIZE + headLength)) as unknown[];
  if (!Array.isArray(body)) throw new HistoryFileDamaged(`history chunk at ${offset} holds no entries`);
  return { head, entries: Array.isArray(body[0]) ? sharedEntries(body, offset) : (body as HistoryEntry[]) };
}

/** The entries of a body in the shared form: each its own object, Cause and Actor the chunk's (as the projection made them). */
function sharedEntries(items: readonly unknown[], offset: number): HistoryEntry[] {
  const [first, fields] = items as [unknown, unknown];
  if (items.length !== 2 || !Array.isArray(first) || !Array.isArray(fields) || fields.length % 3 !== 1) {
    throw new HistoryFileDamaged(`history chunk at ${offset} holds no entries`);
  }
  const [Time, Cause, Actor] = first as [string, HistoryEntry["Cause"], Actor];
  const Index = fields[0] as number;
  const entries: HistoryEntry[] = [];
  for (let i = 1; i < fields.length; i += 3) {
    entries.push({
      Index,
      Time,
      Field: fields[i] as string,
      From: fields[i + 1],
      To: fields[i + 2],
      Cause,
      Actor,
    });
  }
  return entries;
}
