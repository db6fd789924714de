import { describe, expect, it } from "vitest";
import { computeInProcess } from "../../../src/services/scheduler/worker.ts";
import { planApplyWorld } from "./plan-apply-world.ts";

const world = () => planApplyWorld();

describe("a plan computed at an older index, checked again at apply", () => {
  it("is refused on a node that no longer has room, and says so", async () => {
    const w = await world();
    await w.addNode("n1");
    const a = await w.register("a");
    const b = await w.register("b");
    // Both computed against the same tables: each sees the one free slot.
    const passA = computeInProcess(w.rt, a, 0);
    const passB = computeInProcess(w.rt, b, 0);
    expect(passB.snapshotIndex).toBe(passA.snapshotIndex);
    expect(passB.outcome.plan.placements.map((p) => p.NodeID)).toEqual(["n1"]);

    const first = await w.submit(passA);
    expect(first).toMatchObject({ fullCommit: true, progress: true, refusedNodes: [] });
    const second = await w.submit(passB);
    expect(second).toMatchObject({ fullCommit: false, progress: false, refusedNodes: ["n1"] });
    expect(w.m.tables.allocs.countBy("node", "n1")).toBe(1);
    const refusal = w.m.tables.planRefusals.by("eval", b.ID)[0];
    expect(refusal?.Nodes[0]?.Reason).toMatch(/^resources exhausted/);

    // Nomad's RefreshIndex: a pass against the tables as they are now sees no room and places nothing.
    const again = computeInProcess(w.rt, b, 1);
    expect(again.snapshotIndex).toBeGreaterThanOrEqual(second.index);
    expect(again.outcome.plan.placements).toEqual([]);
    expect(again.outcome.failedTGAllocs?.g?.NodesExhausted).toBe(1);
  });

  it("is refused on a node made ineligible after it was computed; records without an index apply as they did", async () => {
    const w = await world();
    await w.addNode("n1");
    const a = await w.register("a");
    const pass = computeInProcess(w.rt, a, 0);
    expect(pass.outcome.plan.placements.map((p) => p.NodeID)).toEqual(["n1"]);
    const [ineligible] = await w.m.write({
      type: "NodeEligibilityUpdated",
      v: 1,
      data: { NodeID: "n1", Eligibility: "ineligible", NodeEvent: null },
    });
    expect(ineligible?.status).toBe("applied");

    const result = await w.submit(pass);
    expect(result).toMatchObject({ fullCommit: false, refusedNodes: ["n1"] });
    const refusal = w.m.tables.planRefusals.by("eval", a.ID)[0];
    expect(refusal?.Nodes[0]?.Reason).toBe("node is not eligible");
    expect(w.m.tables.allocs.countBy("node", "n1")).toBe(0);

    // A record of before SnapshotIndex existed (written without it) replays as it applied then.
    const legacy = await w.submit(pass, true);
    expect(legacy).toMatchObject({ fullCommit: true, refusedNodes: [] });
    expect(w.m.tables.allocs.countBy("node", "n1")).toBe(1);
  });

  it("is refused for allocations stopped since it was computed", async () => {
    const w = await world();
    await w.addNode("n1");
    const a = await w.register("a");
    expect((await w.submit(computeInProcess(w.rt, a, 0))).fullCommit).toBe(true);
    const [placed] = w.m.tables.allocs.by("node", "n1");
    // A pass that would mark the allocation unknown, computed before the plan that stops it applies.
    const pass = computeInProcess(w.rt, a, 1);
    pass.outcome.plan.disconnected.push({ ID: placed!.ID, FollowupEvalID: "" });
    pass.outcome.plan.inPlace.push(placed!.ID);
    const [stopped] = await w.m.write({
      type: "AllocsPlanApplied",
      v: 1,
      data: {
        EvalID: a.ID,
        Placed: [],
        Updated: [],
        Stopped: [
          {
            ID: placed!.ID,
            DesiredDescription: "stopped",
            ClientStatus: "",
            FollowupEvalID: "",
            ModifyTime: 0,
          },
        ],
        Preempted: [],
      },
    });
    expect(stopped?.status).toBe("applied");
    const result = await w.submit(pass);
    expect(result.fullCommit).toBe(false);
    const refusal = [...w.m.tables.planRefusals.all()].find((r) => r.Allocs.length > 0);
    expect(refusal?.Allocs.map((x) => x.Reason)).toContain("allocation was stopped");
    expect(w.m.tables.allocs.get(placed!.ID)?.DesiredStatus).toBe("stop");
  });
});
