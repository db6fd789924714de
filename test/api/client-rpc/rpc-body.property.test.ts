import { randomUUID } from "node:crypto";
import fc from "fast-check";
import { pack } from "msgpackr";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { unpackPlain } from "../../../src/codec/envelope-codec.ts";
import { VirtualClock } from "../../../src/util/clock.ts";
import { startTestServer, type TestServer } from "../../server-harness.ts";

/**
 * Hardening: whatever body a client sends to /v1/rpc/<Service.Method>, JSON
 * or msgpack, well-formed or not, the answer is a 4xx (or a 2xx for a read),
 * never a 5xx; the server keeps answering; and nothing is appended to the log
 * (no request here carries the one node's real secret, so none may write).
 */

/** numRuns, multiplied by PROPERTY_RUNS_SCALE for a longer soak run (the default stays quick). */
const runs = (n: number) => ({ numRuns: n * Math.max(1, Number(process.env.PROPERTY_RUNS_SCALE) || 1) });

const METHODS = [
  "Node.Register",
  "Node.UpdateStatus",
  "Node.UpdateAlloc",
  "Node.GetClientAllocs",
  "Node.Deregister",
  "Node.EmitEvents",
  "Alloc.GetAllocs",
  "Node.NoSuchMethod",
] as const;
type Method = (typeof METHODS)[number];

const NODE_ID = randomUUID();
const NODE_SECRET = randomUUID();

let server: TestServer;
let baseline: { lastIndex: number; applied: number; hash: unknown };

async function stateHash(): Promise<{ Index: number; Hash: unknown }> {
  const res = await server.call("/v1/operator/state-hash");
  expect(res.status).toBe(200);
  return (await res.json()) as { Index: number; Hash: unknown };
}

beforeAll(async () => {
  // Virtual time: no heartbeat deadline passes (and writes) while the test runs.
  server = await startTestServer({ deps: { clock: new VirtualClock() } });
  const reg = await server.call("/v1/rpc/Node.Register", {
    method: "PUT",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({
      Node: {
        ID: NODE_ID,
        SecretID: NODE_SECRET,
        Datacenter: "dc1",
        Name: "fuzz-target",
        Attributes: { "kernel.name": "linux" },
        Status: "initializing",
      },
    }),
  });
  expect(reg.status).toBe(200);
  const hash = await stateHash();
  expect(hash.Index).toBe(server.log.lastIndex());
  baseline = { lastIndex: server.log.lastIndex(), applied: server.store.appliedIndex, hash: hash.Hash };
});

afterAll(async () => {
  await server?.stop();
});

const isObject = (v: unknown): v is Record<string, unknown> =>
  v !== null && typeof v === "object" && !Array.isArray(v);

/**
 * Keeps a generated body from doing what a legitimate client may do, so that
 * "nothing is written" holds for every body:
 * - Node.Register is trust on first use: a well-formed registration of a new
 *   node ID is rightly written. Its Node.ID is pointed at the existing node,
 *   whose secret no generated body knows, so such a registration is refused.
 * - Blocking reads wait up to 5 minutes for MinQueryIndex; a generated one
 *   is given a 1 ms MaxQueryTime so it cannot hold the test.
 * Returns the body unchanged (same object) when neither applies.
 */
function neutralize(method: Method, body: unknown): unknown {
  if (!isObject(body)) return body;
  if (method === "Node.Register" && isObject(body.Node) && body.Node.ID !== NODE_ID) {
    return { ...body, Node: { ...body.Node, ID: NODE_ID } };
  }
  if ((method === "Node.GetClientAllocs" || method === "Alloc.GetAllocs") && "MinQueryIndex" in body) {
    return { ...body, MaxQueryTime: 1_000_000 };
  }
  return body;
}

async function send(method: Method, body: Uint8Array | string, contentType: string, verb: string) {
  const res = await server.call(`/v1/rpc/${method}`, {
    method: verb,
    headers: { "content-type": contentType },
    body,
    signal: AbortSignal.timeout(15_000),
  });
  const text = await res.text();
  if (res.status >= 500) {
    throw new Error(`${verb} ${method} answered ${res.status}: ${text}`);
  }
  return res.status;
}

async function expectUnchanged(): Promise<void> {
  const leader = await server.call("/v1/status/leader");
  expect(leader.status).toBe(200);
  expect(server.log.lastIndex()).toBe(baseline.lastIndex);
  expect(server.store.appliedIndex).toBe(baseline.applied);
  const hash = await stateHash();
  expect(hash.Index).toBe(baseline.lastIndex);
  expect(hash.Hash).toEqual(baseline.hash);
}

// ---- arbitraries ----

const method = fc.constantFrom(...METHODS);
const verb = fc.constantFrom("PUT", "POST");

/** Field names the request structs have (and a few they do not), to get past `additionalProperties`. */
const FIELDS = [
  "Node",
  "NodeEvent",
  "NodeID",
  "Status",
  "UpdatedAt",
  "Alloc",
  "Evals",
  "AllocsStopped",
  "AllocsUpdated",
  "Job",
  "SecretID",
  "AllocIDs",
  "NodeEvents",
  "MinQueryIndex",
  "MaxQueryTime",
  "AuthToken",
  "Region",
  "Namespace",
  "Forwarded",
  "IdempotencyToken",
  "Filter",
  "PerPage",
  "NextToken",
  "Prefix",
  "Reverse",
  "AllowStale",
  "Bogus",
  "__proto__",
  "constructor",
] as const;
const NODE_FIELDS = [
  "ID",
  "SecretID",
  "Datacenter",
  "Name",
  "Attributes",
  "Status",
  "SchedulingEligibility",
  "NodeResources",
  "Drivers",
  "Meta",
  "Links",
  "HostVolumes",
  "Events",
  "DrainStrategy",
  "CreateIndex",
] as const;
const ALLOC_FIELDS = [
  "ID",
  "NodeID",
  "ClientStatus",
  "ClientDescription",
  "TaskStates",
  "Job",
  "Bogus",
] as const;
const EVENT_FIELDS = ["Message", "Subsystem", "Details", "Timestamp", "CreateIndex"] as const;

const leaf = fc.oneof(
  fc.constantFrom<unknown>(
    NODE_ID,
    "",
    "ready",
    "down",
    "initializing",
    "running",
    "failed",
    "unknown",
    "eligible",
    "2024-01-02T03:04:05Z",
    "0001-01-01T00:00:00Z",
    "not a time",
    0,
    -1,
    1.5,
    2 ** 53,
    1e308,
    true,
    false,
    null,
  ),
  fc.string({ maxLength: 8 }),
  fc.string({ unit: "binary", maxLength: 6 }),
  fc.integer(),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
);

/** JSON values shaped like the request structs: right keys, arbitrary (often wrong) value types. */
const { shaped } = fc.letrec<{ shaped: unknown; nested: unknown }>((tie) => ({
  nested: fc.oneof(
    { depthSize: "small", withCrossShrink: true },
    leaf,
    fc.array(tie("nested"), { maxLength: 3 }),
    fc.dictionary(fc.string({ maxLength: 6 }), tie("nested"), { maxKeys: 3 }),
    fc.dictionary(fc.constantFrom(...NODE_FIELDS), tie("nested"), { maxKeys: 6 }),
    fc.dictionary(fc.constantFrom(...ALLOC_FIELDS), tie("nested"), { maxKeys: 5 }),
    fc.dictionary(fc.constantFrom(...EVENT_FIELDS), tie("nested"), { maxKeys: 5 }),
    fc.dictionary(fc.constant(NODE_ID), fc.array(tie("nested"), { maxLength: 2 }), { maxKeys: 1 }),
  ),
  shaped: fc.dictionary(fc.constantFrom(...FIELDS), tie("nested"), { maxKeys: 6 }),
}));

/** A registration that would pass validation, except that it names the existing node without its secret. */
const registration = fc
  .record({
    SecretID: fc.oneof(fc.string({ minLength: 1, maxLength: 8 }), fc.uuid()),
    Datacenter: fc.string({ minLength: 1, maxLength: 6 }),
    Name: fc.string({ minLength: 1, maxLength: 6 }),
    Attributes: fc.dictionary(fc.string({ maxLength: 5 }), fc.string({ maxLength: 5 }), {
      minKeys: 1,
      maxKeys: 3,
    }),
    Status: fc.constantFrom("initializing", "ready", "down", "bogus", ""),
  })
  .chain((node) =>
    fc.record(
      {
        Node: fc.constant({ ID: NODE_ID, ...node }),
        AuthToken: fc.constantFrom(node.SecretID, "", "other"),
        NodeEvent: fc.constantFrom(null, { Message: "m" }),
      },
      { requiredKeys: ["Node"] },
    ),
  );

const jsonBody = fc.oneof(
  { weight: 2, arbitrary: fc.jsonValue({ maxDepth: 4 }) },
  { weight: 4, arbitrary: shaped },
  { weight: 1, arbitrary: registration },
);

/** Bodies as text: valid JSON of those values, and text that is not JSON. */
const jsonText = fc.oneof(
  { weight: 6, arbitrary: jsonBody.map((v) => JSON.stringify(v) ?? "null") },
  { weight: 1, arbitrary: fc.string({ maxLength: 40 }) },
  {
    weight: 1,
    arbitrary: fc.constantFrom("", " ", "{", "[1,", '{"Node":', "\u0000", "1e999", "-", '"\\ud800"'),
  },
);

/** msgpack ext types msgpackr knows (timestamp -1, its own 0x65 error, 0x69.., 0x74 typed arrays, ...), and others. */
const extType = fc.oneof(
  fc.constantFrom(0xff, 0x65, 0x69, 0x70, 0x72, 0x73, 0x74, 0x78, 0x42, 0x00, 0x7f, 0x80),
  fc.integer({ min: 0, max: 255 }),
);
const extension = fc
  .tuple(extType, fc.uint8Array({ maxLength: 16 }))
  .map(([type, data]) => Buffer.concat([Buffer.from([0xc7, data.length, type]), data]));

/** Raw msgpack: arbitrary bytes, packed values, packed values with bytes flipped, ext values. */
const msgpackBytes = fc.oneof(
  { weight: 2, arbitrary: fc.uint8Array({ maxLength: 64 }) },
  { weight: 3, arbitrary: jsonBody.map((v) => pack(v) as Uint8Array) },
  {
    weight: 2,
    arbitrary: fc.tuple(jsonBody, fc.nat(), fc.integer({ min: 0, max: 255 })).map(([v, at, byte]) => {
      const bytes = Buffer.from(pack(v));
      if (bytes.length > 0) bytes[at % bytes.length] = byte;
      return new Uint8Array(bytes);
    }),
  },
  {
    weight: 2,
    arbitrary: fc
      .tuple(fc.constantFrom(...FIELDS), extension)
      .map(([key, ext]) => Buffer.concat([Buffer.from([0x81]), Buffer.from(pack(key)), ext])),
  },
  { weight: 1, arbitrary: extension },
);

describe("client RPC: arbitrary bodies never cause a 5xx, never write", () => {
  it("arbitrary JSON bodies", async () => {
    await fc.assert(
      fc.asyncProperty(method, verb, jsonText, async (m, v, body) => {
        let text = body;
        try {
          const parsed: unknown = JSON.parse(body);
          const safe = neutralize(m, parsed);
          if (safe !== parsed) text = JSON.stringify(safe);
        } catch {
          // Not JSON: sent as is.
        }
        await send(m, text, "application/json", v);
        expect(server.log.lastIndex()).toBe(baseline.lastIndex);
      }),
      runs(400),
    );
    await expectUnchanged();
  });

  it("arbitrary msgpack bodies", async () => {
    await fc.assert(
      fc.asyncProperty(method, verb, msgpackBytes, async (m, v, bytes) => {
        let body = bytes;
        try {
          const decoded = unpackPlain(bytes);
          const safe = neutralize(m, decoded);
          if (safe !== decoded) body = pack(safe);
        } catch {
          // Not msgpack: sent as is.
        }
        await send(m, body, "application/msgpack", v);
        expect(server.log.lastIndex()).toBe(baseline.lastIndex);
      }),
      runs(400),
    );
    await expectUnchanged();
  });

  it("a registration for the existing node without its secret is refused", async () => {
    await fc.assert(
      fc.asyncProperty(registration, fc.boolean(), async (body, msgpack) => {
        const status = msgpack
          ? await send("Node.Register", pack(body), "application/msgpack", "PUT")
          : await send("Node.Register", JSON.stringify(body), "application/json", "PUT");
        expect([400, 403]).toContain(status);
      }),
      runs(50),
    );
    await expectUnchanged();
  });
});

describe("unpackPlain on arbitrary bytes", () => {
  it("returns a value or throws an Error", () => {
    fc.assert(
      fc.property(fc.oneof(fc.uint8Array({ maxLength: 256 }), msgpackBytes), (bytes) => {
        try {
          unpackPlain(bytes);
        } catch (err) {
          expect(err).toBeInstanceOf(Error);
        }
      }),
      runs(3000),
    );
  });

  it("refuses huge declared lengths and deep nesting with an Error, quickly", () => {
    const huge = [0xdc, 0xdd, 0xde, 0xdf, 0xd9, 0xda, 0xdb, 0xc4, 0xc5, 0xc6, 0xc7, 0xc8, 0xc9];
    fc.assert(
      fc.property(fc.constantFrom(...huge), fc.uint8Array({ minLength: 4, maxLength: 4 }), (tag, length) => {
        try {
          unpackPlain(Buffer.from([tag, ...length]));
        } catch (err) {
          expect(err).toBeInstanceOf(Error);
        }
      }),
      runs(200),
    );
    for (const opener of [0x91, 0x81]) {
      const deep = opener === 0x91 ? Buffer.alloc(200_000, 0x91) : Buffer.alloc(200_000, 0x81);
      expect(() => unpackPlain(deep)).toThrow(Error);
    }
  });
});
