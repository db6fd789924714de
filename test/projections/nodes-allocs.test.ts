import { describe, expect, it } from "vitest";
import { MAX_RETAINED_NODE_EVENTS } from "../../projections/nodes.ts";
import type { NodeStatus } from "../../streams/nodes.ts";
import { alloc, clientUpdate, memoryStore, placed, registered, statusChange } from "./memory-store.ts";

async function readyNode(id = "n1") {
  const m = await memoryStore();
  expect(await m.write(registered(id), statusChange(id, "initializing", "ready"))).toMatchObject([
    { status: "applied" },
    { status: "applied" },
  ]);
  return m;
}

describe("nodes projection", () => {
  it("keeps a known node's status, eligibility and events on re-registration, and refuses another secret", async () => {
    const m = await readyNode();
    const before = m.tables.nodes.get("n1")!;
    const [again] = await m.write(registered("n1", "aa", { Status: "initializing", Name: "renamed" }));
    expect(again?.status).toBe("applied");
    const after = m.tables.nodes.get("n1")!;
    expect(after).toMatchObject({ Status: "ready", Name: "renamed", CreateIndex: before.CreateIndex });
    expect(after.Events).toEqual(before.Events);

    const [impostor] = await m.write(registered("n1", "bb"));
    expect(impostor).toMatchObject({ status: "rejected", code: 403 });
    expect(m.tables.nodes.get("n1")).toBe(after);
    expect(m.tables.nodeSecrets.get("n1")?.SecretIDHash).toBe("aa");
  });

  it("applies a status change only from the status it was decided on", async () => {
    const m = await readyNode();
    const node = m.tables.nodes.get("n1")!;
    const [stale] = await m.write(statusChange("n1", "initializing", "ready"));
    expect(stale).toMatchObject({ status: "rejected", code: 409 });
    expect(m.tables.nodes.get("n1")).toBe(node);
    const [missing] = await m.write(statusChange("ghost", "ready", "down"));
    expect(missing).toMatchObject({ status: "rejected", code: 404 });
  });

  it("tracks LastMissedHeartbeatIndex as Nomad's state store does", async () => {
    const m = await readyNode();
    const steps: [NodeStatus, NodeStatus, (index: number, before: number) => number][] = [
      ["ready", "disconnected", (index) => index],
      ["disconnected", "down", (_index, before) => before],
      ["down", "ready", () => 0],
      ["ready", "disconnected", (index) => index],
      ["disconnected", "initializing", (_index, before) => before],
      ["initializing", "ready", () => 0],
    ];
    for (const [from, to, expected] of steps) {
      const before = m.tables.nodes.get("n1")!.LastMissedHeartbeatIndex;
      const [outcome] = await m.write(statusChange("n1", from, to));
      expect(outcome?.status).toBe("applied");
      expect(m.tables.nodes.get("n1")!.LastMissedHeartbeatIndex, `${from} -> ${to}`).toBe(
        expected(outcome!.index, before),
      );
    }
  });

  it("keeps the last ten node events", async () => {
    const m = await readyNode();
    const events = Array.from({ length: 12 }, (_, i) => ({
      Message: `event ${i}`,
      Subsystem: "Driver",
      Details: null,
      Timestamp: "2025-11-22T08:26:40Z",
    }));
    const [outcome] = await m.write({ type: "NodeEventsAppended", v: 1, data: { Events: { n1: events } } });
    const stored = m.tables.nodes.get("n1")!.Events;
    expect(stored).toHaveLength(MAX_RETAINED_NODE_EVENTS);
    expect(stored.at(-1)).toMatchObject({ Message: "event 11", CreateIndex: outcome!.index });
    expect(stored[0]!.Message).toBe("event 2");
  });
});

describe("allocations projection", () => {
  it("places allocations only on ready nodes, and requires a job", async () => {
    const m = await memoryStore();
    await m.write(registered("n1"));
    const [notReady] = await m.write(placed(alloc("a1", "n1")));
    expect(notReady).toMatchObject({ status: "rejected", code: 409 });
    await m.write(statusChange("n1", "initializing", "ready"));
    const [noJob] = await m.write(placed(alloc("a1", "n1", { Job: null })));
    expect(noJob).toMatchObject({ status: "rejected", code: 400 });
    const [ok] = await m.write(placed(alloc("a1", "n1")));
    expect(m.tables.allocs.get("a1")).toMatchObject({
      CreateIndex: ok!.index,
      ModifyIndex: ok!.index,
      AllocModifyIndex: ok!.index,
    });
    const [twice] = await m.write(placed(alloc("a1", "n1")));
    expect(twice).toMatchObject({ status: "rejected", code: 409 });
  });

  it("applies in-place updates, stops and preemptions as Nomad's plan apply does", async () => {
    const m = await readyNode();
    await m.write(placed(alloc("a1", "n1"), alloc("a2", "n1")));
    await m.write(clientUpdate("a1", "n1", "running"));
    const [update] = await m.write({
      type: "AllocsPlanApplied",
      v: 1,
      data: {
        EvalID: "e1",
        Placed: [alloc("a3", "n1", { PreviousAllocation: "a2" })],
        Updated: [
          alloc("a1", "n1", {
            ClientStatus: "pending",
            TaskStates: null,
            DesiredDescription: "in place",
            Job: null,
          }),
        ],
        Stopped: [
          {
            ID: "a2",
            DesiredDescription: "alloc is lost since its node is down",
            ClientStatus: "lost",
            FollowupEvalID: "",
            ModifyTime: 5,
          },
        ],
        Preempted: [],
      },
    });
    expect(update?.status).toBe("applied");
    const a1 = m.tables.allocs.get("a1")!;
    // The client's status and task states survive; the job is re-attached.
    expect(a1).toMatchObject({
      ClientStatus: "running",
      DesiredDescription: "in place",
      AllocModifyIndex: update!.index,
    });
    expect(a1.TaskStates).toEqual({ web: { State: "running" } });
    expect(a1.Job?.ID).toBe("web");
    const a2 = m.tables.allocs.get("a2")!;
    expect(a2).toMatchObject({ DesiredStatus: "stop", ClientStatus: "lost", NextAllocation: "a3" });
    expect(a2.AllocStates?.map((s) => s.Value)).toEqual(["lost"]);

    const [evict] = await m.write({
      type: "AllocsPlanApplied",
      v: 1,
      data: {
        EvalID: "e2",
        Placed: [],
        Updated: [],
        Stopped: [],
        Preempted: [{ ID: "a3", PreemptedByAllocation: "a9", ModifyTime: 6 }],
      },
    });
    expect(evict?.status).toBe("applied");
    expect(m.tables.allocs.get("a3")).toMatchObject({
      DesiredStatus: "evict",
      DesiredDescription: "Preempted by alloc ID a9",
      PreemptedByAllocation: "a9",
    });
    const [missing] = await m.write({
      type: "AllocsPlanApplied",
      v: 1,
      data: {
        EvalID: "e3",
        Placed: [],
        Updated: [],
        Stopped: [{ ID: "zz", DesiredDescription: "", ClientStatus: "", FollowupEvalID: "", ModifyTime: 0 }],
        Preempted: [],
      },
    });
    expect(missing).toMatchObject({ status: "rejected", code: 404 });
  });

  it("refuses a client update from a node that went down, changing neither table", async () => {
    const m = await readyNode();
    await m.write(placed(alloc("a1", "n1")));
    await m.write(statusChange("n1", "ready", "down"));
    const node = m.tables.nodes.get("n1")!;
    const row = m.tables.allocs.get("a1")!;
    const [refused] = await m.write(clientUpdate("a1", "n1", "running"));
    expect(refused).toMatchObject({
      status: "rejected",
      code: 409,
      reason: "node n1 is not allowed to update allocs while in status down",
    });
    expect(m.tables.nodes.get("n1")).toBe(node);
    expect(m.tables.allocs.get("a1")).toBe(row);
  });

  it("stamps LastAllocUpdateIndex without moving the node's ModifyIndex, and ignores other nodes' allocations", async () => {
    const m = await readyNode();
    await m.write(registered("n2"), statusChange("n2", "initializing", "ready"));
    await m.write(placed(alloc("a1", "n1")));
    const modify = m.tables.nodes.get("n2")!.ModifyIndex;
    const [outcome] = await m.write(clientUpdate("a1", "n2", "failed"));
    expect(outcome?.status).toBe("applied");
    expect(m.tables.nodes.get("n2")).toMatchObject({
      LastAllocUpdateIndex: outcome!.index,
      ModifyIndex: modify,
    });
    expect(m.tables.allocs.get("a1")!.ClientStatus).toBe("pending");
  });

  it("marks allocations unknown only on a disconnected node, and reconnects each once", async () => {
    const m = await readyNode();
    await m.write(placed(alloc("a1", "n1")));
    await m.write(clientUpdate("a1", "n1", "running"));
    const disconnect = {
      type: "AllocsDisconnected",
      v: 1,
      data: {
        NodeID: "n1",
        AllocIDs: ["a1"],
        ClientDescription: "alloc is unknown since its node is disconnected",
      },
    } as const;
    const [early] = await m.write(disconnect);
    expect(early).toMatchObject({ status: "rejected", code: 409 });
    await m.write(statusChange("n1", "ready", "disconnected"), disconnect, disconnect);
    expect(m.tables.allocs.get("a1")!.AllocStates?.map((s) => s.Value)).toEqual(["unknown"]);

    const reconnect = { type: "AllocsReconnected", v: 1, data: { NodeID: "n1", AllocIDs: ["a1"] } } as const;
    const [whileDisconnected] = await m.write(reconnect);
    expect(whileDisconnected).toMatchObject({ status: "rejected" });
    await m.write(statusChange("n1", "disconnected", "initializing"));
    // Still `unknown`: nothing to close yet.
    await m.write(reconnect);
    expect(m.tables.allocs.get("a1")!.AllocStates).toHaveLength(1);
    await m.write(clientUpdate("a1", "n1", "running"), reconnect, reconnect);
    expect(m.tables.allocs.get("a1")!.AllocStates?.map((s) => s.Value)).toEqual(["unknown", "running"]);
  });

  it("merges desired transitions", async () => {
    const m = await readyNode();
    await m.write(placed(alloc("a1", "n1", { DesiredTransition: { Reschedule: true } })));
    await m.write({
      type: "AllocsDesiredTransitionUpdated",
      v: 1,
      data: { Allocs: { a1: { Migrate: true, Reschedule: null } } },
    });
    expect(m.tables.allocs.get("a1")!.DesiredTransition).toEqual({ Reschedule: true, Migrate: true });
  });
});
