import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { allocClientUpdatedRecord, packUpdates } from "../../../src/api/client-rpc/alloc-update-record.ts";
import { EnvelopeCodec, packPlain } from "../../../src/codec/envelope-codec.ts";
import { arrayHeader, arrayHeaderLength } from "../../../src/codec/envelope-head.ts";
import type { Stamp } from "../../../src/store/writer.ts";
import type { ClientAllocUpdate } from "../../../streams/allocs.ts";
import { allSchemas } from "../../../streams/index.ts";

const codec = new EnvelopeCodec(allSchemas);

/** Numbers at msgpack's type edges: fixint, int8-64, uint8-64, float32/64, and the wide-integer pass's. */
const EDGES = [
  0,
  1,
  127,
  128,
  255,
  256,
  65_535,
  65_536,
  2 ** 31 - 1,
  2 ** 31,
  2 ** 32 - 1,
  2 ** 32,
  2 ** 53 - 1,
  2 ** 53 + 2,
  2 ** 63,
  2 ** 64 - 2048,
  2 ** 64,
  -1,
  -32,
  -33,
  -128,
  -129,
  -32_768,
  -32_769,
  -(2 ** 31),
  -(2 ** 31) - 1,
  -(2 ** 63),
  -(2 ** 63) - 2048,
  -0,
  0.5,
  1.5e-7,
  1e15 + 0.5,
  1_763_800_000_000,
  1_763_800_000_000_000_000,
  Number.NaN,
  Number.POSITIVE_INFINITY,
  Number.NEGATIVE_INFINITY,
  Number.MAX_VALUE,
  Number.MIN_VALUE,
];
const number = fc.oneof(fc.constantFrom(...EDGES), fc.integer(), fc.double());

/** Short and long (msgpackr packs 64 chars and more another way), ASCII and multi-byte, lone surrogates included. */
const text = fc.oneof(
  fc.string({ maxLength: 40 }),
  fc.string({ unit: "grapheme", maxLength: 40 }),
  fc.string({ unit: "binary", maxLength: 300 }),
  fc.string({ minLength: 30, maxLength: 300 }),
  // fast-check's units never give a half of a surrogate pair alone.
  fc.string({ unit: fc.constantFrom("\ud83d", "\ude00", "a", "é", "日"), maxLength: 80 }),
  fc.constantFrom(
    "",
    "ü",
    "日本語のテキスト",
    "😀".repeat(70),
    "a".repeat(31),
    "a".repeat(32),
    "a".repeat(255),
    "a".repeat(256),
  ),
);

const taskEvent = fc.record(
  {
    Type: text,
    Time: number,
    DisplayMessage: text,
    Message: text,
    Details: fc.dictionary(text, text, { maxKeys: 4 }),
    FailsTask: fc.boolean(),
    ExitCode: number,
    Signal: fc.option(number, { nil: undefined }),
  },
  // Optional fields absent, or present as undefined (the codec leaves both out).
  { requiredKeys: ["Type", "Time", "DisplayMessage", "Details"] },
);

const taskState = fc.record({
  State: fc.constantFrom("pending", "running", "dead"),
  Failed: fc.boolean(),
  Restarts: number,
  LastRestart: text,
  StartedAt: text,
  FinishedAt: text,
  Events: fc.array(taskEvent, { maxLength: 4 }),
  TaskHandle: fc.constant(null),
});

const update: fc.Arbitrary<ClientAllocUpdate> = fc.record({
  ID: text,
  NodeID: text,
  ClientStatus: fc.constantFrom("pending", "running", "complete", "failed", "lost"),
  ClientDescription: text,
  TaskStates: fc.option(fc.dictionary(text, taskState, { maxKeys: 3 }), { nil: null }),
  DeploymentStatus: fc.option(
    fc.record({
      Healthy: fc.option(fc.boolean(), { nil: null }),
      Timestamp: text,
      Canary: fc.boolean(),
      ModifyIndex: number,
    }),
    { nil: null },
  ),
  NetworkStatus: fc.option(fc.dictionary(text, fc.oneof(text, number, fc.constant(undefined))), {
    nil: null,
  }),
  ModifyTime: number,
});

/** A window's calls (each one node's updates) split into records, and the write's stamp. */
const window = fc.record({
  records: fc.array(
    fc.array(fc.array(update, { minLength: 1, maxLength: 20 }), { minLength: 1, maxLength: 5 }),
    {
      minLength: 1,
      maxLength: 3,
    },
  ),
  at: number,
  by: fc.option(
    fc.record({
      kind: fc.constantFrom("server", "node", "token"),
      id: text,
      name: fc.option(text, { nil: undefined }),
    }),
    { nil: undefined },
  ),
});

const stampOf = (at: number, by: Stamp["by"]): Stamp => ({ at, by });

describe("AllocClientUpdated records assembled from packed calls", () => {
  it("are byte for byte what the codec encodes for the same window", () => {
    fc.assert(
      fc.property(window, ({ records, at, by }) => {
        const stamp = stampOf(at, by);
        // Every call packed first, as the window's calls are, then the
        // expected records packed, then the records assembled: pieces kept
        // from earlier packs survive later ones.
        const pieces = records.map((calls) => calls.map(packUpdates));
        const expected = records.map((calls) =>
          Buffer.from(
            codec.encode({ type: "AllocClientUpdated", v: 1, at, by, data: { Allocs: calls.flat() } }),
          ).toString("hex"),
        );
        const assembled = pieces.map((p) =>
          Buffer.from(allocClientUpdatedRecord(p).encode(stamp)).toString("hex"),
        );
        expect(assembled).toEqual(expected);
      }),
      { numRuns: 200 },
    );
  });

  it("take each write's stamp, not the previous one's", () => {
    const calls = [packUpdates([{ ...fixed, ID: "a" }]), packUpdates([{ ...fixed, ID: "b" }])];
    const record = allocClientUpdatedRecord(calls);
    for (const at of [1_763_800_000_000, 1_763_800_000_001, 5]) {
      const by = { kind: "server" as const, id: `s${at}`, name: "client-alloc-updates" };
      const expected = codec.encode({
        type: "AllocClientUpdated",
        v: 1,
        at,
        by,
        data: {
          Allocs: [
            { ...fixed, ID: "a" },
            { ...fixed, ID: "b" },
          ],
        },
      });
      expect(Buffer.compare(record.encode(stampOf(at, by)), expected)).toBe(0);
    }
    expect(record.allocs).toBe(2);
  });

  it("count the items of windows past fixarray's 15 and array16's 65,535", () => {
    for (const n of [0, 1, 15, 16, 17, 64, 65_535, 65_536, 70_000]) {
      const packed = packPlain(new Array(n).fill(null));
      expect(arrayHeaderLength(n)).toBe(packed.length - n);
      expect([...arrayHeader(n)]).toEqual([...packed.subarray(0, packed.length - n)]);
    }
    const many = Array.from({ length: 70_000 }, (_, i) => ({ ...fixed, ID: `a${i}` }));
    const calls = [
      packUpdates(many.slice(0, 1)),
      packUpdates(many.slice(1, 65_536)),
      packUpdates(many.slice(65_536)),
    ];
    const stamp = stampOf(1_763_800_000_000, undefined);
    const expected = codec.encode({ type: "AllocClientUpdated", v: 1, at: stamp.at, data: { Allocs: many } });
    expect(Buffer.compare(allocClientUpdatedRecord(calls).encode(stamp), expected)).toBe(0);
  });
});

const fixed: ClientAllocUpdate = {
  ID: "x",
  NodeID: "n1",
  ClientStatus: "running",
  ClientDescription: "Tasks are running",
  TaskStates: null,
  DeploymentStatus: null,
  NetworkStatus: null,
  ModifyTime: 1_763_800_000_000_000_000,
};
