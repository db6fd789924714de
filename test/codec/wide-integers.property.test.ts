import fc from "fast-check";
import { Packr, Unpackr } from "msgpackr";
import { describe, expect, it } from "vitest";
import { packPlain, unpackPlain } from "../../src/codec/envelope-codec.ts";
import { isWideInteger, widenIntegralFloats } from "../../src/codec/wide-integers.ts";

/** What the byte pass must equal: the same value with such integers as BigInts, which msgpackr writes as int64/uint64. */
const reference = new Packr({
  useRecords: false,
  moreTypes: false,
  mapsAsObjects: true,
  variableMapSize: true,
  encodeUndefinedAsNil: true,
});
const exact = new Unpackr({ useRecords: false, mapsAsObjects: true, int64AsType: "bigint" });

// msgpackr writes -0 as the integer 0 (as it always has).
function withBigInts(x: unknown): unknown {
  if (typeof x === "number") return isWideInteger(x) ? BigInt(x) : Object.is(x, -0) ? 0 : x;
  if (Array.isArray(x)) return x.map(withBigInts);
  if (x instanceof Uint8Array) return x;
  if (typeof x === "object" && x !== null)
    return Object.fromEntries(Object.entries(x).map(([k, v]) => [k, withBigInts(v)]));
  return x;
}

function withNumbers(x: unknown): unknown {
  if (typeof x === "bigint") return Number(x);
  if (Array.isArray(x)) return x.map(withNumbers);
  if (x instanceof Uint8Array) return x;
  if (typeof x === "object" && x !== null)
    return Object.fromEntries(Object.entries(x).map(([k, v]) => [k, withNumbers(v)]));
  return x;
}

const EDGES = [
  2 ** 31 - 1,
  2 ** 31,
  2 ** 32 - 1,
  2 ** 32,
  -(2 ** 31),
  -(2 ** 31) - 1,
  2 ** 53 - 1,
  2 ** 53 + 2,
  1_763_800_000_000,
  1_763_800_000_000_000_000,
  2 ** 63 - 1024,
  2 ** 63,
  2 ** 64 - 2048,
  2 ** 64, // too big for uint64: stays a float64
  -(2 ** 63),
  -(2 ** 63) - 2048, // below int64: stays a float64
  -0,
  0.5,
  1e15 + 0.5,
  Number.NaN,
  Number.POSITIVE_INFINITY,
  Number.NEGATIVE_INFINITY,
  Number.MAX_VALUE,
  Number.MIN_VALUE,
];

const number = fc.oneof(
  fc.constantFrom(...EDGES),
  fc.integer(),
  fc.maxSafeInteger(),
  fc.double(),
  fc.bigInt({ min: -(2n ** 63n), max: 2n ** 64n - 1n }).map((b) => Number(b)),
);
// Strings of every msgpack length class, so the pass must skip their bytes
// (0xcb and friends inside them are not items).
const text = fc.oneof(
  fc.string(),
  fc.string({ unit: "binary", maxLength: 40 }),
  fc.nat({ max: 70_000 }).map((n) => "\u00cb".repeat(n % 3 === 0 ? n : n % 300)),
);
const leaf = fc.oneof(
  number,
  text,
  fc.boolean(),
  fc.constant(null),
  fc.uint8Array({ maxLength: 300 }).map((a) => Buffer.from(a.fill(0xcb, 0, a.length >> 1))),
);
const value = fc.letrec((tie) => ({
  node: fc.oneof({ depthSize: "small" }, leaf, tie("array"), tie("object")),
  array: fc.array(tie("node"), { maxLength: 8 }),
  // No "__proto__" key: msgpackr drops it on read (prototype pollution), and
  // none reaches a record (fastify refuses such a key in a JSON body).
  object: fc.dictionary(
    text.filter((k) => k !== "__proto__"),
    tie("node"),
    { maxKeys: 8 },
  ),
})).node;

describe("integers past 32 bits in msgpack", () => {
  it("are written exactly as msgpackr writes them as BigInts, and read back as the same numbers", () => {
    fc.assert(
      fc.property(value, (v) => {
        const bytes = packPlain(v);
        expect(Buffer.from(bytes).equals(Buffer.from(reference.pack(withBigInts(v))))).toBe(true);
        expect(unpackPlain(bytes)).toEqual(withNumbers(withBigInts(v)));
        expect(exact.unpack(bytes)).toEqual(withBigInts(v));
      }),
      { numRuns: 300 },
    );
  });

  it("leave bytes without such a float alone, and refuse what is not msgpack", () => {
    const bytes = new Packr({ useRecords: false }).pack({ a: 1.5, b: "x", c: [1, -2, 2 ** 31] });
    const before = Buffer.from(bytes);
    expect(Buffer.from(widenIntegralFloats(bytes)).equals(before)).toBe(true);
    expect(() => widenIntegralFloats(new Uint8Array([0xc1]))).toThrow(/not msgpack/);
    expect(() => widenIntegralFloats(new Uint8Array([0xa3, 0x61]))).toThrow(/past the end/);
  });

  it("read old float64 records as the same numbers", () => {
    const old = new Packr({ useRecords: false }).pack({
      at: 1_763_800_000_000,
      ns: 1_763_800_000_000_000_000,
    });
    expect(old.includes(0xcb)).toBe(true);
    expect(unpackPlain(old)).toEqual({ at: 1_763_800_000_000, ns: 1_763_800_000_000_000_000 });
  });
});
