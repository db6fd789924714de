import { afterEach, describe, expect, it } from "vitest";
import type { HistoryEntry } from "../../../projections/history.ts";
import { VirtualClock } from "../../../src/util/clock.ts";
import { startTestServer, type TestServer } from "../../server-harness.ts";
import { HOUR_NS, placeAlloc, TestNode, testJob, waitForNode } from "../node-fixtures.ts";

/** Longer than any TTL with one node (10 s + up to 10 s of stagger) plus the 10 s grace. */
const PAST_TTL_MS = 30_001;

type Entry = HistoryEntry;

describe("audit history", () => {
  let s: TestServer | undefined;
  afterEach(async () => {
    await s?.stop();
    s = undefined;
  });

  const historyOf = async (path: string) => {
    const res = await s!.call(path);
    expect(res.status).toBe(200);
    return (await res.json()) as Entry[];
  };

  it("shows every transition of an allocation through a disconnect and reconnect, and keeps it after GC", async () => {
    const clock = new VirtualClock();
    s = await startTestServer({ deps: { clock } });
    const node = new TestNode(s);
    await node.register();
    await node.heartbeat();
    const alloc = await placeAlloc(s, { NodeID: node.id, Job: testJob({ maxClientDisconnectNs: HOUR_NS }) });
    await node.updateAllocs(clock, [{ ID: alloc.ID, ClientStatus: "running" }]);
    clock.advance(PAST_TTL_MS);
    await waitForNode(s, node.id, (n) => n.Status === "disconnected");
    // Reconnect: UpdateStatus first (parked), then the allocations, then ready.
    await node.heartbeat();
    await node.updateAllocs(clock, [{ ID: alloc.ID, ClientStatus: "running" }]);
    await node.heartbeat();
    await waitForNode(s, node.id, (n) => n.Status === "ready");
    await node.updateAllocs(clock, [{ ID: alloc.ID, ClientStatus: "complete" }]);

    const history = await historyOf(`/v1/allocation/${alloc.ID}/history`);
    expect(history[0]).toMatchObject({
      Field: "(created)",
      From: null,
      To: { ClientStatus: "pending", DesiredStatus: "run", NodeID: node.id },
      Cause: { Event: "AllocsPlanApplied" },
    });
    const statuses = history.filter((h) => h.Field === "ClientStatus").map((h) => [h.From, h.To]);
    expect(statuses).toEqual([
      ["pending", "running"],
      ["running", "unknown"],
      ["unknown", "running"],
      ["running", "complete"],
    ]);
    const states = history
      .filter((h) => h.Field === "AllocStates")
      .map((h) => (h.To as { Value: string }).Value);
    expect(states).toEqual(["unknown", "running"]);
    // Every entry says when, why and who.
    for (const h of history) {
      expect(h.Index).toBeGreaterThan(0);
      expect(Number.isNaN(Date.parse(h.Time))).toBe(false);
      expect(typeof h.Cause.Event).toBe("string");
      expect(h.Actor.kind).toMatch(/^(server|node|token|anonymous)$/);
    }
    const disconnect = history.find((h) => h.Field === "ClientStatus" && h.To === "unknown")!;
    expect(disconnect.Cause).toMatchObject({ Event: "AllocsDisconnected", NodeID: node.id });
    expect(disconnect.Actor.kind).toBe("server");
    const reported = history.find((h) => h.Field === "ClientStatus" && h.From === "pending")!;
    expect(reported.Cause.Event).toBe("AllocClientUpdated");
    expect(reported.Actor).toEqual({ kind: "node", id: node.id });
    const indexes = history.map((h) => h.Index);
    expect([...indexes].sort((a, b) => a - b)).toEqual(indexes);

    const nodeHistory = await historyOf(`/v1/node/${node.id}/history`);
    expect(nodeHistory[0]).toMatchObject({ Field: "(created)", To: { Status: "initializing" } });
    expect(nodeHistory.filter((h) => h.Field === "Status").map((h) => h.To)).toEqual([
      "ready",
      "disconnected",
      "initializing",
      "ready",
    ]);

    // Garbage collection removes the finished allocation; its history stays.
    expect((await s.call("/v1/system/gc", { method: "PUT" })).status).toBe(200);
    expect((await s.call(`/v1/allocation/${alloc.ID}`)).status).toBe(404);
    const after = await historyOf(`/v1/allocation/${alloc.ID}/history`);
    expect(after.slice(0, history.length)).toEqual(history);
    expect(after.at(-1)).toMatchObject({
      Field: "(deleted)",
      Cause: { Event: "GarbageCollected", Reason: "forced" },
    });
    expect((await s.call("/v1/allocation/nope/history")).status).toBe(404);
  });
});

describe("history of objects whose IDs repeat across namespaces", () => {
  it("keeps a job of one ID in two namespaces apart", async () => {
    const s = await startTestServer();
    try {
      const put = async (path: string, body: unknown) => {
        const res = await s.call(path, {
          method: "PUT",
          headers: { "content-type": "application/json" },
          body: JSON.stringify(body),
        });
        expect(res.status, await res.clone().text()).toBe(200);
      };
      await put("/v1/namespace/prod", { Name: "prod" });
      const job = (namespace: string, priority: number) => ({
        Job: {
          ID: "web",
          Namespace: namespace,
          Type: "batch",
          Priority: priority,
          Datacenters: ["dc1"],
          TaskGroups: [{ Name: "g", Count: 1, Tasks: [{ Name: "t", Driver: "docker", Config: {} }] }],
        },
      });
      await put("/v1/jobs", job("default", 50));
      await put("/v1/jobs?namespace=prod", job("prod", 70));
      await put("/v1/jobs?namespace=prod", job("prod", 80));

      const historyIn = async (namespace: string) => {
        const res = await s.call(`/v1/job/web/history?namespace=${namespace}`);
        expect(res.status).toBe(200);
        return (await res.json()) as Entry[];
      };
      const inDefault = await historyIn("default");
      const inProd = await historyIn("prod");
      expect(inDefault.map((h) => h.Field)).toEqual(["(created)"]);
      expect(inDefault[0]!.To).toMatchObject({ Priority: 50 });
      expect(inProd[0]!.To).toMatchObject({ Priority: 70 });
      expect(inProd.filter((h) => h.Field === "Priority").map((h) => [h.From, h.To])).toEqual([[70, 80]]);
      expect((await s.call("/v1/job/web/history?namespace=other")).status).toBe(404);
    } finally {
      await s.stop();
    }
  });
});
