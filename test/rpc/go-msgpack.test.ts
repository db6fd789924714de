import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  decodeGo,
  encodeGo,
  GO_BYTES_FIELDS,
  GO_TIME_FIELDS,
  GoMsgpackReader,
  NEED_MORE,
} from "../../src/rpc/go-msgpack.ts";
import { buildGoCodec, GO_BUILD_TIMEOUT_MS, type GoCodec, hasGo, jsonLines, warnIfNoGo } from "./go-codec.ts";

const hex = (b: Uint8Array) => Buffer.from(b).toString("hex");
const bytes = (h: string) => Buffer.from(h.replace(/\s+/g, ""), "hex");
const str = (s: string) => Buffer.from(s);

/** A msgpack map written by hand, for forms this encoder never writes. */
function rawMap(entries: ReadonlyArray<readonly [string, Buffer]>): Buffer {
  return Buffer.concat([
    Buffer.from([0x80 | entries.length]),
    ...entries.flatMap(([k, v]) => [encodeGo(k), v]),
  ]);
}

describe("go-msgpack: the forms Nomad's MsgpackHandle writes", () => {
  it("writes strings as fixstr, str16 or str32, never str8", () => {
    expect(hex(encodeGo("abc"))).toBe("a3616263");
    expect(encodeGo("x".repeat(31))[0]).toBe(0xbf);
    expect(hex(encodeGo("x".repeat(32)).subarray(0, 3))).toBe("da0020");
    expect(hex(encodeGo("x".repeat(255)).subarray(0, 3))).toBe("da00ff");
    expect(hex(encodeGo("x".repeat(65_535)).subarray(0, 3))).toBe("daffff");
    expect(hex(encodeGo("x".repeat(65_536)).subarray(0, 5))).toBe("db00010000");
    // Byte length, not UTF-16 length, picks the form.
    expect(hex(encodeGo("é".repeat(15)).subarray(0, 1))).toBe("be");
    expect(hex(encodeGo("é".repeat(16)).subarray(0, 3))).toBe("da0020");
    expect(decodeGo(encodeGo("é€😀".repeat(20)))).toBe("é€😀".repeat(20));
  });

  it("writes signed integers with go-msgpack's EncodeInt forms", () => {
    const cases: Array<[number, string]> = [
      [0, "00"],
      [127, "7f"],
      [128, "d10080"],
      [200, "d100c8"],
      [32_767, "d17fff"],
      [32_768, "d200008000"],
      [2 ** 31, "d30000000080000000"],
      [-1, "ff"],
      [-32, "e0"],
      [-33, "d0df"],
      [-128, "d080"],
      [-129, "d1ff7f"],
      [-32_769, "d2ffff7fff"],
      [-(2 ** 31) - 1, "d3ffffffff7fffffff"],
      [Number(1_688_214_896_123_456_768n), "d3176dbe80e3f62d00"],
    ];
    for (const [n, want] of cases) expect(hex(encodeGo(n)), String(n)).toBe(want);
    expect(hex(encodeGo(2n ** 63n - 1n))).toBe("d37fffffffffffffff");
    expect(hex(encodeGo(-(2n ** 63n)))).toBe("d38000000000000000");
  });

  it("writes unsigned fields with uint forms and float64 fields as float64", () => {
    expect(hex(encodeGo({ ModifyIndex: 200 }))).toBe("81ab4d6f64696679496e646578ccc8");
    expect(hex(encodeGo({ Index: 70_000 }))).toBe("81a5496e646578ce00011170");
    expect(hex(encodeGo({ Index: 5_000_000_000 }))).toBe("81a5496e646578cf000000012a05f200");
    expect(hex(encodeGo({ Index: 2n ** 64n - 1n }))).toBe("81a5496e646578cfffffffffffffffff");
    expect(hex(encodeGo({ Index: -1 }))).toBe("81a5496e646578ff");
    expect(hex(encodeGo({ NormScore: 1 }))).toBe("81a94e6f726d53636f7265cb3ff0000000000000");
    expect(hex(encodeGo({ Scores: { binpack: 0 } }))).toBe(
      "81a653636f72657381a762696e7061636bcb0000000000000000",
    );
    expect(hex(encodeGo(0.5))).toBe("cb3fe0000000000000");
    expect(hex(encodeGo({ Allocs: { a: 300 } }))).toBe("81a6416c6c6f637381a161cd012c");
  });

  it("writes nil for null and skips undefined properties", () => {
    expect(hex(encodeGo(null))).toBe("c0");
    expect(hex(encodeGo({ a: undefined, b: null }))).toBe("81a162c0");
    expect(hex(encodeGo([]))).toBe("90");
    expect(hex(encodeGo({}))).toBe("80");
    expect(hex(encodeGo([true, false]))).toBe("92c3c2");
  });
});

describe("go-msgpack: times and bytes by field name", () => {
  it("writes time.Time fields as Go's MarshalBinary bytes in a raw string", () => {
    expect(hex(encodeGo({ StartedAt: "0001-01-01T00:00:00Z" }))).toBe(
      "81a9537461727465644174" + "af01" + "0000000000000000" + "00000000" + "ffff",
    );
    // 2023-07-01T12:34:56.123456789Z: seconds since year 1, nanoseconds, UTC (-1).
    expect(hex(encodeGo({ Timestamp: "2023-07-01T12:34:56.123456789Z" }).subarray(11))).toBe(
      "af01" + "0000000edc321470" + "075bcd15" + "ffff",
    );
    // A numeric offset keeps its minutes; "+00:00" is offset 0, not UTC, as time.Parse reads it.
    expect(hex(encodeGo({ Time: "2024-02-29T23:59:59+05:30" }).subarray(-2))).toBe("014a");
    expect(hex(encodeGo({ Time: "2024-02-29T23:59:59-07:00" }).subarray(-2))).toBe("fe5c");
    expect(hex(encodeGo({ Time: "2024-02-29T23:59:59+00:00" }).subarray(-2))).toBe("0000");
    expect(() => encodeGo({ StartedAt: "yesterday" })).toThrow(/StartedAt: not an RFC 3339 time/);
    expect(() => encodeGo({ StartedAt: "2023-02-29T00:00:00Z" })).toThrow(/RFC 3339/);
    // Same name, int64 field elsewhere (TaskEvent.Time): numbers stay numbers.
    expect(hex(encodeGo({ Time: 5 }))).toBe("81a454696d6505");
  });

  it("reads Go time binary as encoding/json renders time.Time", () => {
    const cases = [
      "0001-01-01T00:00:00Z",
      "2023-07-01T12:34:56.123456789Z",
      "2023-07-01T12:34:56.1Z",
      "2023-07-01T07:00:00.000005-07:00",
      "2024-02-29T23:59:59+05:30",
      "1969-12-31T23:59:59.999999999Z",
      "9999-12-31T23:59:59Z",
      "2000-01-01T00:00:00-00:30",
    ];
    for (const text of cases) expect(decodeGo(encodeGo({ FinishedAt: text }))).toEqual({ FinishedAt: text });
    // Offset 0 (from "+00:00") renders as "Z", as Go does.
    expect(decodeGo(encodeGo({ FinishedAt: "2024-01-01T00:00:00+00:00" }))).toEqual({
      FinishedAt: "2024-01-01T00:00:00Z",
    });
    // Version 2 (an offset with seconds): Go's JSON drops the seconds.
    const v2 = rawMap([["ForceDeadline", bytes("b0 02 0000000de118c0e5 00000000 004b 07")]]);
    expect(decodeGo(v2)).toEqual({ ForceDeadline: "1890-01-01T00:00:00+01:15" });
    // bin and str8 forms of the same bytes.
    const binary = bytes("01 0000000edc321470 075bcd15 ffff");
    expect(decodeGo(rawMap([["UpdateTime", Buffer.concat([bytes("c40f"), binary])]]))).toEqual({
      UpdateTime: "2023-07-01T12:34:56.123456789Z",
    });
    expect(decodeGo(rawMap([["UpdateTime", Buffer.concat([bytes("d90f"), binary])]]))).toEqual({
      UpdateTime: "2023-07-01T12:34:56.123456789Z",
    });
    // msgpack's timestamp extension (not written by Go's handle) reads as UTC time.
    expect(decodeGo(bytes("d6ff 64a01d70"))).toBe("2023-07-01T12:34:56Z");
  });

  it("writes []byte fields from base64 and reads them back as base64", () => {
    const encoded = encodeGo({ Payload: "AP8QaGmAwA==" });
    expect(hex(encoded)).toBe("81a75061796c6f6164a700ff10686980c0");
    expect(decodeGo(encoded)).toEqual({ Payload: "AP8QaGmAwA==" });
    expect(decodeGo(encodeGo({ Payload: "" }))).toEqual({ Payload: "" });
    expect(decodeGo(encodeGo({ Payload: null }))).toEqual({ Payload: null });
    // bin (never from Go's handle) reads as base64 anywhere.
    expect(decodeGo(bytes("c403 00ff10"))).toBe("AP8Q");
    // ParameterizedJobConfig.Payload is a string next to Job.Payload bytes.
    const job = { Payload: "aGk=", ParameterizedJob: { Payload: "optional" } };
    expect(hex(encodeGo(job))).toContain(hex(Buffer.concat([encodeGo("Payload"), encodeGo("optional")])));
    expect(decodeGo(encodeGo(job))).toEqual(job);
  });

  it("leaves user map keys and opaque config alone", () => {
    const job = {
      Meta: { StartedAt: "2023-07-01T12:34:56Z", Payload: "aGk=" },
      TaskGroups: [
        {
          Tasks: [
            {
              Config: { Payload: "not base64!", nested: [{ Timestamp: "x", n: 3 }] },
              Env: { UpdateTime: "soon" },
            },
          ],
        },
      ],
    };
    expect(decodeGo(encodeGo(job))).toEqual(job);
    const node = {
      Attributes: { UpdateTime: "now" },
      Drivers: { Timestamp: { UpdateTime: "2023-07-01T12:00:00Z" } },
    };
    const encoded = encodeGo(node);
    expect(decodeGo(encoded)).toEqual(node);
    // The driver's UpdateTime (a struct field under a user key) is still a time.
    expect(hex(encoded)).toContain("af01");
  });

  it("lists the time and []byte field names", () => {
    for (const name of [
      "StartedAt",
      "FinishedAt",
      "LastRestart",
      "Timestamp",
      "UpdateTime",
      "Time",
      "ForceDeadline",
    ]) {
      expect(GO_TIME_FIELDS.has(name), name).toBe(true);
    }
    expect(GO_BYTES_FIELDS.has("Payload")).toBe(true);
    expect(GO_BYTES_FIELDS.has("Key")).toBe(false);
  });
});

describe("go-msgpack: reading", () => {
  it("accepts every string form and reads integers of every width", () => {
    expect(decodeGo(bytes("d903616263"))).toBe("abc");
    expect(decodeGo(bytes("c403616263"))).toBe("YWJj");
    expect(decodeGo(bytes("cf000000012a05f200"))).toBe(5_000_000_000);
    expect(decodeGo(bytes("d3ffffffff7fffffff"))).toBe(-(2 ** 31) - 1);
    expect(decodeGo(bytes("ca3e800000"))).toBe(0.25);
    // Beyond 2^53: the nearest double.
    expect(decodeGo(bytes("d3176dbe80e3f62d15"))).toBe(Number(1_688_214_896_123_456_789n));
    expect(decodeGo(bytes("cfffffffffffffffff"))).toBe(2 ** 64);
  });

  it("rejects truncated values, trailing bytes and invalid bytes", () => {
    expect(() => decodeGo(bytes("a3 6162"))).toThrow(/truncated/);
    expect(() => decodeGo(bytes("01 02"))).toThrow(/after the value/);
    expect(() => decodeGo(bytes("c1"))).toThrow(/invalid byte/);
  });

  it("keeps a __proto__ key as data", () => {
    const decoded = decodeGo(rawMap([["__proto__", encodeGo("x")]])) as Record<string, unknown>;
    expect(Object.getPrototypeOf(decoded)).toBe(Object.prototype);
    expect(Object.keys(decoded)).toEqual(["__proto__"]);
    expect(Object.getOwnPropertyDescriptor(decoded, "__proto__")?.value).toBe("x");
  });

  it("reads values split across chunks at any point, and several in one chunk", () => {
    const values = [
      { ServiceMethod: "Node.Register", Seq: 1 },
      {
        Node: { ID: "n1", Events: [{ Timestamp: "2023-07-01T12:00:00Z" }] },
        Payload: "AAEC",
        Big: "x".repeat(70_000),
      },
      null,
      7,
    ];
    const stream = Buffer.concat(values.map((v) => encodeGo(v)));
    for (const split of [1, 2, 3, 7, 100, 65_537, stream.length - 1]) {
      const reader = new GoMsgpackReader();
      const got: unknown[] = [];
      for (let i = 0; i < stream.length; i += split) {
        reader.push(stream.subarray(i, i + split));
        for (let v = reader.next(); v !== NEED_MORE; v = reader.next()) got.push(v);
      }
      expect(got, `chunks of ${split}`).toEqual(values);
      expect(reader.buffered).toBe(0);
    }
    const oneByte = new GoMsgpackReader();
    const got: unknown[] = [];
    for (const b of stream.subarray(0, 300)) {
      oneByte.push(Uint8Array.of(b));
      for (let v = oneByte.next(); v !== NEED_MORE; v = oneByte.next()) got.push(v);
    }
    expect(got).toEqual([values[0]]);
    expect(oneByte.takeBuffered().length).toBe(300 - encodeGo(values[0]).length);
  });
});

/** An allocation-shaped value of about 100 KB of msgpack. */
function largeAllocation(): Record<string, unknown> {
  const task = (i: number) => ({
    Name: `task-${i}`,
    Driver: "docker",
    User: "",
    Config: { image: "redis:7", args: ["--port", 6379 + i, 1.5], nested: { a: { b: [1, "x", true, null] } } },
    Env: { A: "1", B: "two" },
    Resources: { CPU: 500, MemoryMB: 256, Networks: null },
    KillTimeout: 5_000_000_000,
    Meta: null,
  });
  const state = (i: number) => ({
    State: "running",
    Failed: false,
    Restarts: i,
    LastRestart: "0001-01-01T00:00:00Z",
    StartedAt: "2023-07-01T12:34:56.123456789Z",
    FinishedAt: "2023-07-01T07:00:00.000005-07:00",
    Events: [
      {
        Type: "Received",
        Time: Number(1_688_214_896_123_456_768n),
        Message: "",
        DisplayMessage: "Task received by client",
      },
      { Type: "Started", Time: Number(1_688_214_896_123_457_024n), Details: { exit_code: "0" }, ExitCode: 0 },
    ],
  });
  const tasks = Array.from({ length: 200 }, (_, i) => task(i));
  return {
    ID: "a8198d79-cfdb-6593-a999-1e9adabcba2e",
    Namespace: "default",
    Job: {
      ID: "example",
      Payload: "AP8QaGmAwA==",
      ParameterizedJob: { Payload: "optional" },
      TaskGroups: [{ Name: "cache", Count: 1, Tasks: tasks, RestartPolicy: { Interval: 1_800_000_000_000 } }],
      ModifyIndex: 70_000,
    },
    TaskStates: Object.fromEntries(tasks.map((t, i) => [t.Name, state(i)])),
    AllocStates: [{ Field: 0, Value: "lost", Time: "2024-02-29T23:59:59+05:30" }],
    Metrics: {
      ScoreMetaData: [{ NodeID: "n1", Scores: { binpack: 0.5 }, NormScore: 1 }],
      AllocationTime: 152_000,
    },
    CreateIndex: 11,
    ModifyIndex: 12,
  };
}

describe("go-msgpack: speed", () => {
  it("encodes and decodes a 100 KB allocation in well under a few milliseconds", () => {
    const alloc = largeAllocation();
    const encoded = encodeGo(alloc);
    expect(encoded.length).toBeGreaterThan(90_000);
    expect(decodeGo(encoded)).toEqual(alloc);
    const time = (fn: () => void) => {
      for (let i = 0; i < 200; i++) fn();
      const rounds = 200;
      const start = process.hrtime.bigint();
      for (let i = 0; i < rounds; i++) fn();
      return Number(process.hrtime.bigint() - start) / 1e6 / rounds;
    };
    const encodeMs = time(() => encodeGo(alloc));
    const decodeMs = time(() => decodeGo(encoded));
    console.log(
      `go-msgpack: ${encoded.length} byte allocation: encode ${encodeMs.toFixed(3)} ms, decode ${decodeMs.toFixed(3)} ms`,
    );
    // Generous bounds: the machine is shared; the point is no pathological slowness.
    expect(encodeMs).toBeLessThan(10);
    expect(decodeMs).toBeLessThan(10);
  });
});

warnIfNoGo("go-msgpack tests against Go");

interface Vector {
  name: string;
  type: string;
  bytesComparable: boolean;
  hex: string;
  canonicalHex: string;
  json: Record<string, unknown>;
}

/** Sorts object keys at every level, as go-msgpack's reflection encoder orders struct fields (and Canonical, map keys). */
function sortKeysDeep(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeysDeep);
  if (value !== null && typeof value === "object") {
    const sorted: Record<string, unknown> = {};
    for (const k of Object.keys(value).sort())
      sorted[k] = sortKeysDeep((value as Record<string, unknown>)[k]);
    return sorted;
  }
  return value;
}

/** Allocation's msgpack omits empty fields (its `_struct bool codec:",omitempty"`), its JSON does not. */
function withoutEmptyFields(alloc: Record<string, unknown>): Record<string, unknown> {
  const isEmpty = (v: unknown) =>
    v === null ||
    v === 0 ||
    v === "" ||
    v === false ||
    (Array.isArray(v) && v.length === 0) ||
    (typeof v === "object" && v !== null && Object.keys(v).length === 0);
  return Object.fromEntries(Object.entries(alloc).filter(([, v]) => !isEmpty(v)));
}

function expectedDecoding(vector: Vector): unknown {
  const json = vector.json;
  if (vector.type === "Allocation") return withoutEmptyFields(json);
  if (vector.type === "AllocsGetResponse") {
    return { ...json, Allocs: (json.Allocs as Record<string, unknown>[]).map(withoutEmptyFields) };
  }
  return json;
}

describe.skipIf(!hasGo)("go-msgpack against Go's go-msgpack with Nomad's handle settings", () => {
  let go: GoCodec;
  let vectors: Vector[];

  /** Decodes each msgpack value in Go into `type`, returning Go's JSON (raw text) or its error. */
  async function goDecode(items: ReadonlyArray<{ type: string; bytes: Uint8Array }>) {
    const input = items.map((i) => JSON.stringify({ type: i.type, hex: hex(i.bytes) })).join("\n");
    const lines = (await go.run(["decode"], input)).trim().split("\n");
    return lines.map((line) => {
      const parsed = JSON.parse(line) as { json?: unknown; error?: string };
      // encoding/json sorts map keys: {"canonicalHex":...,"json":...}
      const rawJson = /,"json":(.*)\}$/.exec(line)?.[1];
      return { ...parsed, rawJson };
    });
  }

  beforeAll(async () => {
    go = await buildGoCodec();
    vectors = jsonLines(await go.run(["vectors"])) as Vector[];
  }, GO_BUILD_TIMEOUT_MS + 30_000);

  afterAll(() => go?.dispose());

  it("decodes Go-encoded values as Go's encoding/json renders them", () => {
    expect(vectors.map((v) => v.name)).toContain("big_alloc");
    for (const vector of vectors) {
      expect(decodeGo(bytes(vector.hex)), vector.name).toEqual(expectedDecoding(vector));
    }
    const bigAlloc = vectors.find((v) => v.name === "big_alloc")!;
    expect(bigAlloc.hex.length / 2).toBeGreaterThan(50_000);
  });

  it("writes the bytes Go writes for the same values", () => {
    const comparable = vectors.filter((v) => v.bytesComparable);
    expect(comparable.length).toBeGreaterThanOrEqual(7);
    for (const vector of comparable) {
      // Go's JSON has struct fields in declaration order (codecgen's order) and map keys
      // sorted; sorted throughout, it matches the reflection encoder with sorted maps.
      expect(hex(encodeGo(sortKeysDeep(vector.json))), vector.name).toBe(vector.canonicalHex);
    }
  });

  it("writes values Go decodes back to the same structs", async () => {
    // numbers: holds int64/uint64 values a double cannot carry (covered below).
    const roundTrip = vectors.filter((v) => v.name !== "numbers");
    const decoded = await goDecode(roundTrip.map((v) => ({ type: v.type, bytes: encodeGo(v.json) })));
    roundTrip.forEach((vector, i) => {
      expect(decoded[i]?.error, vector.name).toBeUndefined();
      expect(decoded[i]?.json, vector.name).toEqual(vector.json);
    });
  });

  it("matches Go's decoder on numeric conversions, string forms, nil and unknown keys", async () => {
    const cases: Array<{ name: string; bytes: Buffer }> = [
      { name: "int into float64", bytes: rawMap([["Float", encodeGo(2)]]) },
      { name: "float into int", bytes: rawMap([["Int", encodeGo(1.5)]]) },
      { name: "integral float into int", bytes: rawMap([["Int", bytes("cb4000000000000000")]]) },
      { name: "uint form into int64", bytes: rawMap([["Int64", bytes("cc c8")]]) },
      { name: "negative into uint64", bytes: rawMap([["Uint64", encodeGo(-1)]]) },
      { name: "str8 into string", bytes: rawMap([["Text", Buffer.concat([bytes("d903"), str("abc")])]]) },
      { name: "bin into string", bytes: rawMap([["Text", Buffer.concat([bytes("c403"), str("abc")])]]) },
      { name: "str into []byte", bytes: rawMap([["Bytes", encodeGo("hi")]]) },
      { name: "bin into []byte", bytes: rawMap([["Bytes", Buffer.concat([bytes("c402"), str("hi")])]]) },
      {
        name: "nil into slice, map, pointer, string, int",
        bytes: rawMap([
          ["Slice", encodeGo(null)],
          ["Map", encodeGo(null)],
          ["Ptr", encodeGo(null)],
          ["Text", encodeGo(null)],
          ["Int", encodeGo(null)],
        ]),
      },
      { name: "empty slice and map", bytes: encodeGo({ Slice: [], Map: {}, Bytes: "" }) },
      {
        name: "unknown keys",
        bytes: encodeGo({ Nope: { deep: [1, { x: "y" }] }, Int: 3, Other: "2023-07-01T12:00:00Z" }),
      },
      {
        name: "bigint beyond 2^53",
        bytes: encodeGo({ Int64: 9_007_199_254_740_993n, Uint64: 2n ** 64n - 1n }),
      },
      { name: "duration", bytes: encodeGo({ Duration: -1_000_000_000 }) },
      { name: "interface{}", bytes: encodeGo({ Any: { n: 3, f: 0.5, l: [1, "a", null, { m: true }] } }) },
    ];
    const results = await goDecode(cases.map((c) => ({ type: "Numbers", bytes: c.bytes })));
    const byName = new Map(cases.map((c, i) => [c.name, results[i]!]));
    const field = (name: string, key: string) =>
      (byName.get(name)?.json as Record<string, unknown> | undefined)?.[key];

    expect(field("int into float64", "Float")).toBe(2);
    expect(byName.get("float into int")?.error).toMatch(/cannot decode signed integer/);
    expect(byName.get("integral float into int")?.error).toMatch(/cannot decode signed integer/);
    expect(field("uint form into int64", "Int64")).toBe(200);
    expect(byName.get("negative into uint64")?.error).toMatch(/negative/);
    expect(field("str8 into string", "Text")).toBe("abc");
    expect(field("bin into string", "Text")).toBe("abc");
    expect(field("str into []byte", "Bytes")).toBe("aGk=");
    expect(field("bin into []byte", "Bytes")).toBe("aGk=");
    expect(byName.get("nil into slice, map, pointer, string, int")?.json).toMatchObject({
      Slice: null,
      Map: null,
      Ptr: null,
      Text: "",
      Int: 0,
    });
    expect(byName.get("empty slice and map")?.json).toMatchObject({ Slice: [], Map: {}, Bytes: "" });
    expect(byName.get("unknown keys")?.error).toBeUndefined();
    expect(field("unknown keys", "Int")).toBe(3);
    expect(byName.get("bigint beyond 2^53")?.rawJson).toContain('"Int64":9007199254740993');
    expect(byName.get("bigint beyond 2^53")?.rawJson).toContain('"Uint64":18446744073709551615');
    expect(field("duration", "Duration")).toBe(-1_000_000_000);
    expect(field("interface{}", "Any")).toEqual({ n: 3, f: 0.5, l: [1, "a", null, { m: true }] });
  });

  it("decodes Go's numbers vector: widths, the int64/uint64 a double rounds, empty vs nil", () => {
    const numbers = vectors.find((v) => v.name === "numbers")!;
    const decoded = decodeGo(bytes(numbers.hex)) as Record<string, unknown>;
    expect(decoded).toMatchObject({
      Float: 2,
      Float32: 0.25,
      Int: -129,
      Int8: -128,
      Uint8: 255,
      Duration: -1e9,
    });
    expect(decoded.Int64).toBe(Number(1_688_214_896_123_456_789n)); // the nearest double
    expect(decoded.Uint64).toBe(2 ** 64);
    expect(decoded).toMatchObject({ Bytes: "", Slice: [], Map: null, Ptr: null, Text: "é".repeat(40) });
    expect(decoded.Any).toEqual({ i: 7, u: 300, f: 0.5, s: "x", l: [-1] });
  });
});
