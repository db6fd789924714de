import { describe, expect, it, vi } from "vitest";
import { ApiError } from "../../../src/api/api-error.ts";
import { AllocUpdateBatcher } from "../../../src/api/client-rpc/alloc-update-batcher.ts";
import type { ApiContext } from "../../../src/api/context.ts";
import { EnvelopeCodec, unpackPlain } from "../../../src/codec/envelope-codec.ts";
import type { MemoryLog } from "../../../src/log/memory-log.ts";
import { VirtualClock } from "../../../src/util/clock.ts";
import type { ClientAllocUpdate } from "../../../streams/allocs.ts";
import { newEvaluation } from "../../../streams/evals.ts";
import { allSchemas } from "../../../streams/index.ts";
import { alloc, memoryStore, placed, registered, statusChange } from "../../projections/memory-store.ts";

async function setup(nodes: string[], maxPerRecord?: number) {
  const m = await memoryStore();
  for (const id of nodes) {
    await m.write(registered(id), statusChange(id, "initializing", "ready"));
    await m.write(placed(alloc(`${id}-a`, id), alloc(`${id}-b`, id, { JobID: "api" })));
  }
  const clock = new VirtualClock();
  // The batcher reads only these parts of the API context.
  const ctx = {
    store: m.store,
    tables: m.tables,
    clock,
    config: { serverName: "s1" },
  } as unknown as ApiContext;
  return { ...m, clock, batcher: new AllocUpdateBatcher(ctx, undefined, maxPerRecord) };
}

const update = (
  id: string,
  nodeID: string,
  status: ClientAllocUpdate["ClientStatus"] = "running",
): ClientAllocUpdate => ({
  ID: id,
  NodeID: nodeID,
  ClientStatus: status,
  ClientDescription: "",
  TaskStates: null,
  DeploymentStatus: null,
  NetworkStatus: null,
  ModifyTime: 1,
});

const evaluation = (id: string, job: string) =>
  newEvaluation({
    ID: id,
    Namespace: "default",
    Type: "service",
    TriggeredBy: "alloc-failure",
    JobID: job,
    CreateTime: 1,
  });

/** The type and allocation update IDs of each record after `from`. */
async function recordsAfter(log: MemoryLog, from: number) {
  const out: { index: number; type: string; ids: string[] }[] = [];
  for await (const batch of log.read(from + 1)) {
    for (const r of batch) {
      const env = unpackPlain(r.bytes) as { type: string; data: { Allocs?: { ID: string }[] } };
      out.push({ index: r.index, type: env.type, ids: (env.data.Allocs ?? []).map((a) => a.ID) });
    }
  }
  return out;
}

/** Lets pending promise callbacks and the store's apply run. */
const tick = () => new Promise((r) => setTimeout(r, 5));

describe("AllocUpdateBatcher", () => {
  it("writes every call of one 50 ms window as one event, and answers every caller with its index", async () => {
    const { batcher, clock, log, tables } = await setup(["n1", "n2", "n3"]);
    const before = log.lastIndex();
    const calls = ["n1", "n2", "n3"].map((n) =>
      batcher.submit({
        nodeID: n,
        updates: [update(`${n}-a`, n), update(`${n}-b`, n)],
        reconnected: [],
        evals: [],
      }),
    );
    clock.advance(49);
    await tick();
    expect(log.lastIndex()).toBe(before);
    clock.advance(1);
    const indexes = await Promise.all(calls);
    expect(log.lastIndex()).toBe(before + 1);
    expect(new Set(indexes)).toEqual(new Set([before + 1]));
    expect(batcher.windows).toBe(1);
    expect(batcher.calls).toBe(3);
    for (const n of ["n1", "n2", "n3"]) {
      expect(tables.allocs.get(`${n}-a`)!.ClientStatus).toBe("running");
      expect(tables.nodes.get(n)!.LastAllocUpdateIndex).toBe(before + 1);
    }
  });

  it("keeps one evaluation per job per window", async () => {
    const { batcher, clock, tables } = await setup(["n1", "n2"]);
    const calls = [
      batcher.submit({
        nodeID: "n1",
        updates: [update("n1-a", "n1", "failed")],
        reconnected: [],
        evals: [evaluation("e1", "web")],
      }),
      batcher.submit({
        nodeID: "n2",
        updates: [update("n2-a", "n2", "failed")],
        reconnected: [],
        evals: [evaluation("e2", "web")],
      }),
      batcher.submit({
        nodeID: "n2",
        updates: [update("n2-b", "n2", "failed")],
        reconnected: [],
        evals: [evaluation("e3", "api")],
      }),
    ];
    clock.advance(50);
    const [index] = await Promise.all(calls);
    expect(tables.evals.get("e1")?.CreateIndex).toBe(index);
    expect(tables.evals.get("e2")).toBeUndefined();
    expect(tables.evals.get("e3")?.CreateIndex).toBe(index);
  });

  it("refuses the callers of a node that went down before the window was written, and writes the others", async () => {
    const { batcher, clock, tables, write } = await setup(["n1", "n2"]);
    const fromN1 = batcher.submit({
      nodeID: "n1",
      updates: [update("n1-a", "n1")],
      reconnected: [],
      evals: [evaluation("e1", "web")],
    });
    const fromN2 = batcher.submit({
      nodeID: "n2",
      updates: [update("n2-a", "n2")],
      reconnected: [],
      evals: [evaluation("e2", "api")],
    });
    // Accepted while n1 was ready; it goes down before the window closes.
    await write(statusChange("n1", "ready", "down"));
    clock.advance(50);
    const refused = await fromN1.catch((err: unknown) => err);
    expect(refused).toBeInstanceOf(ApiError);
    expect((refused as ApiError).status).toBe(409);
    expect((refused as ApiError).message).toBe(
      "node n1 is not allowed to update allocs while in status down",
    );
    const index = await fromN2;
    expect(tables.allocs.get("n2-a")!.ClientStatus).toBe("running");
    expect(tables.allocs.get("n1-a")!.ClientStatus).toBe("pending");
    expect(tables.nodes.get("n1")!.LastAllocUpdateIndex).toBe(0);
    // The window's records: the update, then the evaluations; callers get the last index.
    expect(tables.nodes.get("n2")!.LastAllocUpdateIndex).toBe(index - 1);
    // The refused window's evaluations were appended with it; the retry upserts
    // the same IDs, so n2's job still has exactly one.
    expect(tables.evals.get("e2")?.ModifyIndex).toBe(index);
    expect(tables.evals.get("e2")!.CreateIndex).toBeLessThan(index);
    expect(batcher.windows).toBe(2);
  });

  it("packs each call's updates when it is submitted: the flush packs no update record", async () => {
    const { batcher, clock, log } = await setup(["n1", "n2", "n3"], 2);
    const before = log.lastIndex();
    const encode = vi.spyOn(EnvelopeCodec.prototype, "encode");
    try {
      const calls = ["n1", "n2", "n3"].map((n) =>
        batcher.submit({
          nodeID: n,
          updates: [update(`${n}-a`, n), update(`${n}-b`, n, "failed")],
          reconnected: [],
          evals: [evaluation(`e-${n}`, "web")],
        }),
      );
      clock.advance(50);
      await Promise.all(calls);
      const types = encode.mock.calls.map(([envelope]) => envelope.type);
      expect(types).not.toContain("AllocClientUpdated");
      // The evaluations' record is still a draft the store encodes.
      expect(types).toContain("EvaluationsUpserted");
    } finally {
      encode.mockRestore();
    }
    // What was written is what the codec would have written.
    const codec = new EnvelopeCodec(allSchemas);
    const written: string[] = [];
    for await (const batch of log.read(before + 1)) {
      for (const r of batch) {
        const envelope = codec.decode(r.bytes);
        if (envelope.type !== "AllocClientUpdated") continue;
        written.push(envelope.type);
        expect(Buffer.compare(r.bytes, codec.encode(envelope))).toBe(0);
        expect(envelope.by).toEqual({ kind: "server", id: "s1", name: "client-alloc-updates" });
      }
    }
    expect(written).toHaveLength(3);
  });

  it("refuses a call whose updates cannot be packed, and writes the window's others", async () => {
    const { batcher, clock, tables } = await setup(["n1", "n2"]);
    const bad = {
      ...update("n1-a", "n1"),
      NetworkStatus: { Big: 2n ** 70n },
    } as unknown as ClientAllocUpdate;
    const fromN1 = batcher.submit({ nodeID: "n1", updates: [bad], reconnected: [], evals: [] });
    const fromN2 = batcher.submit({
      nodeID: "n2",
      updates: [update("n2-a", "n2")],
      reconnected: [],
      evals: [],
    });
    clock.advance(50);
    await expect(fromN1).rejects.toThrow();
    await fromN2;
    expect(tables.allocs.get("n2-a")!.ClientStatus).toBe("running");
    expect(tables.allocs.get("n1-a")!.ClientStatus).toBe("pending");
  });

  it("writes what is queued when it closes", async () => {
    const { batcher, tables } = await setup(["n1"]);
    const call = batcher.submit({
      nodeID: "n1",
      updates: [update("n1-a", "n1")],
      reconnected: [],
      evals: [],
    });
    await batcher.close();
    await call;
    expect(tables.allocs.get("n1-a")!.ClientStatus).toBe("running");
  });

  it("splits a window into records of at most maxPerRecord updates, never splitting a call, in one append", async () => {
    const { batcher, clock, log, tables, write } = await setup(["n1", "n2", "n3", "n4"], 3);
    await write(placed(alloc("n3-c", "n3"), alloc("n3-d", "n3")));
    const before = log.lastIndex();
    const reports: [string, string[]][] = [
      ["n1", ["n1-a"]],
      ["n2", ["n2-a", "n2-b"]],
      // More than a record may carry: a record of its own, whole.
      ["n3", ["n3-a", "n3-b", "n3-c", "n3-d"]],
      ["n4", ["n4-a"]],
    ];
    const calls = reports.map(([n, ids]) =>
      batcher.submit({ nodeID: n, updates: ids.map((id) => update(id, n)), reconnected: [], evals: [] }),
    );
    clock.advance(50);
    const indexes = await Promise.all(calls);
    const records = await recordsAfter(log, before);
    expect(records.map((r) => [r.type, r.ids])).toEqual([
      ["AllocClientUpdated", ["n1-a", "n2-a", "n2-b"]],
      ["AllocClientUpdated", ["n3-a", "n3-b", "n3-c", "n3-d"]],
      ["AllocClientUpdated", ["n4-a"]],
    ]);
    expect(new Set(indexes)).toEqual(new Set([before + 3]));
    expect(batcher.windows).toBe(1);
    for (const [n, ids] of reports) {
      for (const id of ids) expect(tables.allocs.get(id)!.ClientStatus).toBe("running");
      const record = records.find((r) => r.ids.includes(ids[0]!))!;
      expect(tables.nodes.get(n)!.LastAllocUpdateIndex).toBe(record.index);
    }
  });

  it("answers the callers of the records that applied when another record of the window is refused", async () => {
    const { batcher, clock, log, tables, write } = await setup(["n1", "n2"], 1);
    const fromN1 = batcher.submit({
      nodeID: "n1",
      updates: [update("n1-a", "n1")],
      reconnected: [],
      evals: [],
    });
    const fromN2 = batcher.submit({
      nodeID: "n2",
      updates: [update("n2-a", "n2")],
      reconnected: [],
      evals: [],
    });
    await write(statusChange("n1", "ready", "down"));
    const before = log.lastIndex();
    clock.advance(50);
    const refused = await fromN1.catch((err: unknown) => err);
    expect((refused as ApiError).status).toBe(409);
    // n2's record applied in the same append: no second write.
    expect(await fromN2).toBe(before + 2);
    expect(log.lastIndex()).toBe(before + 2);
    expect(batcher.windows).toBe(1);
    expect(tables.allocs.get("n2-a")!.ClientStatus).toBe("running");
    expect(tables.allocs.get("n1-a")!.ClientStatus).toBe("pending");
  });
});
