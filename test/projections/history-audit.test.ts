import { describe, expect, it } from "vitest";
import { type HistoryEntry, historyKey } from "../../projections/history.ts";
import { jobDiffSummary, MAX_TASK_EVENTS_PER_UPDATE } from "../../projections/history-details.ts";
import { drainStartIn } from "../../src/services/node-drainer.ts";
import type { Draft } from "../../src/store/writer.ts";
import type { NodeDrainUpdated } from "../../streams/nodes.ts";
import { AT, alloc, clientUpdate, memoryStore, placed, registered, statusChange } from "./memory-store.ts";

async function readyNode(id = "n1") {
  const m = await memoryStore();
  await m.write(registered(id), statusChange(id, "initializing", "ready"));
  const history = (object: string, oid: string): readonly HistoryEntry[] =>
    m.history.entries(historyKey(object, oid));
  return { ...m, history };
}

const drain = (nodeID: string, fields: Partial<NodeDrainUpdated> = {}): Draft => {
  const data: NodeDrainUpdated = {
    NodeID: nodeID,
    DrainStrategy: {
      DrainSpec: { Deadline: 3_600e9, IgnoreSystemJobs: false },
      ForceDeadline: "2025-11-22T09:26:40Z",
      StartedAt: "2025-11-22T08:26:40Z",
    },
    MarkEligible: false,
    Meta: { message: "kernel upgrade" },
    AccessorID: "",
    NodeEvent: null,
    ...fields,
  };
  return { type: "NodeDrainUpdated", v: 1, data };
};

interface TaskEvent {
  Type: string;
  Time: number;
  DisplayMessage?: string;
  Message?: string;
}

const taskUpdate = (id: string, nodeID: string, events: Record<string, TaskEvent[]>): Draft => ({
  type: "AllocClientUpdated",
  v: 1,
  data: {
    Allocs: [
      {
        ID: id,
        NodeID: nodeID,
        ClientStatus: "running",
        ClientDescription: "",
        TaskStates: Object.fromEntries(
          Object.entries(events).map(([task, list]) => [task, { State: "running", Events: list }]),
        ),
        DeploymentStatus: null,
        NetworkStatus: null,
        ModifyTime: AT * 1e6,
      },
    ],
  },
});

const event = (i: number, type = "Started"): TaskEvent => ({
  Type: type,
  // Nanoseconds a millisecond apart, as clients stamp them (closer ones round together as doubles).
  Time: (AT + i) * 1e6,
  DisplayMessage: `event ${i}`,
});

describe("history: causes", () => {
  it("carries the envelope's cause beside the data's own fields", async () => {
    const m = await readyNode();
    await m.write(placed(alloc("a1", "n1")));
    const [marked] = await m.write({
      type: "AllocsDesiredTransitionUpdated",
      v: 1,
      data: { Allocs: { a1: { Migrate: true } } },
      cause: { type: "NodeDrainUpdated", nodeId: "n1", index: 7 },
    });
    const entry = m.history("allocation", "a1").find((h) => h.Field === "DesiredTransition")!;
    expect(entry.Index).toBe(marked!.index);
    expect(entry.Cause).toEqual({
      Event: "AllocsDesiredTransitionUpdated",
      Type: "NodeDrainUpdated",
      Index: 7,
      NodeID: "n1",
    });

    // The data's EvalID stays; the link adds its type and index.
    await m.write({
      type: "AllocsPlanApplied",
      v: 1,
      data: { EvalID: "e1", Placed: [alloc("a2", "n1")], Updated: [], Stopped: [], Preempted: [] },
      cause: { type: "EvaluationsUpserted", evalId: "e1", index: 5 },
    });
    expect(m.history("allocation", "a2")[0]!.Cause).toEqual({
      Event: "AllocsPlanApplied",
      EvalID: "e1",
      Type: "EvaluationsUpserted",
      Index: 5,
    });

    // A record without a cause has none of the link's fields.
    await m.write(statusChange("n1", "ready", "down"));
    const down = m.history("node", "n1").find((h) => h.Field === "Status" && h.To === "down")!;
    expect(down.Cause).toEqual({ Event: "NodeStatusUpdated", Cause: "heartbeat", NodeID: "n1" });
  });
});

describe("history: node drains", () => {
  it("shows a drain's terms and message from its start to its end, and where it started", async () => {
    const m = await readyNode();
    const [started] = await m.write(drain("n1"));
    const drains = () => m.history("node", "n1").filter((h) => h.Field === "DrainStrategy");
    expect(drains()).toEqual([
      expect.objectContaining({
        Index: started!.index,
        From: null,
        To: {
          Deadline: 3_600e9,
          IgnoreSystemJobs: false,
          ForceDeadline: "2025-11-22T09:26:40Z",
          Meta: { message: "kernel upgrade" },
        },
      }),
    ]);
    expect(drainStartIn(m.history("node", "n1"))).toBe(started!.index);

    // A new deadline: an update of the same drain, which still began where it began.
    const [updated] = await m.write(
      drain("n1", {
        DrainStrategy: {
          DrainSpec: { Deadline: 60e9, IgnoreSystemJobs: true },
          ForceDeadline: "2025-11-22T08:27:40Z",
          StartedAt: "2025-11-22T08:26:40Z",
        },
        Meta: null,
      }),
    );
    expect(drains()[1]).toMatchObject({
      Index: updated!.index,
      From: { Deadline: 3_600e9 },
      To: { Deadline: 60e9, IgnoreSystemJobs: true, Meta: { message: "kernel upgrade" } },
    });
    expect(drainStartIn(m.history("node", "n1"))).toBe(started!.index);

    const [complete] = await m.write(drain("n1", { DrainStrategy: null, Meta: null, Complete: true }));
    expect(drains()[2]).toMatchObject({ Index: complete!.index, To: null });
    expect(drainStartIn(m.history("node", "n1"))).toBeUndefined();

    const [again] = await m.write(drain("n1", { Meta: { message: "second" } }));
    expect(drainStartIn(m.history("node", "n1"))).toBe(again!.index);
    expect(drains()[3]!.To).toMatchObject({ Meta: { message: "second" } });
  });
});

describe("history: task events", () => {
  it("adds one entry per new task event, however the client trims its list", async () => {
    const m = await readyNode();
    await m.write(placed(alloc("a1", "n1")));
    const taskEvents = () =>
      m
        .history("allocation", "a1")
        .filter((h) => h.Field === "TaskEvents")
        .map((h) => h.To);

    await m.write(taskUpdate("a1", "n1", { web: [event(1, "Received"), event(2, "Task Setup")] }));
    expect(taskEvents()).toEqual([
      { Task: "web", Type: "Received", Time: (AT + 1) * 1e6, DisplayMessage: "event 1" },
      { Task: "web", Type: "Task Setup", Time: (AT + 2) * 1e6, DisplayMessage: "event 2" },
    ]);

    // The same events again, one new, and a second task.
    await m.write(
      taskUpdate("a1", "n1", {
        web: [event(1, "Received"), event(2, "Task Setup"), { ...event(3), Message: "raw" }],
        sidecar: [event(3, "Received")],
      }),
    );
    expect(taskEvents().slice(2)).toEqual([
      { Task: "web", Type: "Started", Time: (AT + 3) * 1e6, DisplayMessage: "event 3", Message: "raw" },
      { Task: "sidecar", Type: "Received", Time: (AT + 3) * 1e6, DisplayMessage: "event 3" },
    ]);

    // The client dropped old events from the front: only the last is new.
    await m.write(
      taskUpdate("a1", "n1", { web: [event(3), event(4, "Killing")], sidecar: [event(3, "Received")] }),
    );
    expect(taskEvents().slice(4)).toEqual([
      { Task: "web", Type: "Killing", Time: (AT + 4) * 1e6, DisplayMessage: "event 4" },
    ]);

    // An update with nothing new adds no entry.
    const before = m.history("allocation", "a1").length;
    await m.write(
      taskUpdate("a1", "n1", { web: [event(3), event(4, "Killing")], sidecar: [event(3, "Received")] }),
    );
    expect(m.history("allocation", "a1")).toHaveLength(before);
  });

  it("names each allocation's own node as the actor of a client update record reporting several nodes", async () => {
    const m = await readyNode("n1");
    await m.write(registered("n2"), statusChange("n2", "initializing", "ready"));
    const spread = [
      ["a1", "n1"],
      ["a2", "n1"],
      ["b1", "n2"],
      ["a3", "n1"],
      ["b2", "n2"],
    ] as const;
    await m.write(placed(...spread.map(([id, node]) => alloc(id, node))));
    const reports = spread.map(
      ([id, node]) => clientUpdate(id, node, "running").data as { Allocs: unknown[] },
    );
    await m.write({ type: "AllocClientUpdated", v: 1, data: { Allocs: reports.flatMap((r) => r.Allocs) } });
    for (const [id, node] of spread) {
      const running = m.history("allocation", id).find((h) => h.Field === "ClientStatus");
      expect(running?.Actor).toEqual({ kind: "node", id: node });
    }
  });

  it("caps the entries one update adds, counting the rest", async () => {
    const m = await readyNode();
    await m.write(placed(alloc("a1", "n1")));
    const many = Array.from({ length: MAX_TASK_EVENTS_PER_UPDATE + 7 }, (_, i) => event(i + 1));
    await m.write(taskUpdate("a1", "n1", { web: many }));
    const added = m.history("allocation", "a1").filter((h) => h.Field === "TaskEvents");
    expect(added).toHaveLength(MAX_TASK_EVENTS_PER_UPDATE + 1);
    expect(added.at(-1)!.To).toEqual({ Omitted: 7 });
    expect(added[0]!.To).toMatchObject({ Time: (AT + 1) * 1e6 });
  });
});

describe("history: job version diffs", () => {
  const job = (count: number, image: string) => ({
    ID: "web",
    Namespace: "default",
    Type: "service",
    Priority: 50,
    Datacenters: ["dc1"],
    Version: 0,
    TaskGroups: [
      {
        Name: "web",
        Count: count,
        Tasks: [
          { Name: "server", Driver: "docker", Config: { image }, Resources: { CPU: 500, MemoryMB: 256 } },
        ],
      },
    ],
  });

  it("summarizes Nomad's JobDiff: type, changed fields of the job, its groups and tasks", () => {
    const diff = jobDiffSummary(job(1, "nginx:1"), { ...job(2, "nginx:2"), Priority: 70 })!;
    expect(diff).toEqual({
      Type: "Edited",
      Fields: [{ Name: "Priority", Type: "Edited", Old: "50", New: "70" }],
      TaskGroups: [
        {
          Name: "web",
          Type: "Edited",
          Fields: [{ Name: "Count", Type: "Edited", Old: "1", New: "2" }],
          Tasks: [
            {
              Name: "server",
              Type: "Edited",
              Objects: [
                {
                  Name: "Config",
                  Type: "Edited",
                  Fields: [{ Name: "image", Type: "Edited", Old: "nginx:1", New: "nginx:2" }],
                },
              ],
            },
          ],
        },
      ],
    });
  });

  it("keeps a summary small: long values cut, at most so many fields", () => {
    const wide = (v: string) => ({
      ...job(1, v.repeat(1000)),
      Meta: Object.fromEntries(Array.from({ length: 100 }, (_, i) => [`k${i}`, v])),
    });
    const diff = jobDiffSummary(wide("a"), wide("b"))!;
    expect(diff.Truncated).toBe(true);
    expect(JSON.stringify(diff).length).toBeLessThan(8_000);
  });
});
