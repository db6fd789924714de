import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { AllocRow } from "../../../projections/allocs.ts";
import { clientReplyJson, replySlabsMade, replyWritten } from "../../../src/api/client-rpc/reply-json.ts";
import { packPlain } from "../../../src/codec/envelope-codec.ts";
import { SignedAlloc, withSignedIdentities } from "../../../src/identity/alloc-identities.ts";
import { IdentityWorld } from "../../identity/identity-fixtures.ts";

/**
 * What a client received before allocations were written field by field:
 * JSON.stringify of each allocation as one object (SignedIdentities added
 * last), its job, when it has one, moved after every other field.
 */
function asBefore(body: Readonly<Record<string, unknown>>): string {
  const { Allocs: allocs, ...rest } = body;
  if (!Array.isArray(allocs)) return JSON.stringify(body);
  const shaped = allocs.map((a: unknown) => {
    const alloc = a instanceof SignedAlloc ? { ...a.row, SignedIdentities: a.identities } : a;
    const job = (alloc as { Job?: unknown } | null)?.Job;
    if (job === null || typeof job !== "object") return alloc;
    const { Job, ...fields } = alloc as Record<string, unknown>;
    return { ...fields, Job };
  });
  return JSON.stringify({ Allocs: shaped, ...rest });
}

const meta = { Index: 12, LastContact: 0, KnownLeader: true, NextToken: "" };

/** An allocation row as the plan applier stores it, the shared objects passed in. */
function row(
  id: string,
  shared: { job: object; resources: object },
  fields: Partial<AllocRow> = {},
): AllocRow {
  return {
    CreateIndex: 7,
    ModifyIndex: 9,
    AllocModifyIndex: 7,
    ID: id,
    Namespace: "default",
    EvalID: "e1",
    Name: "web.g[0]",
    NodeID: "n1",
    NodeName: 'node "one"',
    JobID: "web",
    Job: shared.job,
    TaskGroup: "g",
    Resources: shared.resources,
    SharedResources: { DiskMB: 10 },
    TaskResources: null,
    AllocatedResources: shared.resources,
    Metrics: {
      NodesEvaluated: 3,
      ScoreMetaData: [{ NodeID: "n1", Scores: null, NormScore: 0.010275212669932858 }],
    },
    DesiredStatus: "run",
    DesiredDescription: "",
    DesiredTransition: {},
    ClientStatus: "pending",
    ClientDescription: "line\nbreak \u2028 \\ tab\t",
    TaskStates: null,
    AllocStates: null,
    PreviousAllocation: "",
    NextAllocation: "",
    DeploymentID: "",
    DeploymentStatus: null,
    RescheduleTracker: null,
    NetworkStatus: null,
    FollowupEvalID: "",
    PreemptedAllocations: null,
    PreemptedByAllocation: "",
    SigningKeyID: "k1",
    CreateTime: 1_795_944_118_979_000_000,
    ModifyTime: 1_795_944_118_980_000_000,
    ...fields,
  } as unknown as AllocRow;
}

describe("a client RPC reply as JSON", () => {
  it("is byte for byte what clients received before, with and without identities", () => {
    const shared = {
      job: { ID: "web", TaskGroups: [{ Name: "g", Count: 3, Tasks: [{ Name: "app" }] }], Meta: null },
      resources: { CPU: 100, MemoryMB: 64, Networks: null },
    };
    const identities = {
      app: "eyJhbGciOiJFZERTQSJ9.eyJub21hZF90YXNrIjoiYXBwIn0.c2ln",
      'odd "task"': "x.y.z",
      "tâche ✓": `${"h".repeat(40)}.${"c".repeat(400)}.${"s".repeat(86)}`,
      escaped: `${"e".repeat(80)}"\u0001`,
    };
    const mine = row("a1", shared);
    const body = {
      Allocs: [
        new SignedAlloc(mine, identities),
        // Another node's allocation, and one whose key's material is missing: rows as stored.
        row("a2", shared, { NodeID: "n2" }),
        row("a3", shared, { SigningKeyID: "gone" }),
        new SignedAlloc(row("a4", shared, { Job: null }), identities),
        new SignedAlloc(row("a5", shared, { ClientDescription: "lone \ud800 and pair \ud83d\ude00" }), {}),
        row("a6", shared, { ModifyTime: -0, CreateTime: 1e21, NodeName: undefined }),
        row("a7", shared, { ModifyTime: Number.NaN, CreateTime: Number.POSITIVE_INFINITY }),
      ],
      ...meta,
      Missing: undefined,
    };
    // Three times: the shared objects' texts are kept from the second, and used from then on.
    for (let i = 0; i < 3; i++) expect(String(clientReplyJson(body))).toBe(asBefore(body));
    // The stored row is left as it was.
    expect(mine).not.toHaveProperty("SignedIdentities");
  });

  it("answers Alloc.GetAllocs as before: the caller's own with identities, others', and those missing key material", async () => {
    const world = new IdentityWorld();
    const key = await world.addKey();
    const lost = await world.addKey({ held: false, state: "inactive" });
    const mine = world.addAlloc({ SigningKeyID: key.keyId, NodeID: "node-1" });
    const rows = [
      mine,
      world.addAlloc({ SigningKeyID: key.keyId, NodeID: "node-2" }),
      world.addAlloc({ NodeID: "node-1" }),
      world.addAlloc({ SigningKeyID: lost.keyId, NodeID: "node-1" }),
      world.update(mine, { ClientStatus: "running" }),
    ];
    const missing: string[] = [];
    const served = await withSignedIdentities(world.keyring, rows, "node-1", (a) => missing.push(a.ID));
    expect(missing).toEqual([rows[3]!.ID]);
    expect(served.map((a) => a instanceof SignedAlloc)).toEqual([true, false, false, false, true]);
    const body = { Allocs: served, ...meta };
    expect(String(clientReplyJson(body))).toBe(asBefore(body));
    // msgpack writes each as the one object it was before.
    const before = {
      Allocs: served.map((a) =>
        a instanceof SignedAlloc ? { ...a.row, SignedIdentities: a.identities } : a,
      ),
      ...meta,
    };
    expect(Buffer.from(packPlain(body)).equals(Buffer.from(packPlain(before)))).toBe(true);
  });

  it("writes a row's own SignedIdentities where the row has it, replaced by the served ones", () => {
    const shared = { job: { ID: "web", TaskGroups: [] }, resources: {} };
    const odd = {
      ...row("a1", shared),
      SignedIdentities: { old: "1" },
      Extra: [1, "2"],
    } as unknown as AllocRow;
    const body = { Allocs: [new SignedAlloc(odd, { app: "jwt" }), odd], ...meta };
    expect(String(clientReplyJson(body))).toBe(asBefore(body));
  });

  it("writes what JSON.stringify writes for what is not an allocation", () => {
    const body = {
      Allocs: [null, 3, "s", [1, { Job: { a: 1 } }], {}, { Job: { ID: "j" } }, { Job: "text" }, undefined],
      ...meta,
    };
    expect(String(clientReplyJson(body))).toBe(JSON.stringify(body));
  });

  it("answers allocations as UTF-8 bytes, however large the reply", () => {
    const shared = { job: { ID: "wéb ✓", Meta: { note: "x".repeat(70_000) } }, resources: { CPU: 1 } };
    const big = row("a1", shared, {
      ClientDescription: "ü€😀".repeat(30_000),
      ModifyIndex: 9_007_199_254_740_991,
    });
    const small = row("a2", shared, { NodeName: "nœud", ModifyIndex: -3, CreateIndex: 0.5 });
    const body = { Allocs: [big, small, big], ...meta };
    const reply = clientReplyJson(body);
    expect(Buffer.isBuffer(reply)).toBe(true);
    expect(reply.toString("utf8")).toBe(asBefore(body));
    // The next, smaller reply is not followed by what the larger one left.
    const next = { Allocs: [small], ...meta };
    expect(String(clientReplyJson(next))).toBe(asBefore(next));
  });

  it("keeps each reply's bytes as they were while later replies are written", () => {
    const shared = { job: { ID: "web" }, resources: { CPU: 1 } };
    const sent: [Buffer, string][] = [];
    // Replies of many sizes, some past a slab, all kept (as a socket's queue keeps them) while the next are written.
    for (let i = 0; i < 300; i++) {
      const allocs = Array.from({ length: 1 + (i % 7) }, (_, j) =>
        row(`a${i}-${j}`, shared, {
          ClientDescription: "d".repeat((i * 997 + j * 31) % (i % 50 === 49 ? 200_000 : 3_000)),
        }),
      );
      const body = { Allocs: allocs, ...meta };
      sent.push([clientReplyJson(body) as Buffer, asBefore(body)]);
    }
    for (const [reply, expected] of sent) expect(reply.toString("utf8")).toBe(expected);
  });

  it("writes a slab again once every reply in it is written, never while one is not", () => {
    const shared = { job: { ID: "web" }, resources: { CPU: 1 } };
    // Replies kept unwritten, as a socket's queue keeps them, among those written at once.
    const queued: [Buffer, string][] = [];
    const made = replySlabsMade();
    let replied = 0;
    for (let i = 0; i < 2_000; i++) {
      const allocs = Array.from({ length: 1 + (i % 5) }, (_, j) =>
        row(`a${i}-${j}`, shared, {
          ClientDescription: "d".repeat((i * 997 + j * 31) % (i % 200 === 199 ? 150_000 : 3_000)),
        }),
      );
      const body = { Allocs: allocs, ...meta };
      const reply = clientReplyJson(body) as Buffer;
      replied += reply.length;
      if (i % 97 < 2) queued.push([reply, asBefore(body)]);
      else {
        expect(reply.toString("utf8")).toBe(asBefore(body));
        replyWritten(reply);
      }
      // Some queued replies are written later, in another order.
      if (i % 301 === 300) {
        const [written] = queued.splice(queued.length >> 1, 1);
        expect(written![0].toString("utf8")).toBe(written![1]);
        replyWritten(written![0]);
      }
    }
    for (const [reply, expected] of queued) expect(reply.toString("utf8")).toBe(expected);
    // Written about 140 slabs' worth: new slabs only for those the queued replies hold, and the large.
    expect(replied).toBeGreaterThan(120 * 128 * 1024);
    expect(replySlabsMade() - made).toBeLessThan(45);
    // Bytes not from a reply change nothing.
    const kept = clientReplyJson({ Allocs: [row("k", shared)], ...meta }) as Buffer;
    const keptText = asBefore({ Allocs: [row("k", shared)], ...meta });
    replyWritten(Buffer.from("not a reply"));
    replyWritten(Buffer.allocUnsafeSlow(128 * 1024));
    for (let i = 0; i < 200; i++)
      replyWritten(clientReplyJson({ Allocs: [row(`x${i}`, shared)], ...meta }) as Buffer);
    expect(kept.toString("utf8")).toBe(keptText);
  });

  it("writes an allocation's own nested objects as JSON.stringify does, whatever they hold", () => {
    const shared = { job: { ID: "web" }, resources: { CPU: 1 } };
    class Point {
      constructor(readonly x = 1) {}
    }
    let deep: unknown = { leaf: [1, "two", null] };
    for (let i = 0; i < 40; i++) deep = i % 2 ? { [`level${i}`]: deep } : [deep, i];
    const odd = [
      {
        a: undefined,
        b: () => 1,
        c: Symbol("s"),
        d: [undefined, () => 1, Symbol("t")],
        e: -0,
        f: Number.NaN,
      },
      { 10: "ten", 2: "two", b: 1, a: 2, 'quote"d': 'v"al', ké: "vé", "\u0001": "\n", [Symbol("k")]: 1 },
      { when: new Date(1_795_944_118_979), at: { toJSON: (key: string) => `at ${key}` } },
      { point: new Point(), map: new Map([["k", 1]]), boxed: new String("b"), n: new Number(4) },
      Object.assign(Object.create(null), { x: 1, y: [2, [3, { z: 1e21 }]] }),
      // biome-ignore lint/suspicious/noSparseArray: a hole, which JSON.stringify writes as null.
      [1, , 3],
      deep,
      { lone: "\ud800", pair: "\ud83d\ude00", long: "x".repeat(100), longEscaped: `${"y".repeat(100)}"` },
    ];
    const body = {
      Allocs: odd.map((value, i) =>
        row(`a${i}`, shared, {
          Metrics: value,
          TaskStates: { app: { Events: [value, { Time: 2 ** 63 + i }] } },
        } as Partial<AllocRow>),
      ),
      ...meta,
    };
    expect(String(clientReplyJson(body))).toBe(asBefore(body));
    // A bigint nested anywhere throws, as JSON.stringify does; the next reply is whole.
    const bad = {
      Allocs: [row("b1", shared, { Metrics: { n: [1n] } } as unknown as Partial<AllocRow>)],
      ...meta,
    };
    expect(() => clientReplyJson(bad)).toThrow(TypeError);
    const next = { Allocs: [row("a1", shared)], ...meta };
    expect(String(clientReplyJson(next))).toBe(asBefore(next));
  });

  it("leaves replies without an allocation list to JSON.stringify", () => {
    const body = { Allocs: { a1: 3 }, MigrateTokens: {}, Index: 4 };
    expect(String(clientReplyJson(body))).toBe(JSON.stringify(body));
  });

  it("holds for any allocations, jobs and identities", () => {
    const value = fc.oneof(
      fc.jsonValue(),
      fc.string({ unit: "binary" }),
      fc.double(),
      fc.constantFrom(undefined, -0, 1e21, 2 ** 63),
    );
    const fields = fc.dictionary(
      fc.string({ unit: "binary" }).filter((k) => k !== "__proto__"),
      value,
    );
    const shared = fc.constantFrom(
      "Job",
      "Resources",
      "SharedResources",
      "TaskResources",
      "AllocatedResources",
    );
    const identities = fc.option(fc.dictionary(fc.string({ unit: "binary" }), fc.string()), {
      nil: undefined,
    });
    fc.assert(
      fc.property(
        fc.array(fields, { minLength: 1, maxLength: 3 }),
        fc.array(fc.tuple(fields, fc.array(shared), identities), { maxLength: 6 }),
        // Reply fields are named as Nomad's (never an integer, which JSON.stringify would put first).
        fc.dictionary(
          fc.string().map((k) => `Meta${k}`),
          value,
        ),
        (objects, allocs, rest) => {
          const body = {
            Allocs: allocs.map(([a, sharedFields, signed], i) => {
              const alloc: Record<string, unknown> = { ...a };
              // The same objects in several allocations, as job and resource rows are.
              for (const [j, f] of sharedFields.entries()) alloc[f] = objects[(i + j) % objects.length];
              return signed === undefined ? alloc : new SignedAlloc(alloc as unknown as AllocRow, signed);
            }),
            ...rest,
          };
          expect(String(clientReplyJson(body))).toBe(asBefore(body));
          expect(String(clientReplyJson(body))).toBe(asBefore(body));
        },
      ),
    );
  });
});
