import { afterEach, describe, expect, it } from "vitest";
import type { JobRow } from "../../../projections/jobs.ts";
import type { NodeRow } from "../../../projections/nodes.ts";
import { PlacementWorld } from "../../../src/bench/placement-world.ts";
import { scheduleGeneric } from "../../../src/services/scheduler/generic-scheduler.ts";
import { Plan } from "../../../src/services/scheduler/plan.ts";
import { PlacementPreferences } from "../../../src/services/scheduler/preferences.ts";
import type { ScheduleOutcome } from "../../../src/services/scheduler/scheduler-context.ts";

// biome-ignore-start lint/suspicious/noTemplateCurlyInString: Nomad's interpolation syntax
const worlds: PlacementWorld[] = [];
afterEach(async () => {
  for (const w of worlds.splice(0)) await w.stop();
});

function job(
  id: string,
  count: number,
  extra: Record<string, unknown> = {},
  group: Record<string, unknown> = {},
) {
  return {
    ID: id,
    Type: "service",
    Datacenters: ["dc1", "dc2", "dc3"],
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

interface Setup {
  w: PlacementWorld;
  nodes: NodeRow[];
  j: JobRow;
  plan: Plan;
  evalID: string;
}

/** A world with one node per entry of `shapes`, the job registered, and an empty plan for it. */
async function setup(shapes: Record<string, unknown>[], input: Record<string, unknown>): Promise<Setup> {
  const w = await PlacementWorld.start();
  worlds.push(w);
  const ids = await w.addNodes(shapes.length, (i) => shapes[i]!);
  const e = await w.registerJob(input);
  const j = w.tables.jobs.get(`default\u0000${input.ID}`)!;
  const nodes = ids.map((id) => w.tables.nodes.get(id)!);
  return { w, nodes, j, plan: new Plan(e.ID, j, w.tables.allocs, 0), evalID: e.ID };
}

let placed = 0;
function place(s: Setup, plan: Plan, nodeIdx: number, group = "g"): void {
  const tg = s.j.TaskGroups.find((g) => g.Name === group)!;
  const n = placed++;
  plan.appendPlacement({
    ID: `00000000-0000-4000-8000-${n.toString(16).padStart(12, "0")}`,
    Name: `x.${group}[${n}]`,
    TaskGroup: group,
    NodeID: s.nodes[nodeIdx]!.ID,
    tg,
  });
}

/** Existing allocations: a plan placing them, applied. */
async function existing(s: Setup, nodeIdx: number[]): Promise<void> {
  const plan = new Plan(s.evalID, s.j, s.w.tables.allocs, 0);
  for (const i of nodeIdx) place(s, plan, i);
  await s.w.apply({ plan, followupEvals: [] } as unknown as ScheduleOutcome);
}

const dcs = (...names: string[]) => names.map((Datacenter) => ({ Datacenter }));

describe("affinity scores (Nomad's NodeAffinityIterator)", () => {
  it("is the sum of matching weights over the sum of all weights' magnitudes, from the job, group and tasks", async () => {
    const shapes = [
      { NodeClass: "gpu", Meta: { rack: "r1" } },
      { NodeClass: "gpu", Meta: { rack: "r2" } },
      { NodeClass: "cpu", Meta: { rack: "r1" } },
      { NodeClass: "cpu", Meta: { rack: "r2" } },
    ];
    const s = await setup(
      shapes,
      job(
        "aff",
        3,
        { Affinities: [{ LTarget: "${node.class}", Operand: "=", RTarget: "gpu", Weight: 50 }] },
        { Affinities: [{ LTarget: "${meta.rack}", Operand: "=", RTarget: "r1", Weight: -25 }] },
      ),
    );
    const g = PlacementPreferences.forJob(s.j, s.w.tables.nodes, s.plan)!.forGroup(s.j.TaskGroups[0]!)!;
    expect(g.affinity(s.nodes[0]!)).toBeCloseTo(25 / 75, 12);
    expect(g.affinity(s.nodes[1]!)).toBeCloseTo(50 / 75, 12);
    expect(g.affinity(s.nodes[2]!)).toBeCloseTo(-25 / 75, 12);
    expect(g.affinity(s.nodes[3]!)).toBe(0);
    expect(g.limit).toBe(100);
  });

  it("weighs an affinity without a weight 50, as Nomad's api fills it in; a task's affinity counts", async () => {
    const s = await setup(
      [{ NodeClass: "gpu" }, { NodeClass: "cpu" }],
      job(
        "aff",
        1,
        {},
        {
          Affinities: [{ LTarget: "${node.class}", Operand: "=", RTarget: "gpu" }],
          Tasks: [
            {
              Name: "t",
              Driver: "docker",
              Config: { image: "x" },
              Resources: { CPU: 100, MemoryMB: 64 },
              Affinities: [{ LTarget: "${node.class}", Operand: "regexp", RTarget: "^c", Weight: 100 }],
            },
          ],
        },
      ),
    );
    const g = PlacementPreferences.forJob(s.j, s.w.tables.nodes, s.plan)!.forGroup(s.j.TaskGroups[0]!)!;
    expect(g.affinity(s.nodes[0]!)).toBeCloseTo(50 / 150, 12);
    expect(g.affinity(s.nodes[1]!)).toBeCloseTo(100 / 150, 12);
  });

  it("costs a job with no affinity, spread or distinct_property nothing", async () => {
    const s = await setup(dcs("dc1"), job("plain", 3));
    expect(PlacementPreferences.forJob(s.j, s.w.tables.nodes, s.plan)).toBeUndefined();
  });
});

describe("the limit iterator with affinities or spreads (Nomad's GenericStack.Select)", () => {
  it("scores max(count, 100) nodes per placement, and keeps the raised limit for the evaluation's later groups", async () => {
    const group = (Name: string, extra: Record<string, unknown> = {}) => ({
      Name,
      Count: 2,
      EphemeralDisk: { SizeMB: 10 },
      Tasks: [{ Name: "t", Driver: "docker", Config: { image: "x" }, Resources: { CPU: 100, MemoryMB: 64 } }],
      ...extra,
    });
    const plain = await setup(
      Array.from({ length: 40 }, () => ({})),
      { ...job("plain", 2), TaskGroups: [group("b")] },
    );
    const alone = scheduleGeneric(plain.w.ctx(), plain.w.tables.evals.get(plain.evalID)!, { attempt: 0 });
    // log2(40) rounded up.
    expect(alone.plan.placements.map((p) => p.NodesEvaluated)).toEqual([6, 6]);

    const s = await setup(
      Array.from({ length: 40 }, (_, i) => ({ NodeClass: i % 2 ? "a" : "b" })),
      {
        ...job("both", 2),
        TaskGroups: [
          group("a", { Affinities: [{ LTarget: "${node.class}", Operand: "=", RTarget: "a", Weight: 50 }] }),
          group("b"),
        ],
      },
    );
    const outcome = scheduleGeneric(s.w.ctx(), s.w.tables.evals.get(s.evalID)!, { attempt: 0 });
    const evaluated = (tg: string) =>
      outcome.plan.placements.filter((p) => p.TaskGroup === tg).map((p) => p.NodesEvaluated);
    expect(outcome.plan.placements.map((p) => p.TaskGroup)).toEqual(["a", "a", "b", "b"]);
    // Every one of the 40 nodes (fewer than 100) is scored, for group b too.
    expect(evaluated("a")).toEqual([40, 40]);
    expect(evaluated("b")).toEqual([40, 40]);
  });
});

describe("spread scores (Nomad's SpreadIterator, its spread_test.go cases)", () => {
  it("one attribute with a target of 80%: the implicit 20% elsewhere; existing allocations and the plan's count", async () => {
    const spread = {
      Attribute: "${node.datacenter}",
      Weight: 100,
      SpreadTarget: [{ Value: "dc1", Percent: 80 }],
    };
    const s = await setup(dcs("dc1", "dc2", "dc1", "dc1"), job("sp", 10, {}, { Spreads: [spread] }));
    await existing(s, [0, 2]);
    const prefs = PlacementPreferences.forJob(s.j, s.w.tables.nodes, s.plan)!;
    const tg = s.j.TaskGroups[0]!;
    let g = prefs.forGroup(tg)!;
    // dc1: (8 - 3) / 8; dc2: (2 - 1) / 2.
    expect(s.nodes.map((n) => g.spread(n))).toEqual([0.625, 0.5, 0.625, 0.625]);
    for (const i of [0, 0, 3, 3, 3]) place(s, s.plan, i);
    g = prefs.forGroup(tg)!;
    // dc1 has its 8 with this placement: 0.
    expect(s.nodes.map((n) => g.spread(n))).toEqual([0, 0.5, 0, 0]);
  });

  it("two attributes weigh by their share of the weights", async () => {
    const shapes = [
      { Datacenter: "dc1", Meta: { rack: "r1" } },
      { Datacenter: "dc2", Meta: { rack: "r1" } },
      { Datacenter: "dc1", Meta: { rack: "r2" } },
      { Datacenter: "dc1", Meta: { rack: "r2" } },
    ];
    const spreads = [
      {
        Attribute: "${node.datacenter}",
        Weight: 100,
        SpreadTarget: [
          { Value: "dc1", Percent: 60 },
          { Value: "dc2", Percent: 40 },
        ],
      },
      {
        Attribute: "${meta.rack}",
        Weight: 50,
        SpreadTarget: [
          { Value: "r1", Percent: 40 },
          { Value: "r2", Percent: 60 },
        ],
      },
    ];
    const s = await setup(shapes, job("sp", 10, {}, { Spreads: spreads }));
    await existing(s, [0, 2]);
    const g = PlacementPreferences.forJob(s.j, s.w.tables.nodes, s.plan)!.forGroup(s.j.TaskGroups[0]!)!;
    expect(s.nodes.map((n) => g.spread(n).toFixed(3))).toEqual(["0.500", "0.667", "0.556", "0.556"]);
  });

  it("spreads evenly without targets: 0 before anything runs, then boosts the values behind", async () => {
    const spread = { Attribute: "${node.datacenter}", Weight: 100 };
    const s = await setup(
      dcs("dc1", "dc2", "dc1", "dc2", "dc1", "dc3"),
      job("even", 10, {}, { Spreads: [spread] }),
    );
    const prefs = PlacementPreferences.forJob(s.j, s.w.tables.nodes, s.plan)!;
    const tg = s.j.TaskGroups[0]!;
    const scores = () => {
      const g = prefs.forGroup(tg)!;
      return [0, 1, 5].map((i) => g.spread(s.nodes[i]!));
    };
    expect(scores()).toEqual([0, 0, 0]);
    place(s, s.plan, 0);
    place(s, s.plan, 2);
    // dc1 2, dc2 and dc3 none (not yet counted at all): dc1 is the lowest and the highest.
    expect(scores()).toEqual([-1, 1, 1]);
    place(s, s.plan, 1);
    place(s, s.plan, 1);
    place(s, s.plan, 3);
    // dc1 2, dc2 3: dc1 gains (3 - 2) / 2, dc2 loses (2 - 3) / 2.
    expect(scores()).toEqual([0.5, -0.5, 1]);
    place(s, s.plan, 4);
    expect(scores()).toEqual([-1, -1, 1]);
  });

  it("scores -1 for a value with no target and no implicit target, and for a node without the attribute", async () => {
    const spread = {
      Attribute: "${meta.zone}",
      Weight: 50,
      SpreadTarget: [
        { Value: "a", Percent: 50 },
        { Value: "b", Percent: 50 },
      ],
    };
    const s = await setup(
      [{ Meta: { zone: "a" } }, { Meta: { zone: "c" } }, {}],
      job("sp", 4, {}, { Spreads: [spread] }),
    );
    const g = PlacementPreferences.forJob(s.j, s.w.tables.nodes, s.plan)!.forGroup(s.j.TaskGroups[0]!)!;
    expect(s.nodes.map((n) => g.spread(n))).toEqual([0.5, -1, -1]);
  });
});

describe("distinct_property (Nomad's DistinctPropertyIterator)", () => {
  it("places at most RTarget allocations per value, counting the plan, and names the value it refuses", async () => {
    const shapes = [
      { Meta: { rack: "r1" } },
      { Meta: { rack: "r1" } },
      { Meta: { rack: "r2" } },
      { Meta: { rack: "r2" } },
      { Meta: { rack: "r3" } },
    ];
    const s = await setup(
      shapes,
      job("dp", 8, {
        Constraints: [{ LTarget: "${meta.rack}", Operand: "distinct_property", RTarget: "2" }],
      }),
    );
    const outcome = scheduleGeneric(s.w.ctx(), s.w.tables.evals.get(s.evalID)!, { attempt: 0 });
    const perRack = new Map<string, number>();
    for (const p of outcome.plan.placements) {
      const rack = s.w.tables.nodes.get(p.NodeID)!.Meta!.rack!;
      perRack.set(rack, (perRack.get(rack) ?? 0) + 1);
    }
    expect(Object.fromEntries(perRack)).toEqual({ r1: 2, r2: 2, r3: 2 });
    const failed = outcome.failedTGAllocs?.g?.toJSON();
    expect(failed).toMatchObject({
      NodesEvaluated: 5,
      NodesFiltered: 5,
      ConstraintFiltered: {
        "distinct_property: ${meta.rack}=r1 used by 2 allocs": 2,
        "distinct_property: ${meta.rack}=r2 used by 2 allocs": 2,
        "distinct_property: ${meta.rack}=r3 used by 2 allocs": 1,
      },
      CoalescedFailures: 1,
    });
  });

  it("counts existing allocations, defaults to 1, and filters a node without the property", async () => {
    const s = await setup(
      [{ Meta: { rack: "r1" } }, { Meta: { rack: "r2" } }, {}],
      job(
        "dp",
        3,
        {},
        { Constraints: [{ LTarget: "${meta.rack}", Operand: "distinct_property", RTarget: "" }] },
      ),
    );
    await existing(s, [0]);
    const outcome = scheduleGeneric(s.w.ctx(), s.w.tables.evals.get(s.evalID)!, { attempt: 0 });
    expect(outcome.plan.placements.map((p) => p.NodeID)).toEqual([s.nodes[1]!.ID]);
    expect(outcome.failedTGAllocs?.g?.toJSON().ConstraintFiltered).toEqual({
      "distinct_property: ${meta.rack}=r1 used by 1 allocs": 1,
      "distinct_property: ${meta.rack}=r2 used by 1 allocs": 1,
      'missing property "${meta.rack}"': 1,
    });
  });
});
// biome-ignore-end lint/suspicious/noTemplateCurlyInString: Nomad's interpolation syntax
