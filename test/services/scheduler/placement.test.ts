import { afterEach, describe, expect, it } from "vitest";
import { PlacementWorld } from "../../../src/bench/placement-world.ts";
import { blockedEvalSpec } from "../../../src/services/scheduler/eval-update.ts";
import { Feasibility } from "../../../src/services/scheduler/feasibility.ts";
import { scheduleGeneric, scheduleGenericSliced } from "../../../src/services/scheduler/generic-scheduler.ts";
import { Plan } from "../../../src/services/scheduler/plan.ts";
import { seededRandom } from "../../../src/services/scheduler/rng.ts";
import { PlacementStack } from "../../../src/services/scheduler/stack.ts";
import { scheduleSystem, scheduleSystemSliced } from "../../../src/services/scheduler/system-scheduler.ts";

const worlds: PlacementWorld[] = [];
afterEach(async () => {
  for (const w of worlds.splice(0)) await w.stop();
});

async function world(): Promise<PlacementWorld> {
  const w = await PlacementWorld.start();
  worlds.push(w);
  return w;
}

function job(
  id: string,
  count: number,
  extra: Record<string, unknown> = {},
  group: Record<string, unknown> = {},
) {
  return {
    ID: id,
    Type: "service",
    Update: { MaxParallel: 0 },
    ...extra,
    TaskGroups: [
      {
        Name: "g",
        Count: count,
        EphemeralDisk: { SizeMB: 10 },
        Tasks: [
          { Name: "t", Driver: "docker", Config: { image: "x" }, Resources: { CPU: 100, MemoryMB: 64 } },
        ],
        ...group,
      },
    ],
  };
}

// biome-ignore lint/suspicious/noTemplateCurlyInString: Nomad's interpolation syntax
const LINUX = { LTarget: "${attr.kernel.name}", Operand: "=", RTarget: "linux" };
const WINDOWS = { Attributes: { "kernel.name": "windows", "os.name": "windows" }, NodeClass: "win" };

describe("placement in slices", () => {
  it("places exactly as the computation at once, and serves the event loop between slices", async () => {
    const w = await world();
    await w.addNodes(300);
    const e = await w.registerJob(job("big", 3_000));
    const once = scheduleGeneric(w.ctx(), e, { attempt: 0 });
    let turns = 0;
    let done = false;
    const tick = () => {
      if (done) return;
      turns++;
      setImmediate(tick);
    };
    setImmediate(tick);
    const sliced = await scheduleGenericSliced(w.ctx(), e, { attempt: 0 });
    done = true;
    expect(sliced.plan.placements.map((p) => [p.ID, p.Name, p.NodeID, p.Score])).toEqual(
      once.plan.placements.map((p) => [p.ID, p.Name, p.NodeID, p.Score]),
    );
    expect(once.plan.placements).toHaveLength(3_000);
    // 3,000 placements take far longer than one slice: other work ran in between.
    expect(turns).toBeGreaterThan(1);
  });

  it("replaces a placed job's allocations alike at once and in slices (the reconciler pauses too)", async () => {
    const w = await world();
    await w.addNodes(100);
    const e = await w.registerJob(job("web", 500));
    await w.apply(scheduleGeneric(w.ctx(), e, { attempt: 0 }));
    const stored = w.tables.jobs.get("default\u0000web")!;
    const newer = {
      ...stored,
      Version: stored.Version + 1,
      JobModifyIndex: stored.JobModifyIndex + 1,
      TaskGroups: stored.TaskGroups.map((tg) => ({
        ...tg,
        Tasks: tg.Tasks.map((t) => ({ ...t, Config: { image: "y" } })),
      })),
    };
    const once = scheduleGeneric(w.ctx(), e, { attempt: 0, job: newer });
    const sliced = await scheduleGenericSliced(w.ctx(), e, { attempt: 0, job: newer });
    expect(once.plan.stops.size).toBe(500);
    expect(once.plan.placements).toHaveLength(500);
    expect([...sliced.plan.stops.keys()]).toEqual([...once.plan.stops.keys()]);
    expect(sliced.plan.placements.map((p) => [p.NodeID, p.PreviousAllocation])).toEqual(
      once.plan.placements.map((p) => [p.NodeID, p.PreviousAllocation]),
    );
    expect(sliced.desiredTGUpdates).toEqual(once.desiredTGUpdates);
  });

  it("runs a system job alike at once and in slices", async () => {
    const w = await world();
    await w.addNodes(50);
    const e = await w.registerJob({ ...job("agent", 1), Type: "system" });
    const once = scheduleSystem(w.ctx(), e, { attempt: 0 });
    const sliced = await scheduleSystemSliced(w.ctx(), e, { attempt: 0 });
    expect(once.plan.placements).toHaveLength(50);
    expect(sliced.plan.placements.map((p) => p.NodeID)).toEqual(once.plan.placements.map((p) => p.NodeID));
  });
});

describe("limit iterator (Nomad's power of two choices)", () => {
  it("scores ceil(log2(n)) feasible nodes per service placement and 2 per batch placement", async () => {
    const w = await world();
    await w.addNodes(200);
    // 20 placements of 8 nodes each: no node is visited twice, so none is skipped for its anti-affinity penalty.
    const service = scheduleGeneric(w.ctx(), await w.registerJob(job("svc", 20)), { attempt: 0 });
    expect(service.plan.placements.map((p) => p.NodesEvaluated)).toEqual(Array(20).fill(8));
    const batch = scheduleGeneric(w.ctx(), await w.registerJob({ ...job("etl", 20), Type: "batch" }), {
      attempt: 0,
    });
    expect(batch.plan.placements.map((p) => p.NodesEvaluated)).toEqual(Array(20).fill(2));
  });

  it("skips options scoring at or below 0 (a node already running the group), up to 3 of them", async () => {
    const w = await world();
    await w.addNodes(8);
    // 3 scored per placement: after the first 3 placements every node runs one, and the penalty makes each score below 0.
    const outcome = scheduleGeneric(w.ctx(), await w.registerJob(job("svc", 12)), { attempt: 0 });
    const evaluated = outcome.plan.placements.map((p) => p.NodesEvaluated ?? 0);
    expect(evaluated.slice(0, 2)).toEqual([3, 3]);
    expect(Math.max(...evaluated)).toBeLessThanOrEqual(3 + 3);
    expect(Math.max(...evaluated)).toBeGreaterThan(3);
  });

  it("passes over nodes that cannot run the group without counting them as scored", async () => {
    const w = await world();
    await w.addNodes(32, (i) => (i % 2 === 0 ? WINDOWS : {}));
    const e = await w.registerJob(job("linux", 4, { Constraints: [LINUX] }));
    const outcome = scheduleGeneric(w.ctx(), e, { attempt: 0 });
    expect(outcome.plan.placements).toHaveLength(4);
    for (const p of outcome.plan.placements) {
      expect(w.tables.nodes.get(p.NodeID)?.Attributes["kernel.name"]).toBe("linux");
      // 5 linux nodes scored (log2 of 32), and every windows node visited on the way evaluated too.
      expect(p.NodesEvaluated).toBeGreaterThanOrEqual(5);
    }
  });
});

describe("feasibility per computed class", () => {
  it("checks one node of a class and skips the rest as Nomad does: 'computed class ineligible', counted per node class", async () => {
    const w = await world();
    await w.addNodes(10, () => WINDOWS);
    const e = await w.registerJob(job("linux", 1, { Constraints: [LINUX] }));
    const outcome = scheduleGeneric(w.ctx(), e, { attempt: 0 });
    expect(outcome.plan.placements).toHaveLength(0);
    const metric = outcome.failedTGAllocs?.g?.toJSON();
    expect(metric).toMatchObject({
      NodesEvaluated: 10,
      NodesFiltered: 10,
      NodesInPool: 10,
      ClassFiltered: { win: 10 },
      ConstraintFiltered: { "${attr.kernel.name} = linux": 1, "computed class ineligible": 9 },
      NodesExhausted: 0,
    });
    expect(outcome.escaped).toBe(false);
    expect([...outcome.classEligibility.values()]).toEqual([false]);
  });

  it("reports every class it checked as a Map, however many, and a blocked evaluation keeps their order", async () => {
    const w = await world();
    // A class per node (meta outside `unique.`), half of them windows.
    await w.addNodes(64, (i) => ({ ...(i % 2 === 0 ? WINDOWS : {}), Meta: { rack: `r${i}` } }));
    const e = await w.registerJob(job("linux", 40, { Constraints: [LINUX] }));
    const outcome = scheduleGeneric(w.ctx(), e, { attempt: 0 });
    // A Map, not an object keyed by class: see Feasibility.classEligibility.
    expect(outcome.classEligibility).toBeInstanceOf(Map);
    const linux = new Map<string, boolean>();
    for (const n of w.tables.nodes.all())
      linux.set(n.ComputedClass, n.Attributes["kernel.name"] !== "windows");
    expect(linux.size).toBe(64);
    expect(outcome.classEligibility.size).toBeGreaterThan(16);
    for (const [cls, ok] of outcome.classEligibility) expect(ok).toBe(linux.get(cls));
    // The blocked evaluation's ClassEligibility keeps that order.
    const blocked = blockedEvalSpec(
      e,
      { failedTGAllocs: {}, classEligibility: outcome.classEligibility, escaped: false, snapshotIndex: 1 },
      "b",
      false,
      0,
    );
    expect(Object.entries(blocked.ClassEligibility ?? {})).toEqual([...outcome.classEligibility]);
  });

  it("checks every node when a constraint names a unique property (escaped)", async () => {
    const w = await world();
    await w.addNodes(10);
    const e = await w.registerJob(
      job("pinned", 1, {
        // biome-ignore lint/suspicious/noTemplateCurlyInString: Nomad's interpolation syntax
        Constraints: [{ LTarget: "${node.unique.name}", Operand: "=", RTarget: "node-7" }],
      }),
    );
    const outcome = scheduleGeneric(w.ctx(), e, { attempt: 0 });
    expect(outcome.escaped).toBe(true);
    expect(outcome.plan.placements.map((p) => w.tables.nodes.get(p.NodeID)?.Name)).toEqual(["node-7"]);
  });

  it("counts missing drivers per class too", async () => {
    const w = await world();
    await w.addNodes(6, () => ({ Drivers: { exec: { Detected: true, Healthy: true } } }));
    const outcome = scheduleGeneric(w.ctx(), await w.registerJob(job("docker", 1)), { attempt: 0 });
    expect(outcome.failedTGAllocs?.g?.toJSON()).toMatchObject({
      NodesEvaluated: 6,
      NodesFiltered: 6,
      ClassFiltered: null,
      ConstraintFiltered: { "missing drivers": 1, "computed class ineligible": 5 },
    });
  });

  it("never caches distinct_hosts (it depends on the plan): one allocation per node, the rest filtered", async () => {
    const w = await world();
    await w.addNodes(4, () => ({ NodeClass: "web" }));
    const e = await w.registerJob(
      job("spread", 6, { Constraints: [{ LTarget: "", Operand: "distinct_hosts", RTarget: "true" }] }),
    );
    const outcome = scheduleGeneric(w.ctx(), e, { attempt: 0 });
    expect(new Set(outcome.plan.placements.map((p) => p.NodeID)).size).toBe(4);
    expect(outcome.plan.placements).toHaveLength(4);
    expect(outcome.failedTGAllocs?.g?.toJSON()).toMatchObject({
      NodesEvaluated: 4,
      NodesFiltered: 4,
      ClassFiltered: { web: 4 },
      ConstraintFiltered: { distinct_hosts: 4 },
      CoalescedFailures: 1,
    });
  });

  it("reports exhausted nodes per node class and dimension", async () => {
    const w = await world();
    await w.addNodes(3, () => ({
      NodeClass: "tiny",
      NodeResources: { Cpu: { CpuShares: 50 }, Memory: { MemoryMB: 4096 }, Disk: { DiskMB: 10_000 } },
    }));
    const outcome = scheduleGeneric(w.ctx(), await w.registerJob(job("big", 1)), { attempt: 0 });
    expect(outcome.failedTGAllocs?.g?.toJSON()).toMatchObject({
      NodesEvaluated: 3,
      NodesFiltered: 0,
      NodesExhausted: 3,
      ClassExhausted: { tiny: 3 },
      DimensionExhausted: { cpu: 3 },
    });
  });
});

describe("scores", () => {
  it("keeps Nomad's score metadata of the best options, zeros included, built only when read", async () => {
    const w = await world();
    await w.addNodes(16);
    const e = await w.registerJob(job("web", 2));
    const j = w.tables.jobs.get("default\u0000web")!;
    const plan = new Plan(e.ID, j, w.tables.allocs, 0);
    const stack = new PlacementStack(
      w.tables.nodes,
      w.readyNodes.list(),
      seededRandom("scores"),
      j,
      plan,
      new Feasibility(j),
      "binpack",
      16,
      false,
      { dc1: 16 },
    );
    const tg = j.TaskGroups[0]!;
    const { selection, metric } = stack.select(tg);
    expect(metric.NodesEvaluated).toBe(4);
    const meta = metric.ScoreMetaData!;
    expect(meta).toHaveLength(4);
    expect(meta[0]!.NodeID).toBe(selection!.node.ID);
    expect(meta[0]!.NormScore).toBe(selection!.score);
    for (let i = 1; i < meta.length; i++)
      expect(meta[i]!.NormScore).toBeLessThanOrEqual(meta[i - 1]!.NormScore);
    expect(Object.keys(meta[0]!.Scores).sort()).toEqual([
      "binpack",
      "job-anti-affinity",
      "node-affinity",
      "node-reschedule-penalty",
    ]);
    // Nomad records a node-affinity of 0 for a group without affinities.
    expect(meta[0]!.Scores["node-affinity"]).toBe(0);
    expect(meta[0]!.Scores["job-anti-affinity"]).toBe(0);
    expect(meta[0]!.Scores.binpack).toBe(meta[0]!.NormScore);
  });
});
