import { existsSync } from "node:fs";
import { readdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { Unpackr } from "msgpackr";
import { describe, expect, it } from "vitest";
import { CodecError, EnvelopeCodec } from "../../src/codec/envelope-codec.ts";
import { isWideInteger, widenIntegralFloats } from "../../src/codec/wide-integers.ts";
import type { Envelope } from "../../streams/event-schema.ts";
import { allSchemas } from "../../streams/index.ts";
import { eventSamples } from "./event-samples.ts";
import { compactPlanSample } from "./job-samples.ts";

const FIXTURES = join(import.meta.dirname, "../fixtures/events");
/** The same samples as written before integers past 32 bits became msgpack int64 (they were float64s). */
const FLOAT64_FIXTURES = join(FIXTURES, "float64");
const codec = new EnvelopeCodec(allSchemas);

describe("envelope codec: golden fixtures", () => {
  it("has a sample for every event type at its current version", () => {
    const sampled = new Set(eventSamples.map((e) => `${e.type}.v${e.v}`));
    const missing = allSchemas.map((s) => `${s.type}.v${s.version}`).filter((k) => !sampled.has(k));
    expect(missing, "add a sample to test/codec/event-samples.ts").toEqual([]);
  });

  for (const sample of eventSamples) {
    const file = join(FIXTURES, `${sample.type}.v${sample.v}.msgpack`);
    it(`${sample.type} v${sample.v} encodes to the pinned bytes and back`, async () => {
      const bytes = codec.encode(sample);
      if (process.env.UPDATE_GOLDEN === "1" && !existsSync(file)) await writeFile(file, bytes);
      expect(existsSync(file), `missing ${file}: run UPDATE_GOLDEN=1 npx vitest run test/codec`).toBe(true);
      const pinned = await readFile(file);
      expect(Buffer.from(bytes).toString("hex")).toBe(pinned.toString("hex"));
      expect(codec.decode(pinned)).toEqual(sample);
    });
  }

  it("writes plain msgpack that a decoder without msgpackr extensions reads", async () => {
    const plain = new Unpackr({ useRecords: false, mapsAsObjects: true, int64AsType: "number" });
    for (const sample of eventSamples) {
      const bytes = await readFile(join(FIXTURES, `${sample.type}.v${sample.v}.msgpack`));
      // No ext types (0xc7-0xc9, 0xd4-0xd8) anywhere: only spec msgpack.
      expect(plain.unpack(bytes)).toEqual(sample);
    }
  });

  it("writes every integer past 32 bits as a msgpack integer, which a BigInt reader gets exactly", async () => {
    const exact = new Unpackr({ useRecords: false, mapsAsObjects: true, int64AsType: "bigint" });
    let wide = 0;
    const asBigInts = (x: unknown): unknown => {
      if (typeof x === "number" && isWideInteger(x)) {
        wide++;
        return BigInt(x);
      }
      if (Array.isArray(x)) return x.map(asBigInts);
      if (typeof x === "object" && x !== null)
        return Object.fromEntries(Object.entries(x).map(([k, v]) => [k, asBigInts(v)]));
      return x;
    };
    for (const sample of eventSamples) {
      const bytes = await readFile(join(FIXTURES, `${sample.type}.v${sample.v}.msgpack`));
      expect(exact.unpack(bytes), sample.type).toEqual(asBigInts(sample));
    }
    // `at` of every sample, and nanosecond times such as RootKeyCreated's CreateTime.
    expect(wide).toBeGreaterThan(eventSamples.length);
  });
});

describe("envelope codec: records written with float64 integers", () => {
  const samples = new Map<string, Envelope>(eventSamples.map((e) => [`${e.type}.v${e.v}.msgpack`, e]));
  samples.set("AllocsPlanApplied.v1.compact.msgpack", compactPlanSample);

  it("still decode to the same values, and are the int64 bytes but for the integers' encoding", async () => {
    const names = (await readdir(FLOAT64_FIXTURES)).filter((n) => n.endsWith(".msgpack"));
    expect(names.length).toBeGreaterThan(0);
    let compared = 0;
    for (const name of names) {
      const old = await readFile(join(FLOAT64_FIXTURES, name));
      // Each holds at least `at` (unix ms, past 2^32) as a float64.
      expect(old.includes(0xcb), name).toBe(true);
      const decoded = codec.decode(old);
      const sample = samples.get(name);
      if (!sample) continue; // a sample that has since moved to a newer version
      expect(decoded, name).toEqual(sample);
      const current = await readFile(join(FIXTURES, name));
      expect(Buffer.from(widenIntegralFloats(Uint8Array.from(old))).toString("hex"), name).toBe(
        current.toString("hex"),
      );
      compared++;
    }
    expect(compared).toBeGreaterThan(0);
  });
});

describe("envelope codec: versions", () => {
  const schemas = [
    {
      type: "Renamed",
      version: 3,
      upcast: {
        1: (d: unknown) => ({ Name: (d as { name: string }).name }),
        2: (d: unknown) => ({ ...(d as object), Meta: {} }),
      },
    },
  ];
  const versioned = new EnvelopeCodec(schemas);
  const v1Writer = new EnvelopeCodec([{ type: "Renamed", version: 1 }]);

  it("lifts an old version to the current shape when read", () => {
    const old = v1Writer.encode({ type: "Renamed", v: 1, at: 5, data: { name: "x" } });
    expect(versioned.decode(old)).toEqual({ type: "Renamed", v: 3, at: 5, data: { Name: "x", Meta: {} } });
  });

  it("refuses to write anything but the current version", () => {
    expect(() => versioned.encode({ type: "Renamed", v: 2, at: 1, data: {} })).toThrow(
      /must be written at v3/,
    );
  });

  it("refuses a version newer than it knows, and unknown types, naming them", () => {
    const newer = new EnvelopeCodec([
      { type: "Renamed", version: 4, upcast: { 1: (d) => d, 2: (d) => d, 3: (d) => d } },
    ]);
    const bytes = newer.encode({ type: "Renamed", v: 4, at: 1, data: {} });
    expect(() => versioned.decode(bytes)).toThrow(/Renamed v4 is newer than this server understands \(v3\)/);
    expect(() => codec.decode(bytes)).toThrow(/unknown event type Renamed/);
    expect(() => codec.decode(new Uint8Array([0xc1]))).toThrow(CodecError);
  });

  it("decodes a record that is a view into a larger buffer, and only its own bytes", () => {
    const a = codec.encode({ type: "NamespaceDeleted", v: 1, at: 1, data: { Name: "a" } });
    const b = codec.encode({ type: "NamespaceDeleted", v: 1, at: 2, data: { Name: "b" } });
    const chunk = Buffer.concat([Buffer.from([0xff, 0xff]), a, b]);
    const first = chunk.subarray(2, 2 + a.length);
    const second = chunk.subarray(2 + a.length);
    expect(codec.decode(second).data).toEqual({ Name: "b" });
    expect(codec.decode(first).data).toEqual({ Name: "a" });
    // Cut short inside a buffer whose next bytes are another record: still refused.
    expect(() => codec.decode(chunk.subarray(2, 2 + a.length - 1))).toThrow(CodecError);
    expect(() => codec.decode(chunk.subarray(2, 2))).toThrow(CodecError);
    expect(() => codec.decode(chunk.subarray(0, 0))).toThrow(CodecError);
  });

  it("refuses a schema with a missing upcaster", () => {
    expect(() => new EnvelopeCodec([{ type: "Gap", version: 2 }])).toThrow(/no upcaster from v1 to v2/);
  });

  it("leaves undefined fields out, so a decoded row encodes identically", () => {
    const a = codec.encode({
      type: "NamespaceDeleted",
      v: 1,
      at: 1,
      by: undefined,
      data: { Name: "n", Extra: undefined },
    });
    const b = codec.encode({ type: "NamespaceDeleted", v: 1, at: 1, data: { Name: "n" } });
    expect(Buffer.from(a).equals(Buffer.from(b))).toBe(true);
  });
});
