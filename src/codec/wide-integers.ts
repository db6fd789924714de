/**
 * msgpackr writes every number that does not fit 32 bits as a float64, even
 * an integer: nanosecond times (~1.7e18) and millisecond times (~1.7e12)
 * would reach other readers as floats, and past 2^53 a reader could not tell
 * an integer from a rounded float. This pass runs over msgpackr's output and
 * rewrites, in place, each float64 that holds an integer in the int64 or
 * uint64 range as that integer: int64 (0xd3) below 2^63, uint64 (0xcf) from
 * there, which is what msgpackr writes for a BigInt. Both are 9 bytes, so
 * nothing moves.
 *
 * Rewriting the bytes costs a fraction of converting such numbers to BigInts
 * before packing, which has to copy every object on the way to one (the
 * client alloc updates carry three per allocation). The value read back is
 * the same JS number: the float held that integer exactly.
 *
 * msgpack is prefix-encoded, so one linear pass sees every item: a container
 * header is followed by its items, and a string, binary or extension payload
 * is skipped by its length, so bytes inside them are never taken for items.
 */

const TWO_32 = 0x1_0000_0000;
const INT32_MIN = -0x8000_0000;
const INT64_MIN = -(2 ** 63);
const UINT64_FROM = 2 ** 63;
const UINT64_END = 2 ** 64;

/** Bytes taken by an item (a container's header only), by its first byte, when that alone tells; 0 otherwise. */
const FIXED_SIZE = new Uint8Array(256);
for (let b = 0x00; b <= 0x9f; b++) FIXED_SIZE[b] = 1; // positive fixint, fixmap and fixarray headers
for (let b = 0xa0; b <= 0xbf; b++) FIXED_SIZE[b] = 1 + (b & 0x1f); // fixstr: header and bytes
for (let b = 0xe0; b <= 0xff; b++) FIXED_SIZE[b] = 1; // negative fixint
for (const [b, size] of [
  [0xc0, 1], // nil
  [0xc2, 1], // false
  [0xc3, 1], // true
  [0xca, 5], // float32
  [0xcc, 2], // uint8
  [0xcd, 3], // uint16
  [0xce, 5], // uint32
  [0xcf, 9], // uint64
  [0xd0, 2], // int8
  [0xd1, 3], // int16
  [0xd2, 5], // int32
  [0xd3, 9], // int64
  [0xd4, 3], // fixext 1
  [0xd5, 4], // fixext 2
  [0xd6, 6], // fixext 4
  [0xd7, 10], // fixext 8
  [0xd8, 18], // fixext 16
  [0xdc, 3], // array16 header
  [0xdd, 5], // array32 header
  [0xde, 3], // map16 header
  [0xdf, 5], // map32 header
] as const) {
  FIXED_SIZE[b] = size;
}

const F64 = new Float64Array(1);
const F64_BYTES = new Uint8Array(F64.buffer);
const LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

/** An integer that msgpackr wrote as a float64 (outside int32/uint32) and that fits int64 or uint64. */
export function isWideInteger(n: number): boolean {
  // The range tests come first: they turn away nearly every number, NaN and
  // the infinities included, before the call.
  return (n >= TWO_32 ? n < UINT64_END : n < INT32_MIN && n >= INT64_MIN) && Number.isInteger(n);
}

/** Rewrites integral float64s in `bytes` (one or more complete msgpack items) as int64/uint64; returns `bytes`. */
export function widenIntegralFloats(bytes: Uint8Array): Uint8Array {
  const end = bytes.length;
  let pos = 0;
  while (pos < end) {
    const b = bytes[pos]!;
    const fixed = FIXED_SIZE[b]!;
    if (fixed !== 0) {
      pos += fixed;
      continue;
    }
    switch (b) {
      case 0xcb: {
        const n = readFloat64(bytes, pos + 1);
        if (isWideInteger(n)) {
          // Two's complement halves; both are exact: n is an integer below 2^64.
          const hi = Math.floor(n / TWO_32);
          bytes[pos] = n >= UINT64_FROM ? 0xcf : 0xd3;
          writeUint32(bytes, pos + 1, hi);
          writeUint32(bytes, pos + 5, n - hi * TWO_32);
        }
        pos += 9;
        break;
      }
      case 0xc4: // bin8
      case 0xd9: // str8
        pos += 2 + bytes[pos + 1]!;
        break;
      case 0xc5: // bin16
      case 0xda: // str16
        pos += 3 + readUint16(bytes, pos + 1);
        break;
      case 0xc6: // bin32
      case 0xdb: // str32
        pos += 5 + readUint32(bytes, pos + 1);
        break;
      case 0xc7: // ext8: length, type, payload
        pos += 3 + bytes[pos + 1]!;
        break;
      case 0xc8: // ext16
        pos += 4 + readUint16(bytes, pos + 1);
        break;
      case 0xc9: // ext32
        pos += 6 + readUint32(bytes, pos + 1);
        break;
      default:
        // 0xc1 is the one byte msgpack never uses.
        throw new Error(`not msgpack: byte 0x${b.toString(16)} at offset ${pos}`);
    }
  }
  if (pos !== end) throw new Error(`not msgpack: the last item runs ${pos - end} bytes past the end`);
  return bytes;
}

function readFloat64(bytes: Uint8Array, at: number): number {
  if (LITTLE_ENDIAN) for (let i = 0; i < 8; i++) F64_BYTES[7 - i] = bytes[at + i]!;
  else for (let i = 0; i < 8; i++) F64_BYTES[i] = bytes[at + i]!;
  return F64[0]!;
}

function readUint16(bytes: Uint8Array, at: number): number {
  return (bytes[at]! << 8) | bytes[at + 1]!;
}

function readUint32(bytes: Uint8Array, at: number): number {
  return bytes[at]! * 0x100_0000 + ((bytes[at + 1]! << 16) | (bytes[at + 2]! << 8) | bytes[at + 3]!);
}

/** Big-endian; a negative `n` (a high half of a negative int64) is written as its two's complement. */
function writeUint32(bytes: Uint8Array, at: number, n: number): void {
  bytes[at] = n >>> 24;
  bytes[at + 1] = n >>> 16;
  bytes[at + 2] = n >>> 8;
  bytes[at + 3] = n;
}
