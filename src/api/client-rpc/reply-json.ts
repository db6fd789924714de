import { SignedAlloc } from "../../identity/alloc-identities.ts";

/**
 * A client RPC's reply as JSON, each allocation written out field by field
 * so that what several allocations share is serialized once. Alloc.GetAllocs
 * answers with whole allocations, each carrying its job (Nomad's client runs
 * what the job says); the allocations of one job version share one job row,
 * and those of one task group version share their resource objects
 * (projections/resources.ts groupAllocation): at 5,000 nodes a placement
 * burst serialized the same few jobs fifty thousand times, half of every
 * reply's bytes. Rows are never changed once stored, so the text of a shared
 * object stays right for as long as the object lives. An allocation's own
 * objects (its Metrics, its TaskStates) are written as they are walked, not
 * made a string first: a reply allocates next to nothing on the V8 heap.
 *
 * The text is byte for byte what JSON.stringify gives for the same
 * allocation with its job moved last (and SignedIdentities, when it has
 * some, just before it).
 */
export function clientReplyJson(body: Readonly<Record<string, unknown>>): string | Buffer {
  const allocs = body.Allocs;
  if (!Array.isArray(allocs)) return JSON.stringify(body);
  begin();
  writeAscii('{"Allocs":[');
  for (let i = 0; i < allocs.length; i++) {
    if (i > 0) byte(COMMA);
    allocJson(allocs[i]);
  }
  byte(CLOSE_BRACKET);
  for (const [field, value] of Object.entries(body)) {
    if (field === "Allocs" || value === undefined) continue;
    byte(COMMA);
    writeText(JSON.stringify(field));
    byte(COLON);
    writeText(JSON.stringify(value));
  }
  byte(CLOSE_BRACE);
  // Outside the V8 heap, and sent as it is: a string would be flattened to
  // count its bytes, then again joined with the response head.
  lastReplySize = pos - start;
  slab.replies++;
  return scratch.subarray(start, pos);
}

/**
 * Says that a reply `clientReplyJson` gave is written and its bytes no
 * longer needed (the response's `finish`: the socket took them). Once its
 * slab is full and every reply in it is written, the slab is used again for
 * new replies instead of a new one allocated. A reply never released (its
 * socket closed first, or a caller that keeps it) keeps its slab from
 * reuse: the slab is left to the GC as before. Each reply once only.
 */
export function replyWritten(reply: Buffer): void {
  const of = slabs.get(reply.buffer);
  if (of === undefined || of.replies <= 0) return;
  of.replies--;
  if (of.replies === 0 && of !== slab) reuse(reply.buffer);
}

/**
 * Replies are written one after the other into a slab, each answered as a
 * view of its own bytes in it: no copy of the reply and no memory allocated
 * per reply (copying it out of a reused buffer, into memory allocated at its
 * size, was a tenth of the time a reply took). A slab is never written
 * again where a reply was until every reply in it is said written, so a
 * reply still queued on its socket stays as it was; the slab is then used
 * again, or freed with the last of its replies. A reply that outgrows the
 * slab's rest moves, the part written, to a new slab.
 *
 * A reply starts a new slab when the rest is smaller than the last reply:
 * it would most likely move. A slab lives as long as any reply in it: a
 * client that stops reading, its replies queued on its socket, keeps a slab
 * (128 KiB) alive per reply at most, where it kept the reply's own bytes;
 * a reply written whole by its first write (most, to a reading client) is
 * kept by nothing.
 */
let scratch: Buffer = Buffer.allocUnsafeSlow(0);
/** Where the reply being written starts in the slab. */
let start = 0;
let pos = 0;
let lastReplySize = 0;
const SLAB_SIZE = 128 * 1024;

/**
 * Slabs are used again, not only allocated: V8 runs a scavenge whenever
 * the young generation's ArrayBuffers reach 32 MB (twice its semi-space),
 * whatever the heap, and a burst's pulls reply 100 MB and more. A slab
 * the writing has moved on from, whose replies are all said written
 * (`replyWritten`), is kept in `freeSlabs` and written again from its
 * start: a kept slab is old, its bytes counted once.
 */
class Slab {
  /** Replies given out from it and not yet said written. */
  replies = 0;
}

/**
 * The count of each slab's memory. A count never refers to its memory: a
 * WeakMap value that did would keep its key alive through every scavenge
 * (they treat the values of young keys as live) until a full GC, and the
 * slabs of replies never said written with it.
 */
const slabs = new WeakMap<ArrayBufferLike, Slab>();
let slab = new Slab();
const freeSlabs: ArrayBuffer[] = [];
/** Slabs kept for reuse at most (1 MiB): more are in use only while many replies wait on their sockets. */
const FREE_SLABS_KEPT = 8;

/** Where the next reply starts (past what a reply that threw left, too). */
function begin(): void {
  start = pos;
  if (scratch.length - pos >= Math.min(Math.max(lastReplySize, MIN_REST), SLAB_SIZE)) return;
  nextSlab(SLAB_SIZE);
  start = pos = 0;
}

const MIN_REST = 4096;

/** A new slab, with the part of the reply written so far and room for `more`. */
function newSlab(more: number): void {
  const kept = pos - start;
  const from = scratch;
  const at = start;
  nextSlab(Math.max(SLAB_SIZE, (kept + more) * 2));
  from.copy(scratch, 0, at, at + kept);
  start = 0;
  pos = kept;
}

/** Writes on in a slab of `size` bytes at least: a free one if that is big enough, else a new one. */
function nextSlab(size: number): void {
  const done = slab;
  const doneMemory = scratch.buffer;
  if (size <= SLAB_SIZE && freeSlabs.length > 0) scratch = Buffer.from(freeSlabs.pop()!);
  else {
    scratch = Buffer.allocUnsafeSlow(size);
    slabsMade++;
  }
  slab = slabs.get(scratch.buffer) ?? new Slab();
  slabs.set(scratch.buffer, slab);
  if (done.replies === 0) reuse(doneMemory);
}

let slabsMade = 0;

/** Slabs allocated so far (tests and figures: how many were not used again). */
export function replySlabsMade(): number {
  return slabsMade;
}

/** Keeps a slab that no reply needs any more, and the writing has left, for the next. */
function reuse(memory: ArrayBufferLike): void {
  if (memory.byteLength === SLAB_SIZE && freeSlabs.length < FREE_SLABS_KEPT && memory instanceof ArrayBuffer)
    freeSlabs.push(memory);
}

const QUOTE = 0x22;
const COMMA = 0x2c;
const COLON = 0x3a;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;

function ensure(more: number): void {
  if (pos + more <= scratch.length) return;
  newSlab(more);
}

function byte(b: number): void {
  ensure(1);
  scratch[pos++] = b;
}

/** Any text, as UTF-8 (a UTF-16 unit is at most three bytes). */
function writeText(text: string): void {
  const length = text.length;
  ensure(length * 3);
  // Most values are short ASCII (IDs, names, statuses): copied here, as a
  // call into Buffer's native write costs more than the copy itself.
  if (length <= SHORT_TEXT) {
    let i = 0;
    for (; i < length; i++) {
      const unit = text.charCodeAt(i);
      if (unit >= 0x80) break;
      scratch[pos + i] = unit;
    }
    if (i === length) {
      pos += length;
      return;
    }
  }
  pos += scratch.write(text, pos);
}

const SHORT_TEXT = 64;

/**
 * A text known to be ASCII: numbers' texts and the few literals, copied
 * here (Buffer's native latin1 write and its checks cost more, for a few
 * bytes, than the copy).
 */
function writeAscii(text: string): void {
  const length = text.length;
  ensure(length);
  const out = scratch;
  const at = pos;
  for (let i = 0; i < length; i++) out[at + i] = text.charCodeAt(i);
  pos = at + length;
}

/**
 * A string value, quoted, when it is short ASCII that JSON writes as it is
 * (no quote, backslash or control character): checked while it is copied.
 * Returns false, having written nothing, for any other.
 */
function writeShortString(value: string): boolean {
  const length = value.length;
  if (length > SHORT_TEXT) return false;
  ensure(length + 2);
  const out = scratch;
  const at = pos + 1;
  for (let i = 0; i < length; i++) {
    const unit = value.charCodeAt(i);
    if (unit < 0x20 || unit >= 0x80 || unit === QUOTE || unit === BACKSLASH) return false;
    out[at + i] = unit;
  }
  out[at - 1] = QUOTE;
  out[at + length] = QUOTE;
  pos = at + length + 1;
  return true;
}

const BACKSLASH = 0x5c;

function writeBytes(bytes: Uint8Array): void {
  const length = bytes.length;
  ensure(length);
  const out = scratch;
  const at = pos;
  if (length <= SHORT_TEXT) for (let i = 0; i < length; i++) out[at + i] = bytes[i]!;
  else out.set(bytes, at);
  pos = at + length;
}

/** The decimal digits of a non-negative safe integer, as JSON.stringify writes them (−0 as 0), without a string. */
function writeUint(n: number): void {
  let digits = 1;
  for (let rest = n; rest >= 10; rest = Math.floor(rest / 10)) digits++;
  ensure(digits);
  let at = pos + digits;
  pos = at;
  do {
    scratch[--at] = 0x30 + (n % 10);
    n = Math.floor(n / 10);
  } while (n > 0);
}

/** Texts of jobs and of resource objects by object: each met again is shared by allocations. */
const sharedTexts = new WeakMap<object, Buffer | typeof SEEN_ONCE>();
const SEEN_ONCE = 0;

/**
 * The fields whose objects are shared by many allocations: a text is kept for
 * those only, and only once an object is met a second time (an allocation
 * that reserved ports has resource objects of its own, which no other
 * allocation will ask for).
 */
const SHARED_FIELDS: ReadonlySet<string> = new Set([
  "Resources",
  "SharedResources",
  "TaskResources",
  "AllocatedResources",
]);

function allocJson(alloc: unknown): void {
  if (alloc instanceof SignedAlloc) rowJson(alloc.row, alloc.identities);
  else if (alloc === null || typeof alloc !== "object" || Array.isArray(alloc)) {
    // Inside an array JSON.stringify writes null for what it leaves out elsewhere.
    writeText(JSON.stringify(alloc) ?? "null");
  } else rowJson(alloc, undefined);
}

function rowJson(alloc: object, identities: object | undefined): void {
  const row = alloc as Readonly<Record<string, unknown>>;
  // An object that serializes itself is left to JSON.stringify (rows are plain data and never do).
  if (typeof row.toJSON === "function") {
    writeText(JSON.stringify(identities === undefined ? row : { ...row, SignedIdentities: identities }));
    return;
  }
  const job = row.Job;
  const jobLast = job !== null && typeof job === "object";
  byte(OPEN_BRACE);
  // Whether a field was written (a comma goes before the next).
  let any = false;
  let identitiesOut = identities === undefined;
  let at = 0;
  // for…in walks the row's own fields in Object.keys order (a row inherits
  // none) from its hidden class's cached keys, without an array per row.
  for (const field in row) {
    const i = at++;
    if (field === "Job" && jobLast) continue;
    if (field === "SignedIdentities" && identities !== undefined) {
      if (any) byte(COMMA);
      writeBytes(fieldName(field));
      ownObjectJson(identities);
      identitiesOut = any = true;
      continue;
    }
    const value = row[field];
    // What JSON.stringify leaves out of an object.
    if (value === undefined || typeof value === "function" || typeof value === "symbol") continue;
    if (shapeFields[i] === field) {
      writeBytes(any ? shapeCommaNames[i]! : shapeNames[i]!);
      any = true;
      valueJson(value, shapeShared[i]!);
      continue;
    }
    if (any) byte(COMMA);
    any = true;
    const name = fieldName(field);
    const shared = SHARED_FIELDS.has(field);
    if (i < FIELD_NAMES_KEPT) {
      shapeFields[i] = field;
      shapeNames[i] = name;
      shapeCommaNames[i] = Buffer.concat([COMMA_BYTES, name]);
      shapeShared[i] = shared;
    }
    writeBytes(name);
    valueJson(value, shared);
  }
  if (!identitiesOut && identities !== undefined) {
    if (any) byte(COMMA);
    writeAscii('"SignedIdentities":');
    // Task name → JWT, written as walked: a JSON.stringify text of it (a
    // JWT's 400 bytes and more) was made for each pull, then copied in.
    ownObjectJson(identities);
    any = true;
  }
  if (jobLast) {
    if (any) byte(COMMA);
    writeAscii('"Job":');
    writeBytes(sharedText(job, true));
  }
  byte(CLOSE_BRACE);
}

/**
 * The fields of the rows last written, by position, with their `"Field":`
 * bytes (and `,"Field":`) and whether their objects are shared: rows have one shape, so a
 * field is known by comparing its name with the one kept at its position
 * (names are interned: most often the same string), not by two lookups.
 */
const shapeFields: string[] = [];
const shapeNames: Buffer[] = [];
/** The same, after a comma. */
const shapeCommaNames: Buffer[] = [];
const COMMA_BYTES = Buffer.from(",");
const shapeShared: boolean[] = [];

/**
 * A string that JSON.stringify writes as it is between quotes: nothing to
 * escape (quotes, backslashes, control characters) and no surrogate (a lone
 * one is escaped; pairs are left to JSON.stringify too).
 */
// biome-ignore lint/suspicious/noControlCharactersInRegex: the control characters JSON escapes are what it looks for.
const NEEDS_ESCAPE = /["\\\u0000-\u001f\ud800-\udfff]/;

/** JSON.stringify(value) for one field's value (one it does not leave out). */
function valueJson(value: unknown, shared: boolean): void {
  switch (typeof value) {
    case "string":
      if (writeShortString(value)) break;
      if (NEEDS_ESCAPE.test(value)) writeText(JSON.stringify(value));
      else {
        byte(QUOTE);
        writeText(value);
        byte(QUOTE);
      }
      break;
    case "number":
      if (Number.isSafeInteger(value) && value >= 0) writeUint(value);
      else writeAscii(numberText(value));
      break;
    case "boolean":
      writeAscii(value ? "true" : "false");
      break;
    case "object":
      if (value === null) writeAscii("null");
      else if (shared) writeBytes(sharedText(value, false));
      else ownObjectJson(value);
      break;
    default:
      // A bigint: JSON.stringify throws, as it did.
      writeText(JSON.stringify(value));
  }
}

/**
 * JSON.stringify(value) for an object of one allocation's own (a
 * placement's Metrics, a running one's TaskStates), written here as it is
 * walked: JSON.stringify made a string of it (a placement's Metrics, 400
 * bytes, was a third of its row's time), copied into the reply by a native
 * call. Anything but plain data (a prototype of its own, toJSON, a bigint,
 * nesting past MAX_DEPTH) is left to JSON.stringify, from where it began.
 */
function ownObjectJson(value: object): void {
  // Relative to the reply's start: a reply that outgrows its slab moves.
  const from = pos - start;
  if (plainJson(value, 0)) return;
  pos = start + from;
  writeText(JSON.stringify(value));
}

const MAX_DEPTH = 32;

/** Writes a plain object or array as JSON.stringify does; false, part of it written, for anything else. */
function plainJson(value: object, depth: number): boolean {
  if (depth > MAX_DEPTH || typeof (value as { toJSON?: unknown }).toJSON === "function") return false;
  if (Array.isArray(value)) {
    byte(OPEN_BRACKET);
    for (let i = 0; i < value.length; i++) {
      if (i > 0) byte(COMMA);
      const item: unknown = value[i];
      // What JSON.stringify writes as null in an array.
      if (item === undefined || typeof item === "function" || typeof item === "symbol") writeAscii("null");
      else if (!plainItemJson(item, depth)) return false;
    }
    byte(CLOSE_BRACKET);
    return true;
  }
  const proto: unknown = Object.getPrototypeOf(value);
  if (proto !== Object.prototype && proto !== null) return false;
  const fields = value as Readonly<Record<string, unknown>>;
  byte(OPEN_BRACE);
  let any = false;
  // Own keys in Object.keys order, as JSON.stringify's (nothing inherited: the prototype is Object's or none).
  for (const key in fields) {
    const item = fields[key];
    if (item === undefined || typeof item === "function" || typeof item === "symbol") continue;
    if (any) byte(COMMA);
    any = true;
    if (!writeShortString(key)) writeText(JSON.stringify(key));
    byte(COLON);
    if (!plainItemJson(item, depth)) return false;
  }
  byte(CLOSE_BRACE);
  return true;
}

function plainItemJson(item: unknown, depth: number): boolean {
  if (typeof item === "object") {
    if (item === null) writeAscii("null");
    else return plainJson(item, depth + 1);
  } else if (typeof item === "bigint") return false;
  else valueJson(item, false);
  return true;
}

/**
 * What JSON.stringify writes for a number that is not a safe non-negative
 * integer: its own text, null if not finite. The last one's text is kept:
 * a placement's CreateTime and ModifyTime (nanoseconds, past 2^53) are one
 * number, the same for every placement of its plan.
 */
function numberText(value: number): string {
  if (value === lastNumber) return lastNumberText;
  const text = Number.isFinite(value) ? String(value) : "null";
  lastNumber = value;
  lastNumberText = text;
  return text;
}

let lastNumber = Number.NaN;
let lastNumberText = "null";

/**
 * The bytes of an object other allocations share, kept from the first time
 * it is met when `surely` (a job row: every allocation of its version has
 * it), from the second otherwise.
 */
function sharedText(value: object, surely: boolean): Buffer {
  const kept = sharedTexts.get(value);
  if (kept instanceof Buffer) return kept;
  const text = Buffer.from(JSON.stringify(value));
  sharedTexts.set(value, kept === undefined && !surely ? SEEN_ONCE : text);
  return text;
}

/** `"Field":` for each field name of an allocation (a few dozen, the same in every row). */
const fieldNames = new Map<string, Buffer>();
const FIELD_NAMES_KEPT = 256;

function fieldName(field: string): Buffer {
  let text = fieldNames.get(field);
  if (text === undefined) {
    text = Buffer.from(`${JSON.stringify(field)}:`);
    if (fieldNames.size < FIELD_NAMES_KEPT) fieldNames.set(field, text);
  }
  return text;
}
