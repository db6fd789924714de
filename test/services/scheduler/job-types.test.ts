import { afterEach, describe, expect, it } from "vitest";
import { Scenario, SECOND_NS, serviceJob } from "./scenario.ts";

const scenarios: Scenario[] = [];
async function start(nodes: number) {
  const s = await Scenario.start();
  scenarios.push(s);
  for (let i = 0; i < nodes; i++) await s.addNode();
  return s;
}
afterEach(async () => {
  for (const s of scenarios.splice(0)) await s.stop();
});

const ALLOC_RESCHEDULED = "alloc was rescheduled because it failed";

function typedJob(id: string, type: string, count: number, extra: Record<string, unknown> = {}) {
  return {
    ID: id,
    Type: type,
    Datacenters: ["dc1"],
    TaskGroups: [
      {
        Name: "work",
        Count: count,
        Tasks: [
          {
            Name: "task",
            Driver: "exec",
            Config: { command: "/bin/true" },
            Resources: { CPU: 200, MemoryMB: 128 },
          },
        ],
      },
    ],
    ...extra,
  };
}

describe("batch jobs", () => {
  it("run to completion: allocations that complete are not replaced, and the job ends dead", async () => {
    const s = await start(2);
    await s.register(typedJob("report", "batch", 2));
    await s.idle();
    const placed = s.allocs("report");
    expect(placed).toHaveLength(2);
    expect(s.job("report")?.Status).toBe("running");
    await s.report(placed, "running");
    await s.report(placed, "complete");
    await s.advance(60_000);
    const after = s.allocs("report");
    expect(after).toHaveLength(2);
    expect(after.every((a) => a.ClientStatus === "complete" && a.DesiredStatus === "run")).toBe(true);
    expect(s.job("report")?.Status).toBe("dead");
    const summary = (await s.call("/v1/job/report/summary")).body as {
      Summary: Record<string, Record<string, number>>;
    };
    expect(summary.Summary.work).toMatchObject({ Complete: 2, Running: 0, Starting: 0, Queued: 0 });
  });

  it("reschedules a failed batch allocation once, after its 5 s delay", async () => {
    const s = await start(2);
    await s.register(typedJob("once", "batch", 1));
    await s.idle();
    const [first] = s.allocs("once");
    await s.report([first!], "failed");
    // Nomad's batch default: one attempt per 24 h, 5 s constant delay.
    const followup = s
      .evals("once")
      .find((e) => e.TriggeredBy === "alloc-failure" && e.WaitUntil !== "0001-01-01T00:00:00Z");
    expect(followup).toBeDefined();
    await s.advance(4_000, 1_000);
    expect(s.allocs("once")).toHaveLength(1);
    await s.advance(2_000, 1_000);
    const [, second] = s.allocs("once");
    expect(second).toMatchObject({ PreviousAllocation: first!.ID });
    expect(second!.RescheduleTracker?.Events?.[0]).toMatchObject({
      PrevAllocID: first!.ID,
      Delay: 5 * SECOND_NS,
    });
    await s.report([second!], "failed");
    await s.advance(60_000);
    // No attempts left.
    expect(s.allocs("once")).toHaveLength(2);
  });
});

describe("service rescheduling", () => {
  it("replaces a failed allocation on another node after 30 s, then 60 s (exponential), never sooner", async () => {
    const s = await start(3);
    await s.register(serviceJob("api", 1, { Update: { MaxParallel: 0 } }));
    await s.idle();
    const [a] = s.allocs("api");
    await s.report([a!], "running");
    await s.report([a!], "failed");
    const failedAt = s.clock.now();
    const followup = s.evals("api").find((e) => e.TriggeredBy === "alloc-failure" && e.Status === "pending")!;
    expect(Date.parse(followup.WaitUntil) - failedAt).toBeGreaterThanOrEqual(29_000);
    expect(Date.parse(followup.WaitUntil) - failedAt).toBeLessThanOrEqual(31_000);
    expect(s.allocs("api")[0]!.FollowupEvalID).toBe(followup.ID);
    await s.advance(25_000);
    expect(s.allocs("api")).toHaveLength(1);
    await s.advance(10_000);
    const all = s.allocs("api");
    expect(all).toHaveLength(2);
    const b = all[1]!;
    expect(b).toMatchObject({ PreviousAllocation: a!.ID, DesiredStatus: "run" });
    expect(b.NodeID).not.toBe(a!.NodeID);
    expect(b.RescheduleTracker?.Events?.map((e) => e.Delay)).toEqual([30 * SECOND_NS]);
    expect(s.allocs("api")[0]).toMatchObject({
      DesiredStatus: "stop",
      DesiredDescription: ALLOC_RESCHEDULED,
    });

    await s.report([b], "running");
    await s.report([b], "failed");
    await s.advance(55_000);
    expect(s.allocs("api")).toHaveLength(2);
    await s.advance(10_000);
    const c = s.allocs("api")[2]!;
    expect(c.RescheduleTracker?.Events?.map((e) => e.Delay)).toEqual([30 * SECOND_NS, 60 * SECOND_NS]);
  });
});

describe("system jobs", () => {
  it("land on every eligible node, on a node that joins later, and not on an ineligible one", async () => {
    const s = await start(3);
    const other = await s.addNode({ Datacenter: "dc2" });
    await s.register(typedJob("agent", "system", 1));
    await s.idle();
    const placed = s.allocs("agent");
    expect(placed).toHaveLength(3);
    expect(placed.some((a) => a.NodeID === other.id)).toBe(false);
    expect(placed.map((a) => a.Name)).toEqual(["agent.work[0]", "agent.work[0]", "agent.work[0]"]);

    const late = await s.addNode();
    await s.idle();
    const now = s.allocs("agent");
    expect(now).toHaveLength(4);
    expect(now.filter((a) => a.NodeID === late.id)).toHaveLength(1);

    const off = await s.call(`/v1/node/${s.nodes[0]!.id}/eligibility`, "PUT", { Eligibility: "ineligible" });
    expect(off.status, off.text).toBe(200);
    await s.advance(10_000);
    // An ineligible node keeps what it runs, and gets nothing new.
    expect(s.allocs("agent")).toHaveLength(4);
    expect(s.live("agent")).toHaveLength(4);
  });

  it("sysbatch: one run per node, not repeated once complete", async () => {
    const s = await start(2);
    await s.register(typedJob("sweep", "sysbatch", 1));
    await s.idle();
    const placed = s.allocs("sweep");
    expect(placed).toHaveLength(2);
    await s.report(placed, "complete");
    await s.advance(30_000);
    await s.call("/v1/job/sweep/evaluate", "PUT", {});
    await s.idle();
    expect(s.allocs("sweep")).toHaveLength(2);
  });
});
