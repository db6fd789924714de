import { afterEach, describe, expect, it } from "vitest";
import type { HistoryEntry } from "../../../projections/history.ts";
import { Scenario, serviceJob } from "./scenario.ts";

const scenarios: Scenario[] = [];
afterEach(async () => {
  for (const s of scenarios.splice(0)) await s.stop();
});

const HEALTHY = { DeploymentStatus: { Healthy: true, Timestamp: "2025-11-22T08:00:00Z" } };

async function historyOf(s: Scenario, path: string): Promise<HistoryEntry[]> {
  const res = await s.call(path);
  expect(res.status, res.text).toBe(200);
  return res.body as HistoryEntry[];
}

describe("audit trail of a drain", () => {
  it("links the migration marks, the drain's evaluation and the replacement back to the drain", async () => {
    const s = await Scenario.start();
    scenarios.push(s);
    await s.addNode();
    await s.addNode();
    await s.register(serviceJob("web", 1));
    await s.idle();
    await s.report(s.allocs("web"), "running", HEALTHY);
    const original = s.allocs("web")[0]!;
    const res = await s.call(`/v1/node/${original.NodeID}/drain`, "PUT", {
      DrainSpec: { Deadline: 3_600e9, IgnoreSystemJobs: false },
      Meta: { message: "kernel upgrade" },
    });
    expect(res.status, res.text).toBe(200);
    await s.idle();

    // The node's history: the drain's start, with its deadline and message.
    const nodeHistory = await historyOf(s, `/v1/node/${original.NodeID}/history`);
    const started = nodeHistory.find((h) => h.Field === "DrainStrategy" && h.From === null)!;
    expect(started.To).toMatchObject({ Deadline: 3_600e9, Meta: { message: "kernel upgrade" } });
    expect(started.Actor).toMatchObject({ kind: "remote", addr: "127.0.0.1" });

    // The allocation's migration mark names the drain's record.
    const allocHistory = await historyOf(s, `/v1/allocation/${original.ID}/history`);
    const mark = allocHistory.find((h) => h.Field === "DesiredTransition")!;
    expect(mark.To).toMatchObject({ Migrate: true });
    expect(mark.Cause).toMatchObject({
      Event: "AllocsDesiredTransitionUpdated",
      Type: "NodeDrainUpdated",
      NodeID: original.NodeID,
      Index: started.Index,
    });
    expect(mark.Actor.kind).toBe("server");

    // The node-drain evaluation names it too; the replacement names the evaluation.
    const evaluation = s.evals("web").find((e) => e.TriggeredBy === "node-drain")!;
    const evalHistory = await historyOf(s, `/v1/evaluation/${evaluation.ID}/history`);
    expect(evalHistory[0]).toMatchObject({
      Field: "(created)",
      Index: evaluation.CreateIndex,
      Cause: { Type: "NodeDrainUpdated", Index: started.Index, NodeID: original.NodeID },
    });
    const replacement = s.allocs("web").find((a) => a.PreviousAllocation === original.ID)!;
    const replacementHistory = await historyOf(s, `/v1/allocation/${replacement.ID}/history`);
    expect(replacementHistory[0]).toMatchObject({
      Field: "(created)",
      Cause: {
        Event: "AllocsPlanApplied",
        EvalID: evaluation.ID,
        Type: "EvaluationsUpserted",
        Index: evaluation.CreateIndex,
      },
    });

    // The drain completes once the original stops; that record names the drain it ends.
    await s.report([s.allocs("web").find((a) => a.ID === original.ID)!], "complete");
    const after = await historyOf(s, `/v1/node/${original.NodeID}/history`);
    const ended = after.find((h) => h.Field === "DrainStrategy" && h.To === null)!;
    expect(ended.Cause).toMatchObject({
      Event: "NodeDrainUpdated",
      Type: "NodeDrainUpdated",
      Index: started.Index,
    });
  });

  it("links what a missed heartbeat does to the node going down", async () => {
    const s = await Scenario.start();
    scenarios.push(s);
    const quiet = await s.addNode();
    await s.register(serviceJob("web", 1));
    await s.idle();
    await s.report(s.allocs("web"), "running", HEALTHY);
    const lost = s.allocs("web")[0]!;
    expect(lost.NodeID).toBe(quiet.id);
    s.silent.add(quiet.id);
    await s.advance(60_000);

    const history = await historyOf(s, `/v1/allocation/${lost.ID}/history`);
    const entry = history.find((h) => h.Field === "ClientStatus" && h.To === "lost")!;
    expect(entry.Cause).toMatchObject({
      Event: "AllocsLost",
      Type: "NodeStatusUpdated",
      NodeID: quiet.id,
    });
    const evaluation = s.evals("web").find((e) => e.TriggeredBy === "node-update")!;
    const evalHistory = await historyOf(s, `/v1/evaluation/${evaluation.ID}/history`);
    expect(evalHistory[0]!.Cause).toMatchObject({ Type: "NodeStatusUpdated", NodeID: quiet.id });
  });
});
