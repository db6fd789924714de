import {
  childRulesOf,
  FIELD_BYTES,
  FIELD_ELEMENT_RULES,
  FIELD_FLOAT,
  FIELD_OPAQUE,
  FIELD_TIME,
  FIELD_UINT,
  FIELD_USER_MAP,
  fieldRules,
} from "./go-field-types.ts";
import {
  goTimeBinaryFromDate,
  rfc3339FromGoTimeBinary,
  rfc3339FromMsgpackTimestamp,
  writeGoTimeBinary,
} from "./go-time.ts";

export { GO_BYTES_FIELDS, GO_TIME_FIELDS } from "./go-field-types.ts";

/*
 * msgpack as Nomad 1.6.1's structs.MsgpackHandle writes and reads it
 * (github.com/hashicorp/go-msgpack v1.1.5, RawToString=true, WriteExt=false,
 * TimeNotBuiltin=true, MapType map[string]interface{}):
 *
 * - Strings and []byte are both written as the old-spec "raw" string:
 *   fixstr, str16 (0xda) or str32 (0xdb); never str8 (0xd9) nor bin (0xc4..).
 *   Reading accepts all string and bin forms for either.
 * - Signed integers use fixnum or int8/16/32/64 (0xd0..0xd3), so 200 is
 *   0xd1 0x00 0xc8; unsigned Go types use fixnum or uint8..64 (0xcc..0xcf).
 *   float64 is always 0xcb, even when integral.
 * - time.Time goes through time.MarshalBinary (15 or 16 bytes written as a
 *   raw string); time.Duration is an int64 of nanoseconds.
 * - Structs are maps keyed by field name, embedded structs flattened; nil
 *   pointers, slices and maps are nil (0xc0), empty ones 0x90 / 0x80.
 *   Struct fields come sorted by name from go-msgpack's reflection encoder
 *   but in declaration order from codecgen'd encoders (Nomad's CI builds use
 *   codecgen), and Allocation, Evaluation and Plan omit empty fields
 *   (`_struct bool codec:",omitempty"`): Go's decoder cares about none of
 *   that (missing field = zero value), so this encoder writes keys in the
 *   object's own order and keeps empty fields. The other way round, an
 *   Allocation from Go decodes without its empty fields (no "" / 0 / false /
 *   null / [] / {} at its top level): readers must default them.
 *   Go maps come in random order.
 * - Go's decoder: a msgpack integer decodes into a float64 field, but a
 *   float into an integer field is an error; any string or bin form decodes
 *   into a string or []byte field; nil sets a field to its zero value;
 *   unknown keys are skipped.
 *
 * Values here are JSON-shaped (as chronomad's HTTP API has them), so which
 * Go type a value has comes from its field name (go-field-types.ts): times
 * are RFC 3339 strings, []byte base64 strings, uint and float64 fields pick
 * the msgpack forms Go would. Integers are written as integers everywhere
 * else (Nomad would hold a JSON-decoded float64 in interface{} driver
 * config; drivers read the config back through JSON, so 3 and 3.0 are the
 * same to them).
 *
 * Decoding gives JSON-shaped values the same way. Integers beyond 2^53
 * decode to the nearest double, as chronomad holds them elsewhere: indexes
 * and sizes never get there, but int64 Unix-nanosecond times do (~1.7e18:
 * Job.SubmitTime, TaskEvent.Time, Allocation and Evaluation CreateTime /
 * ModifyTime), which come back up to 128 ns off. An integral double of any
 * size encodes as that exact int64, and a bigint encodes exactly.
 *
 * Hand-written rather than msgpackr: msgpackr writes str8 and bin, cannot
 * pick uint vs int forms or Go time binary per field, and reads str as
 * string regardless of the field, so wrapping it would cost more code than
 * this small codec.
 */

/** The value `GoMsgpackReader.next` returns until a whole value has arrived. */
export const NEED_MORE: unique symbol = Symbol("NEED_MORE");

const TWO_POW_32 = 4_294_967_296;
const TWO_POW_63 = 2 ** 63;
const TWO_POW_64 = 2 ** 64;
const MAX_INT64 = (1n << 63n) - 1n;
const MIN_INT64 = -(1n << 63n);
const MAX_UINT64 = (1n << 64n) - 1n;

// ---------------------------------------------------------------- encoding

const RETAINED_SCRATCH = 1 << 20;
let scratch = Buffer.allocUnsafe(64 * 1024);
let out = scratch;
let at = 0;

function reserve(n: number): void {
  if (at + n <= out.length) return;
  const grown = Buffer.allocUnsafe(Math.max(out.length * 2, at + n));
  out.copy(grown, 0, 0, at);
  out = grown;
}

/** Encodes a JSON-shaped value into the bytes Nomad's MsgpackHandle writes. */
export function encodeGo(value: unknown): Buffer {
  return encodeGoSequence([value]);
}

/** Encodes values back to back (e.g. an RPC header and body) into one buffer. */
export function encodeGoSequence(values: readonly unknown[]): Buffer {
  out = scratch;
  at = 0;
  try {
    for (const value of values) writeValue(value, 0, undefined);
    return Buffer.from(out.subarray(0, at));
  } finally {
    // Keep a grown buffer for the next call unless it got large.
    if (out.length <= RETAINED_SCRATCH) scratch = out;
    out = scratch;
  }
}

function writeValue(value: unknown, rules: number, key: string | undefined): void {
  switch (typeof value) {
    case "string":
      if (rules & (FIELD_TIME | FIELD_BYTES)) {
        writeTypedString(value, rules, key);
      } else {
        writeString(value);
      }
      return;
    case "number":
      writeNumber(value, rules);
      return;
    case "boolean":
      reserve(1);
      out[at++] = value ? 0xc3 : 0xc2;
      return;
    case "bigint":
      writeBigInt(value, rules);
      return;
    case "undefined":
      reserve(1);
      out[at++] = 0xc0;
      return;
    case "object":
      if (value === null) {
        reserve(1);
        out[at++] = 0xc0;
      } else if (Array.isArray(value)) {
        writeArray(value, rules, key);
      } else if (value instanceof Uint8Array) {
        writeRaw(value);
      } else if (value instanceof Date) {
        writeRaw(goTimeBinaryFromDate(value));
      } else if (value instanceof Map) {
        writeMap(value, rules);
      } else {
        writeObject(value as Record<string, unknown>, rules, key);
      }
      return;
    default:
      throw new TypeError(`cannot encode a ${typeof value} as msgpack`);
  }
}

function writeTypedString(value: string, rules: number, key: string | undefined): void {
  if (rules & FIELD_TIME) {
    reserve(16);
    // Go would refuse anything else in a time.Time field; fail here, where the cause is visible.
    if (!writeGoTimeBinary(value, out, at + 1)) {
      throw new TypeError(`field ${key}: not an RFC 3339 time: ${JSON.stringify(value)}`);
    }
    out[at] = 0xaf; // fixstr of 15 bytes
    at += 16;
  } else {
    writeRaw(Buffer.from(value, "base64"));
  }
}

function writeArray(items: readonly unknown[], rules: number, key: string | undefined): void {
  writeContainerHeader(items.length, 0x90, 0xdc);
  // Elements of a slice field share the field's type rules; a struct element
  // keeps the field's name as parent key (child rules).
  const elementRules = rules & (FIELD_ELEMENT_RULES | FIELD_OPAQUE);
  for (const item of items) writeValue(item === undefined ? null : item, elementRules, key);
}

function writeObject(object: Record<string, unknown>, rules: number, key: string | undefined): void {
  const keys = Object.keys(object);
  let count = 0;
  for (const k of keys) if (object[k] !== undefined) count++;
  writeContainerHeader(count, 0x80, 0xde);
  if (rules & FIELD_OPAQUE) {
    for (const k of keys) {
      const v = object[k];
      if (v === undefined) continue;
      writeString(k);
      writeValue(v, FIELD_OPAQUE, undefined);
    }
  } else if (rules & FIELD_USER_MAP) {
    const elementRules = rules & FIELD_ELEMENT_RULES;
    for (const k of keys) {
      const v = object[k];
      if (v === undefined) continue;
      writeString(k);
      writeValue(v, elementRules, undefined);
    }
  } else {
    const parentRules = childRulesOf(key);
    for (const k of keys) {
      const v = object[k];
      if (v === undefined) continue;
      writeString(k);
      writeValue(v, fieldRules(k, parentRules), k);
    }
  }
}

function writeMap(map: ReadonlyMap<unknown, unknown>, rules: number): void {
  writeContainerHeader(map.size, 0x80, 0xde);
  const valueRules = rules & FIELD_OPAQUE ? FIELD_OPAQUE : rules & FIELD_ELEMENT_RULES;
  for (const [k, v] of map) {
    writeValue(k, 0, undefined);
    writeValue(v, valueRules, undefined);
  }
}

function writeContainerHeader(length: number, fix: number, code16: number): void {
  reserve(5);
  if (length < 16) {
    out[at++] = fix | length;
  } else if (length < 65_536) {
    out[at++] = code16;
    out[at++] = length >>> 8;
    out[at++] = length & 0xff;
  } else {
    out[at++] = code16 + 1;
    out.writeUInt32BE(length, at);
    at += 4;
  }
}

/** The raw-string header go-msgpack writes with WriteExt=false: fixstr, str16 or str32 (no str8). */
function writeRawHeader(length: number): void {
  if (length < 32) {
    out[at++] = 0xa0 | length;
  } else if (length < 65_536) {
    out[at++] = 0xda;
    out[at++] = length >>> 8;
    out[at++] = length & 0xff;
  } else {
    out[at++] = 0xdb;
    out.writeUInt32BE(length, at);
    at += 4;
  }
}

function writeRaw(bytes: Uint8Array): void {
  reserve(bytes.length + 5);
  writeRawHeader(bytes.length);
  out.set(bytes, at);
  at += bytes.length;
}

function writeString(text: string): void {
  const length = text.length;
  if (length < 32) {
    // Short keys and values: ASCII written byte by byte beats Buffer.write's call overhead.
    reserve(1 + length * 3);
    const start = at + 1;
    let i = 0;
    for (; i < length; i++) {
      const c = text.charCodeAt(i);
      if (c >= 0x80) break;
      out[start + i] = c;
    }
    if (i === length) {
      out[at] = 0xa0 | length;
      at = start + length;
      return;
    }
  }
  if (length * 3 < 65_536) {
    reserve(3 + length * 3);
    const written = out.write(text, at + 3, "utf8");
    if (written < 32) {
      out.copyWithin(at + 1, at + 3, at + 3 + written);
      out[at] = 0xa0 | written;
      at += 1 + written;
    } else {
      out[at] = 0xda;
      out[at + 1] = written >>> 8;
      out[at + 2] = written & 0xff;
      at += 3 + written;
    }
    return;
  }
  const byteLength = Buffer.byteLength(text, "utf8");
  reserve(5 + byteLength);
  writeRawHeader(byteLength);
  at += out.write(text, at, "utf8");
}

function writeNumber(n: number, rules: number): void {
  if (!Number.isInteger(n) || rules & FIELD_FLOAT) {
    writeFloat64(n);
    return;
  }
  if (n >= 0 && rules & FIELD_UINT) {
    if (n < TWO_POW_32) writeUint32OrLess(n);
    else if (n < TWO_POW_64) writeBigInt(BigInt(n), rules);
    else writeFloat64(n);
    return;
  }
  if (n >= -2_147_483_648 && n <= 2_147_483_647) writeInt32OrLess(n);
  else if (n >= -TWO_POW_63 && n < TWO_POW_63) writeBigInt(BigInt(n), 0);
  else writeFloat64(n);
}

function writeFloat64(n: number): void {
  reserve(9);
  out[at] = 0xcb;
  out.writeDoubleBE(n, at + 1);
  at += 9;
}

/** go-msgpack's EncodeInt for values that fit int32: fixnum, then the smallest signed form. */
function writeInt32OrLess(n: number): void {
  reserve(5);
  if (n > 127) {
    if (n <= 32_767) {
      out[at++] = 0xd1;
      out[at++] = n >>> 8;
      out[at++] = n & 0xff;
    } else {
      out[at] = 0xd2;
      out.writeInt32BE(n, at + 1);
      at += 5;
    }
  } else if (n >= -32) {
    out[at++] = n & 0xff;
  } else if (n >= -128) {
    out[at++] = 0xd0;
    out[at++] = n & 0xff;
  } else if (n >= -32_768) {
    out[at] = 0xd1;
    out.writeInt16BE(n, at + 1);
    at += 3;
  } else {
    out[at] = 0xd2;
    out.writeInt32BE(n, at + 1);
    at += 5;
  }
}

/** go-msgpack's EncodeUint for values below 2^32. */
function writeUint32OrLess(n: number): void {
  reserve(5);
  if (n <= 127) {
    out[at++] = n;
  } else if (n <= 0xff) {
    out[at++] = 0xcc;
    out[at++] = n;
  } else if (n <= 0xffff) {
    out[at++] = 0xcd;
    out[at++] = n >>> 8;
    out[at++] = n & 0xff;
  } else {
    out[at] = 0xce;
    out.writeUInt32BE(n, at + 1);
    at += 5;
  }
}

function writeBigInt(n: bigint, rules: number): void {
  if (n >= 0n && (rules & FIELD_UINT || n > MAX_INT64)) {
    if (n > MAX_UINT64) throw new RangeError(`${n} does not fit uint64`);
    if (n < 0x1_0000_0000n) {
      writeUint32OrLess(Number(n));
      return;
    }
    reserve(9);
    out[at] = 0xcf;
    out.writeBigUInt64BE(n, at + 1);
    at += 9;
    return;
  }
  if (n < MIN_INT64) throw new RangeError(`${n} does not fit int64`);
  if (n >= -0x8000_0000n && n <= 0x7fff_ffffn) {
    writeInt32OrLess(Number(n));
    return;
  }
  reserve(9);
  out[at] = 0xd3;
  out.writeBigInt64BE(n, at + 1);
  at += 9;
}

// ---------------------------------------------------------------- decoding

class Truncated extends RangeError {}

let src: Buffer = Buffer.alloc(0);
let pos = 0;
let limit = 0;

/** Decodes one complete value (and nothing after it) into a JSON-shaped value. */
export function decodeGo(bytes: Uint8Array): unknown {
  const buffer = Buffer.isBuffer(bytes)
    ? bytes
    : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const value = decodeRange(buffer, 0, buffer.length);
  if (pos !== buffer.length) {
    throw new RangeError(`msgpack: ${buffer.length - pos} bytes after the value`);
  }
  return value;
}

function decodeRange(buffer: Buffer, start: number, end: number): unknown {
  src = buffer;
  pos = start;
  limit = end;
  try {
    return readValue(0, undefined);
  } catch (err) {
    if (err instanceof Truncated) throw new RangeError("msgpack: value truncated");
    throw err;
  } finally {
    src = EMPTY;
  }
}

const EMPTY = Buffer.alloc(0);

function need(n: number): void {
  if (pos + n > limit) throw new Truncated();
}

function readValue(rules: number, key: string | undefined): unknown {
  need(1);
  const b = src[pos++]!;
  if (b <= 0x7f) return b;
  if (b >= 0xe0) return b - 0x100;
  if (b >= 0xa0 && b <= 0xbf) return readStringLike(b & 0x1f, rules);
  if (b >= 0x90 && b <= 0x9f) return readArray(b & 0x0f, rules, key);
  if (b >= 0x80 && b <= 0x8f) return readMap(b & 0x0f, rules, key);
  switch (b) {
    case 0xc0:
      return null;
    case 0xc2:
      return false;
    case 0xc3:
      return true;
    case 0xc4:
      return readBinary(readLength(1), rules);
    case 0xc5:
      return readBinary(readLength(2), rules);
    case 0xc6:
      return readBinary(readLength(4), rules);
    case 0xc7:
      return readExtension(readLength(1));
    case 0xc8:
      return readExtension(readLength(2));
    case 0xc9:
      return readExtension(readLength(4));
    case 0xca:
      need(4);
      pos += 4;
      return src.readFloatBE(pos - 4);
    case 0xcb:
      need(8);
      pos += 8;
      return src.readDoubleBE(pos - 8);
    case 0xcc:
      return readLength(1);
    case 0xcd:
      return readLength(2);
    case 0xce:
      return readLength(4);
    case 0xcf:
      need(8);
      pos += 8;
      // Beyond 2^53 this is the nearest double (documented above).
      return src.readUInt32BE(pos - 8) * TWO_POW_32 + src.readUInt32BE(pos - 4);
    case 0xd0:
      need(1);
      return src.readInt8(pos++);
    case 0xd1:
      need(2);
      pos += 2;
      return src.readInt16BE(pos - 2);
    case 0xd2:
      need(4);
      pos += 4;
      return src.readInt32BE(pos - 4);
    case 0xd3:
      need(8);
      pos += 8;
      return src.readInt32BE(pos - 8) * TWO_POW_32 + src.readUInt32BE(pos - 4);
    case 0xd4:
      return readExtension(1);
    case 0xd5:
      return readExtension(2);
    case 0xd6:
      return readExtension(4);
    case 0xd7:
      return readExtension(8);
    case 0xd8:
      return readExtension(16);
    case 0xd9:
      return readStringLike(readLength(1), rules);
    case 0xda:
      return readStringLike(readLength(2), rules);
    case 0xdb:
      return readStringLike(readLength(4), rules);
    case 0xdc:
      return readArray(readLength(2), rules, key);
    case 0xdd:
      return readArray(readLength(4), rules, key);
    case 0xde:
      return readMap(readLength(2), rules, key);
    case 0xdf:
      return readMap(readLength(4), rules, key);
    default:
      throw new RangeError(`msgpack: invalid byte 0x${b.toString(16)} at offset ${pos - 1}`);
  }
}

function readLength(size: 1 | 2 | 4): number {
  need(size);
  const p = pos;
  pos += size;
  if (size === 1) return src[p]!;
  if (size === 2) return (src[p]! << 8) | src[p + 1]!;
  return src.readUInt32BE(p);
}

function readStringLike(length: number, rules: number): unknown {
  need(length);
  const start = pos;
  pos += length;
  if (rules & (FIELD_TIME | FIELD_BYTES)) {
    if (rules & FIELD_TIME) {
      const time = rfc3339FromGoTimeBinary(src, start, length);
      if (time !== undefined) return time;
    }
    if (rules & FIELD_BYTES) return src.toString("base64", start, pos);
  }
  // Short values repeat too (statuses, drivers, task names): same cache as keys.
  return length <= 16 ? readCachedKey(start, length) : readUtf8(start, length);
}

function readBinary(length: number, rules: number): string {
  need(length);
  const start = pos;
  pos += length;
  if (rules & FIELD_TIME) {
    const time = rfc3339FromGoTimeBinary(src, start, length);
    if (time !== undefined) return time;
  }
  return src.toString("base64", start, pos);
}

function readUtf8(start: number, length: number): string {
  if (length < 24) {
    // Short ASCII (most keys and enum values) without the call into Buffer.toString.
    let text = "";
    for (let i = start; i < start + length; i++) {
      const c = src[i]!;
      if (c >= 0x80) return src.toString("utf8", start, start + length);
      text += String.fromCharCode(c);
    }
    return text;
  }
  return src.toString("utf8", start, start + length);
}

// Map keys repeat (every struct's field names): keep the string of each short
// key so it is built and hashed once, not once per occurrence.
const KEY_CACHE_SLOTS = 4096;
const keyCacheBytes: Array<Uint8Array | undefined> = new Array(KEY_CACHE_SLOTS);
const keyCacheText: string[] = new Array(KEY_CACHE_SLOTS).fill("");
const keyCacheRules = new Int32Array(KEY_CACHE_SLOTS);
/** The field rules of the key readCachedKey last returned. */
let lastKeyRules = 0;

function readCachedKey(start: number, length: number): string {
  let hash = length;
  for (let i = start; i < start + length; i++) hash = (hash * 31 + src[i]!) | 0;
  const slot = hash & (KEY_CACHE_SLOTS - 1);
  const cached = keyCacheBytes[slot];
  if (cached !== undefined && cached.length === length) {
    let same = true;
    for (let i = 0; i < length; i++) {
      if (cached[i] !== src[start + i]) {
        same = false;
        break;
      }
    }
    if (same) {
      lastKeyRules = keyCacheRules[slot]!;
      return keyCacheText[slot]!;
    }
  }
  const text = readUtf8(start, length);
  keyCacheBytes[slot] = new Uint8Array(src.subarray(start, start + length));
  keyCacheText[slot] = text;
  lastKeyRules = keyCacheRules[slot] = fieldRules(text, undefined);
  return text;
}

function readExtension(length: number): string {
  need(1 + length);
  const type = src.readInt8(pos);
  const start = pos + 1;
  pos = start + length;
  // go-msgpack writes no extensions with WriteExt=false; other encoders may send msgpack timestamps.
  if (type === -1) return rfc3339FromMsgpackTimestamp(src, start, length);
  return src.toString("base64", start, pos);
}

function readArray(length: number, rules: number, key: string | undefined): unknown[] {
  const elementRules = rules & (FIELD_ELEMENT_RULES | FIELD_OPAQUE);
  const items = new Array<unknown>(length);
  for (let i = 0; i < length; i++) items[i] = readValue(elementRules, key);
  return items;
}

function readMap(length: number, rules: number, key: string | undefined): Record<string, unknown> {
  const object: Record<string, unknown> = {};
  const keyed = !(rules & (FIELD_OPAQUE | FIELD_USER_MAP));
  const parentRules = keyed ? childRulesOf(key) : undefined;
  const valueRules = rules & FIELD_OPAQUE ? FIELD_OPAQUE : rules & FIELD_ELEMENT_RULES;
  for (let i = 0; i < length; i++) {
    let k: string;
    let fieldRulesOfKey: number;
    need(1);
    const b = src[pos]!;
    if (b >= 0xa0 && b <= 0xbf) {
      const keyLength = b & 0x1f;
      need(1 + keyLength);
      k = readCachedKey(pos + 1, keyLength);
      fieldRulesOfKey = lastKeyRules;
      pos += 1 + keyLength;
    } else {
      const rawKey = readValue(0, undefined);
      k = typeof rawKey === "string" ? rawKey : String(rawKey);
      fieldRulesOfKey = fieldRules(k, undefined);
    }
    let value: unknown;
    if (!keyed) value = readValue(valueRules, undefined);
    else value = readValue(parentRules === undefined ? fieldRulesOfKey : fieldRules(k, parentRules), k);
    if (k === "__proto__") {
      Object.defineProperty(object, k, { value, enumerable: true, writable: true, configurable: true });
    } else {
      object[k] = value;
    }
  }
  return object;
}

// ------------------------------------------------------- incremental reading

/**
 * Where the value starting at `start` ends, or, when `end` cuts it short,
 * minus the number of bytes (from `start`) known to be needed.
 */
function scanValue(buffer: Buffer, start: number, end: number): number {
  let p = start;
  let pending = 1;
  while (pending > 0) {
    if (p >= end) return -(p - start + 1);
    const b = buffer[p]!;
    pending--;
    let header = 1;
    let payload = 0;
    if (b <= 0x7f || b >= 0xe0 || (b >= 0xc0 && b <= 0xc3)) {
      // single byte
    } else if (b >= 0xa0 && b <= 0xbf) {
      payload = b & 0x1f;
    } else if (b >= 0x90 && b <= 0x9f) {
      pending += b & 0x0f;
    } else if (b >= 0x80 && b <= 0x8f) {
      pending += 2 * (b & 0x0f);
    } else {
      const size = HEADER_SIZE[b - 0xc4]!;
      if (p + 1 + size > end) return -(p - start + 1 + size);
      header = 1 + size;
      const n =
        size === 0
          ? 0
          : size === 1
            ? buffer[p + 1]!
            : size === 2
              ? buffer.readUInt16BE(p + 1)
              : buffer.readUInt32BE(p + 1);
      switch (b) {
        case 0xc4:
        case 0xc5:
        case 0xc6:
        case 0xd9:
        case 0xda:
        case 0xdb:
          payload = n;
          break;
        case 0xc7:
        case 0xc8:
        case 0xc9:
          payload = n + 1;
          break;
        case 0xdc:
        case 0xdd:
          pending += n;
          break;
        case 0xde:
        case 0xdf:
          pending += 2 * n;
          break;
        default:
          payload = FIXED_PAYLOAD[b - 0xc4]!;
          if (payload < 0) throw new RangeError(`msgpack: invalid byte 0x${b.toString(16)}`);
      }
    }
    p += header + payload;
    if (p > end) return -(p - start);
  }
  return p;
}

// For 0xc4..0xdf: bytes of length field (HEADER_SIZE) or fixed payload size (FIXED_PAYLOAD, -1 if invalid).
const HEADER_SIZE = [1, 2, 4, 1, 2, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 2, 4, 2, 4, 2, 4];
const FIXED_PAYLOAD = [0, 0, 0, 0, 0, 0, 4, 8, 1, 2, 4, 8, 1, 2, 4, 8, 2, 3, 5, 9, 17, 0, 0, 0, 0, 0, 0, 0];

/** Incremental reader: push chunks as they arrive, take complete values. */
export class GoMsgpackReader {
  private buffer: Buffer = EMPTY;
  private owned = false;
  private start = 0;
  private end = 0;
  /** Bytes from `start` that must be buffered before scanning again is worthwhile. */
  private needed = 1;

  /** Chunks must not be modified after being pushed. */
  push(chunk: Uint8Array): void {
    if (chunk.length === 0) return;
    const bytes = Buffer.isBuffer(chunk)
      ? chunk
      : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    if (this.start === this.end) {
      this.buffer = bytes;
      this.owned = false;
      this.start = 0;
      this.end = bytes.length;
      return;
    }
    const pending = this.end - this.start;
    if (!this.owned || this.end + bytes.length > this.buffer.length) {
      const capacity = Math.max(pending + bytes.length, this.owned ? this.buffer.length * 2 : 4096);
      const grown = Buffer.allocUnsafe(capacity);
      this.buffer.copy(grown, 0, this.start, this.end);
      this.buffer = grown;
      this.owned = true;
      this.start = 0;
      this.end = pending;
    }
    bytes.copy(this.buffer, this.end);
    this.end += bytes.length;
  }

  /** The next complete value, or NEED_MORE. */
  next(): unknown {
    if (this.end - this.start < this.needed) return NEED_MORE;
    const stop = scanValue(this.buffer, this.start, this.end);
    if (stop < 0) {
      this.needed = -stop;
      return NEED_MORE;
    }
    const value = decodeRange(this.buffer, this.start, stop);
    this.start = stop;
    this.needed = 1;
    if (this.start === this.end) {
      this.buffer = EMPTY;
      this.start = this.end = 0;
      this.owned = false;
    }
    return value;
  }

  /** Bytes pushed but not yet taken as values. */
  get buffered(): number {
    return this.end - this.start;
  }

  /** Removes and returns the bytes not yet taken (to hand the stream's rest to another consumer). */
  takeBuffered(): Buffer {
    const rest = Buffer.from(this.buffer.subarray(this.start, this.end));
    this.buffer = EMPTY;
    this.start = this.end = 0;
    this.owned = false;
    this.needed = 1;
    return rest;
  }
}
