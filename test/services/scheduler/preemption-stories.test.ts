import { afterEach, describe, expect, it } from "vitest";
import type { HistoryEntry } from "../../../projections/history.ts";
import { replayOvercommits } from "./capacity-check.ts";
import { Scenario, serviceJob } from "./scenario.ts";

const scenarios: Scenario[] = [];
afterEach(async () => {
  for (const s of scenarios.splice(0)) await s.stop();
});

/** Two nodes of 4000 MHz filled by eight 1000 MHz allocations of a priority-30 service job. */
async function fullCluster(config?: Record<string, boolean>): Promise<Scenario> {
  const s = await Scenario.start();
  scenarios.push(s);
  if (config) {
    const res = await s.call("/v1/operator/scheduler/configuration", "PUT", {
      SchedulerAlgorithm: "binpack",
      PreemptionConfig: {
        SystemSchedulerEnabled: true,
        SysBatchSchedulerEnabled: false,
        BatchSchedulerEnabled: false,
        ServiceSchedulerEnabled: false,
        ...config,
      },
    });
    expect(res.status, res.text).toBe(200);
  }
  await s.addNode();
  await s.addNode();
  await s.register(serviceJob("low", 8, { Priority: 30 }, { Tasks: [task("server", "docker", 1000, 512)] }));
  await s.idle();
  expect(s.live("low")).toHaveLength(8);
  await s.report(s.allocs("low"), "running");
  return s;
}

function task(name: string, driver: string, cpu: number, mem: number) {
  return {
    Name: name,
    Driver: driver,
    Config: { command: "/bin/agent" },
    Resources: { CPU: cpu, MemoryMB: mem },
  };
}

function systemJob(id: string, priority: number, cpu: number) {
  return {
    ID: id,
    Type: "system",
    Priority: priority,
    Datacenters: ["dc1"],
    TaskGroups: [{ Name: "agent", Count: 1, Tasks: [task("agent", "exec", cpu, 256)] }],
  };
}

async function historyOf(s: Scenario, id: string): Promise<HistoryEntry[]> {
  const res = await s.call(`/v1/allocation/${id}/history`);
  expect(res.status, res.text).toBe(200);
  return res.body as HistoryEntry[];
}

describe("preemption", () => {
  it("places a priority-100 system job on full nodes by evicting the priority-30 service allocations it needs", async () => {
    const s = await fullCluster();
    const job = await s.register(systemJob("agent", 100, 1500));
    await s.idle();

    const agents = s.live("agent");
    expect(agents.map((a) => a.NodeID).sort()).toEqual(s.nodes.map((n) => n.id).sort());
    const evicted = s.allocs("low").filter((a) => a.DesiredStatus === "evict");
    // 1500 MHz on a node with none free: two 1000 MHz allocations per node, no more.
    expect(evicted).toHaveLength(4);
    for (const agent of agents) {
      expect(agent.PreemptedAllocations).toHaveLength(2);
      for (const id of agent.PreemptedAllocations!) {
        const victim = evicted.find((a) => a.ID === id)!;
        expect(victim).toMatchObject({
          NodeID: agent.NodeID,
          DesiredStatus: "evict",
          DesiredDescription: `Preempted by alloc ID ${agent.ID}`,
          PreemptedByAllocation: agent.ID,
        });
      }
    }
    // The API shows both sides.
    const shown = await s.call(`/v1/allocation/${agents[0]!.ID}`);
    expect(shown.body).toMatchObject({ PreemptedAllocations: agents[0]!.PreemptedAllocations });

    // The preempted job got its evaluation in the same record, and cannot
    // come back: nothing it may evict, no room left.
    const preemption = s.evals("low").find((e) => e.TriggeredBy === "preemption");
    expect(preemption).toMatchObject({ Type: "service", Priority: 30, CreateIndex: evicted[0]!.ModifyIndex });
    expect(preemption?.Status).toBe("complete");
    expect(s.live("low").filter((a) => a.ClientStatus === "running")).toHaveLength(4);
    expect(s.evals("low").some((e) => e.Status === "blocked")).toBe(true);
    expect(s.live("agent")).toHaveLength(2);

    // The evicted allocation's history: run -> evict, caused by the system job's evaluation.
    const history = await historyOf(s, evicted[0]!.ID);
    const change = history.find((h) => h.Field === "DesiredStatus" && h.To === "evict")!;
    expect(change).toMatchObject({ From: "run", Index: evicted[0]!.ModifyIndex });
    expect(change.Cause).toMatchObject({ Event: "AllocsPlanApplied", EvalID: job.EvalID });
    const description = history.find((h) => h.Field === "DesiredDescription")!;
    expect(description.To).toBe(`Preempted by alloc ID ${evicted[0]!.PreemptedByAllocation}`);

    // No node is over capacity at any index of the log, and a replay rebuilds the same tables.
    const { violations, replay } = await replayOvercommits(s.server.log);
    expect(violations).toEqual([]);
    expect(replay.hash()).toBe(s.server.store.hash());
  });

  it("evicts nothing when the configuration disables it for system jobs: the placement fails on the exhausted dimension", async () => {
    const s = await fullCluster({ SystemSchedulerEnabled: false });
    const job = await s.register(systemJob("agent", 100, 1500));
    await s.idle();
    expect(s.live("agent")).toHaveLength(0);
    expect(s.allocs("low").filter((a) => a.DesiredStatus !== "run")).toEqual([]);
    expect(s.evals("low").some((e) => e.TriggeredBy === "preemption")).toBe(false);
    const evaluation = s.evals("agent").find((e) => e.ID === job.EvalID)!;
    const failed = evaluation.FailedTGAllocs?.agent as { DimensionExhausted: Record<string, number> };
    expect(Object.keys(failed.DimensionExhausted)).toEqual(["cpu"]);
  });

  it("never evicts a job within 10 of the placing job's priority", async () => {
    const s = await fullCluster();
    await s.register(systemJob("agent", 39, 1500));
    await s.idle();
    expect(s.live("agent")).toHaveLength(0);
    expect(s.allocs("low").every((a) => a.DesiredStatus === "run")).toBe(true);
  });

  it("lets a service job preempt only when ServiceSchedulerEnabled is set", async () => {
    const off = await fullCluster();
    await off.register(
      serviceJob("urgent", 1, { Priority: 80 }, { Tasks: [task("u", "docker", 1000, 256)] }),
    );
    await off.idle();
    expect(off.live("urgent")).toHaveLength(0);
    expect(off.allocs("low").every((a) => a.DesiredStatus === "run")).toBe(true);

    const on = await fullCluster({ ServiceSchedulerEnabled: true });
    const plan = await on.call("/v1/job/urgent/plan", "PUT", {
      Job: serviceJob("urgent", 1, { Priority: 80 }, { Tasks: [task("u", "docker", 1000, 256)] }),
    });
    expect(plan.status, plan.text).toBe(200);
    const annotations = (plan.body as { Annotations: Record<string, unknown> }).Annotations as {
      PreemptedAllocs: { ID: string; JobID: string; DesiredStatus: string }[];
      DesiredTGUpdates: Record<string, { Place: number; Preemptions: number }>;
    };
    expect(annotations.PreemptedAllocs).toHaveLength(1);
    expect(annotations.PreemptedAllocs[0]).toMatchObject({ JobID: "low", DesiredStatus: "run" });
    expect(annotations.DesiredTGUpdates.web).toMatchObject({ Place: 1, Preemptions: 1 });
    // A dry run: nothing was evicted.
    expect(on.allocs("low").every((a) => a.DesiredStatus === "run")).toBe(true);

    await on.register(serviceJob("urgent", 1, { Priority: 80 }, { Tasks: [task("u", "docker", 1000, 256)] }));
    await on.idle();
    const [placed] = on.live("urgent");
    expect(placed?.PreemptedAllocations).toHaveLength(1);
    const victim = on.allocs("low").find((a) => a.ID === placed!.PreemptedAllocations![0]);
    expect(victim).toMatchObject({
      DesiredStatus: "evict",
      PreemptedByAllocation: placed!.ID,
      NodeID: placed!.NodeID,
    });
    expect(on.allocs("low").filter((a) => a.DesiredStatus === "evict")).toHaveLength(1);
    // The plan annotations named the same kind of victim (a priority-30 allocation).
    expect(annotations.PreemptedAllocs[0]!.JobID).toBe(victim!.JobID);
  });

  it("shows no preemption in Job.Plan when the placement fits", async () => {
    const s = await Scenario.start();
    scenarios.push(s);
    await s.addNode();
    const plan = await s.call("/v1/job/agent/plan", "PUT", { Job: systemJob("agent", 100, 1500) });
    expect(plan.status, plan.text).toBe(200);
    expect(
      (plan.body as { Annotations: { PreemptedAllocs: unknown } }).Annotations.PreemptedAllocs,
    ).toBeNull();
  });
});
