import { createRequire } from "node:module";
import fc from "fast-check";
import { isNativeAccelerationEnabled } from "msgpackr";
import { describe, expect, it } from "vitest";
import { packPlain, unpackPlain } from "../../src/codec/envelope-codec.ts";
import { allocatedDuring } from "../heap-allocation.ts";

/**
 * The codec's decoder reads strings through src/codec/string-extractor.ts.
 * What it decodes must be what msgpackr's JS path decodes: the reference is
 * msgpackr's CommonJS build, a separate module with its own decoder state,
 * loaded without the native extractor (vitest.config.ts sets
 * MSGPACKR_NATIVE_ACCELERATION_DISABLED), with the codec's options.
 */
const require = createRequire(import.meta.url);
const cjs = require(require.resolve("msgpackr")) as typeof import("msgpackr");
const reference = new cjs.Unpackr({
  useRecords: false,
  moreTypes: false,
  mapsAsObjects: true,
  int64AsType: "number",
});

/** What each decoder gives for `bytes`: its value, or its error's message and `incomplete` flag. */
function outcome(decode: (b: Uint8Array) => unknown, bytes: Uint8Array): unknown {
  try {
    return { value: decode(bytes) };
  } catch (err) {
    const e = err as Error & { incomplete?: boolean };
    return { error: e.message, incomplete: e.incomplete };
  }
}

function expectSameDecode(bytes: Uint8Array): void {
  expect(outcome(unpackPlain, bytes)).toStrictEqual(outcome((b) => reference.unpack(b), bytes));
}

/** `bytes` at `offset` in a larger buffer with other bytes around it, as a record read from a segment. */
function inLargerBuffer(bytes: Uint8Array, offset: number, fill: number): Uint8Array {
  const whole = Buffer.alloc(offset + bytes.length + 64, fill);
  whole.set(bytes, offset);
  return whole.subarray(offset, offset + bytes.length);
}

/** A msgpack string header for `length` bytes, the smallest or a wider one (both valid msgpack). */
function strHeader(length: number, wide: number): number[] {
  if (length < 32 && wide === 0) return [0xa0 | length];
  if (length < 256 && wide <= 1) return [0xd9, length];
  if (length < 65536 && wide <= 2) return [0xda, length >> 8, length & 0xff];
  return [0xdb, length >>> 24, (length >> 16) & 0xff, (length >> 8) & 0xff, length & 0xff];
}

/** A map of raw string values (any bytes: invalid UTF-8 too) under ASCII keys, some repeated. */
function rawRecord(values: { bytes: Uint8Array; wide: number }[], pad: number): Uint8Array {
  const out: number[] = [0xde, 0, values.length + 1];
  const padKey = "padding-to-reach-the-extractor";
  out.push(0xa0 | padKey.length, ...Buffer.from(padKey));
  out.push(...strHeader(pad, 1), ...Buffer.alloc(pad, 0x78));
  values.forEach((v, i) => {
    const key = Buffer.from(`k${i}`);
    out.push(0xa0 | key.length, ...key);
    out.push(...strHeader(v.bytes.length, v.wide), ...v.bytes);
  });
  return Uint8Array.from(out);
}

/** Bytes likely to be (in)valid UTF-8: ASCII, leads, continuations, surrogates' and overlongs' bytes. */
const utf8ish = fc.oneof(
  fc.uint8Array({ maxLength: 300, size: "max" }),
  fc
    .array(
      fc.oneof(
        fc.integer({ min: 0x20, max: 0x7e }),
        fc.constantFrom(0x80, 0xbf, 0xc0, 0xc2, 0xdf, 0xe0, 0xa0, 0xed, 0xef, 0xf0, 0xf4, 0xf5, 0xff),
      ),
      { maxLength: 300, size: "max" },
    )
    .map((b) => Uint8Array.from(b)),
);

const text = fc.oneof(
  fc.string({ maxLength: 300, size: "max" }),
  fc.string({ unit: "grapheme", maxLength: 100, size: "max" }),
  fc.string({ unit: "binary", maxLength: 300, size: "max" }),
  fc.string({ unit: "binary", maxLength: 40 }),
  fc.string({ unit: "grapheme-ascii", minLength: 16, maxLength: 64 }),
  fc.uuid(),
  fc.constantFrom(
    "running",
    "pending",
    "complete",
    "ClientStatus",
    "default",
    "web",
    "ünïcødé",
    "日本語のタスク",
  ),
);

/** Records of strings and the other types around them, with repeated values (the intern cache's hits). */
const record = fc
  .tuple(
    fc.dictionary(fc.string({ maxLength: 40 }), fc.oneof(text, fc.integer(), fc.double(), fc.constant(null))),
    fc.array(text, { maxLength: 40 }),
    fc.array(fc.record({ ID: fc.uuid(), Name: text, ClientStatus: fc.constantFrom("running", "failed") }), {
      maxLength: 8,
    }),
  )
  .map(([map, list, allocs]) => ({ ...map, list, again: list, allocs, Allocs: allocs }));

describe("msgpack strings decoded by the codec's extractor", () => {
  it("is installed in msgpackr's decoder", () => {
    expect(isNativeAccelerationEnabled).toBe(true);
    expect(cjs.isNativeAccelerationEnabled).toBe(false);
  });

  it("decodes records as msgpackr's JS path does", () => {
    fc.assert(
      fc.property(record, fc.nat(40), fc.integer({ min: 0, max: 255 }), (value, offset, fill) => {
        const bytes = packPlain(value);
        expectSameDecode(bytes);
        expectSameDecode(inLargerBuffer(bytes, offset, fill));
      }),
      { numRuns: 300 },
    );
  });

  it("decodes every string length 0-300 and header width alike", () => {
    for (let length = 0; length <= 300; length++) {
      for (let wide = 0; wide <= 3; wide++) {
        const ascii = Buffer.alloc(length, 0x61 + (length % 26));
        const multi = Buffer.from("é".repeat(length)).subarray(0, length);
        for (const pad of [0, 200])
          expectSameDecode(
            rawRecord(
              [
                { bytes: ascii, wide },
                { bytes: multi, wide },
              ],
              pad,
            ),
          );
      }
    }
  });

  it("decodes any bytes, invalid UTF-8 included, as msgpackr's JS path does", () => {
    fc.assert(
      fc.property(
        fc.array(fc.record({ bytes: utf8ish, wide: fc.integer({ min: 0, max: 3 }) }), { maxLength: 12 }),
        fc.integer({ min: 0, max: 300 }),
        (values, pad) => expectSameDecode(rawRecord(values, pad)),
      ),
      { numRuns: 300 },
    );
  });

  it("fails on truncated input as msgpackr's JS path does", () => {
    fc.assert(
      fc.property(record, fc.double({ min: 0, max: 1, noNaN: true }), fc.nat(255), (value, at, fill) => {
        const bytes = packPlain(value);
        const cut = bytes.subarray(0, Math.floor(at * bytes.length));
        expectSameDecode(cut);
        // Bytes past the record's end are not the record's: the view must not read them.
        expectSameDecode(inLargerBuffer(cut, 3, fill));
      }),
      { numRuns: 300 },
    );
  });

  it("tells apart short strings that share a length and all but one byte (the intern cache's slots)", () => {
    // 30,000 strings in 4,096 slots: many land where a near twin was kept.
    for (const width of [1, 8, 15, 31, 32]) {
      const names = Array.from({ length: 30_000 }, (_, i) => {
        const n = i.toString(36);
        return `${"x".repeat(Math.max(0, width - n.length))}${n}`.slice(-width);
      });
      const bytes = packPlain({ names, again: names.slice().reverse() });
      expectSameDecode(bytes);
      expectSameDecode(bytes);
    }
  });

  it("makes no char-code array for a UUID (bytes allocated per string)", () => {
    const uuids = Array.from(
      { length: 64 },
      (_, i) => `${i.toString(16).padStart(8, "0")}-8d1c-4f0e-9d1b-6c3a2b1e0f${i}`,
    );
    const bytes = packPlain({ uuids });
    unpackPlain(bytes);
    const runs = 2_000;
    const { bytes: allocated } = allocatedDuring(() => {
      for (let i = 0; i < runs; i++) unpackPlain(bytes);
    });
    // A 36-byte string is about 56 bytes of heap; msgpackr's JS path makes
    // two or three arrays of char codes on the way, some 500 bytes more.
    expect(allocated / (runs * uuids.length)).toBeLessThan(200);
  });
});
