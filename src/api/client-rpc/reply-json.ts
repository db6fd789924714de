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
 * object stays right for as long as the object lives.
 *
 * The text is byte for byte what JSON.stringify gives for the same
 * allocation with its job moved last (and SignedIdentities, when it has
 * some, just before it).
 */
export function clientReplyJson(body: Readonly<Record<string, unknown>>): string | Buffer {
  const allocs = body.Allocs;
  if (!Array.isArray(allocs)) return JSON.stringify(body);
  pos = 0;
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
  // Outside the V8 heap (past the 4 KiB that Node's buffer pool serves),
  // and sent as it is: a string would be flattened to count its bytes, then
  // again joined with the response head.
  const out = Buffer.allocUnsafe(pos);
  scratch.copy(out, 0, 0, pos);
  return out;
}

/**
 * The reply is written here, then copied out at its size: a reply built of
 * strings was a rope of a few hundred pieces per allocation (a cons string
 * of 32 bytes for every `+`, the quoted copy of every string value), made
 * flat again to be counted and sent, about 13 KB of young-generation heap
 * for every allocation served. Grown to the largest reply, kept between replies.
 */
let scratch = Buffer.allocUnsafeSlow(64 * 1024);
let pos = 0;

const QUOTE = 0x22;
const COMMA = 0x2c;
const COLON = 0x3a;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const CLOSE_BRACKET = 0x5d;

function ensure(more: number): void {
  if (pos + more <= scratch.length) return;
  const grown = Buffer.allocUnsafeSlow(Math.max(scratch.length * 2, pos + more));
  scratch.copy(grown, 0, 0, pos);
  scratch = grown;
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

/** A text known to be ASCII. */
function writeAscii(text: string): void {
  ensure(text.length);
  pos += scratch.write(text, pos, "latin1");
}

function writeBytes(bytes: Uint8Array): void {
  const length = bytes.length;
  ensure(length);
  if (length <= SHORT_TEXT) for (let i = 0; i < length; i++) scratch[pos + i] = bytes[i]!;
  else scratch.set(bytes, pos);
  pos += length;
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
  const start = pos;
  let identitiesOut = identities === undefined;
  // for…in walks the row's own fields in Object.keys order (a row inherits
  // none) from its hidden class's cached keys, without an array per row.
  for (const field in row) {
    if (field === "Job" && jobLast) continue;
    if (field === "SignedIdentities" && identities !== undefined) {
      if (pos > start) byte(COMMA);
      writeBytes(fieldName(field));
      writeText(JSON.stringify(identities));
      identitiesOut = true;
      continue;
    }
    const value = row[field];
    // What JSON.stringify leaves out of an object.
    if (value === undefined || typeof value === "function" || typeof value === "symbol") continue;
    if (pos > start) byte(COMMA);
    writeBytes(fieldName(field));
    valueJson(value, SHARED_FIELDS.has(field));
  }
  if (!identitiesOut) {
    if (pos > start) byte(COMMA);
    writeAscii('"SignedIdentities":');
    writeText(JSON.stringify(identities));
  }
  if (jobLast) {
    if (pos > start) byte(COMMA);
    writeAscii('"Job":');
    writeBytes(sharedText(job, true));
  }
  byte(CLOSE_BRACE);
}

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
      if (NEEDS_ESCAPE.test(value)) writeText(JSON.stringify(value));
      else {
        byte(QUOTE);
        writeText(value);
        byte(QUOTE);
      }
      break;
    case "number":
      if (Number.isSafeInteger(value) && value >= 0) writeUint(value);
      // What JSON.stringify writes: the number's own text, null if not finite.
      else writeAscii(Number.isFinite(value) ? String(value) : "null");
      break;
    case "boolean":
      writeAscii(value ? "true" : "false");
      break;
    case "object":
      if (value === null) writeAscii("null");
      else if (shared) writeBytes(sharedText(value, false));
      else writeText(JSON.stringify(value));
      break;
    default:
      // A bigint: JSON.stringify throws, as it did.
      writeText(JSON.stringify(value));
  }
}

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
