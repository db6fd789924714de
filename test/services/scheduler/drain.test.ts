import { afterEach, describe, expect, it } from "vitest";
import type { NodeRow } from "../../../projections/nodes.ts";
import { Scenario, serviceJob } from "./scenario.ts";

const scenarios: Scenario[] = [];
afterEach(async () => {
  for (const s of scenarios.splice(0)) await s.stop();
});

const HEALTHY = { DeploymentStatus: { Healthy: true, Timestamp: "2025-11-22T08:00:00Z" } };
const ALLOC_MIGRATING = "alloc is being migrated";

describe("node drain", () => {
  it("migrates the node's allocations elsewhere, then completes the drain", async () => {
    const s = await Scenario.start();
    scenarios.push(s);
    for (let i = 0; i < 3; i++) await s.addNode();
    await s.register(serviceJob("web", 2, { Update: { MaxParallel: 0 } }));
    await s.idle();
    await s.report(s.allocs("web"), "running", HEALTHY);
    const original = s.allocs("web")[0]!;
    const res = await s.call(`/v1/node/${original.NodeID}/drain`, "PUT", {
      DrainSpec: { Deadline: 3_600e9 },
    });
    expect(res.status, res.text).toBe(200);
    await s.idle();

    const moved = s.allocs("web").find((a) => a.ID === original.ID)!;
    expect(moved).toMatchObject({
      DesiredStatus: "stop",
      DesiredDescription: ALLOC_MIGRATING,
      DesiredTransition: { Migrate: true },
    });
    const replacement = s.allocs("web").find((a) => a.PreviousAllocation === original.ID)!;
    expect(replacement.NodeID).not.toBe(original.NodeID);
    expect(s.allocs("web")).toHaveLength(3);
    expect(s.evals("web").some((e) => e.TriggeredBy === "node-drain")).toBe(true);

    // The client stops the original; the drain has nothing left and completes.
    await s.report([moved], "complete");
    const node = s.server.store.table<NodeRow>("nodes").get(original.NodeID)!;
    expect(node.DrainStrategy).toBeNull();
    expect(node.LastDrain?.Status).toBe("complete");
    expect(node.SchedulingEligibility).toBe("ineligible");
    expect(node.Events.at(-1)?.Message).toBe("Node drain complete");
  });

  it("moves at most migrate.max_parallel at a time, waiting for replacements to be healthy", async () => {
    const s = await Scenario.start();
    scenarios.push(s);
    await s.addNode();
    await s.addNode();
    await s.register(serviceJob("api", 4, { Update: { MaxParallel: 0 } }));
    await s.idle();
    await s.report(s.allocs("api"), "running", HEALTHY);
    const drained = s.allocs("api")[0]!.NodeID;
    expect(s.allocs("api").filter((a) => a.NodeID === drained)).toHaveLength(2);
    await s.call(`/v1/node/${drained}/drain`, "PUT", { DrainSpec: { Deadline: 3_600e9 } });
    await s.idle();
    const marked = () =>
      s.allocs("api").filter((a) => a.NodeID === drained && a.DesiredTransition.Migrate === true);
    expect(marked()).toHaveLength(1);
    const first = s.allocs("api").find((a) => a.PreviousAllocation === marked()[0]!.ID)!;
    expect(first.NodeID).not.toBe(drained);
    await s.advance(20_000);
    expect(marked()).toHaveLength(1);
    await s.report([first], "running", HEALTHY);
    expect(marked()).toHaveLength(2);
    expect(s.live("api").filter((a) => a.NodeID !== drained)).toHaveLength(4);
  });
});
