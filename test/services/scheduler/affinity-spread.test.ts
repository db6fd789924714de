import { readFileSync } from "node:fs";
import { afterEach, describe, expect, it } from "vitest";
import type { AllocRow } from "../../../projections/allocs.ts";
import type { NodeRow } from "../../../projections/nodes.ts";
import { Scenario } from "./scenario.ts";

// biome-ignore-start lint/suspicious/noTemplateCurlyInString: Nomad's interpolation syntax
const fixture = (name: string): Record<string, unknown> =>
  JSON.parse(readFileSync(new URL(`../../fixtures/jobs/${name}`, import.meta.url), "utf8"));

let s: Scenario | undefined;
afterEach(async () => {
  await s?.stop();
  s = undefined;
});

async function cluster(shapes: Record<string, unknown>[]): Promise<Scenario> {
  s = await Scenario.start();
  for (const shape of shapes) await s.addNode(shape);
  return s;
}

function countBy(
  s: Scenario,
  allocs: readonly AllocRow[],
  of: (n: { Datacenter: string; NodeClass: string }) => string,
) {
  const out: Record<string, number> = {};
  for (const a of allocs) {
    const node = s.server.store.table<NodeRow>("nodes").get(a.NodeID)!;
    const k = of(node);
    out[k] = (out[k] ?? 0) + 1;
  }
  return out;
}

const twoDatacenters = [
  ...Array.from({ length: 3 }, () => ({ Datacenter: "us-east1" })),
  ...Array.from({ length: 3 }, () => ({ Datacenter: "us-west1" })),
];

interface Metrics {
  NodesEvaluated: number;
  NodesFiltered: number;
  ConstraintFiltered: Record<string, number> | null;
  ScoreMetaData: { NodeID: string; Scores: Record<string, number>; NormScore: number }[] | null;
}

describe("spread across datacenters (Nomad's spread block)", () => {
  for (const [file, want] of [
    ["spread-datacenters-50-50.json", { "us-east1": 5, "us-west1": 5 }],
    ["spread-datacenters-70-30.json", { "us-east1": 7, "us-west1": 3 }],
    ["spread-datacenters-60-40.json", { "us-east1": 6, "us-west1": 4 }],
  ] as const) {
    it(`${file}: 10 allocations land as the targets' percentages say`, async () => {
      const s = await cluster(twoDatacenters);
      const job = fixture(file);
      await s.register(job);
      await s.idle();
      const live = s.live(job.ID as string);
      expect(live).toHaveLength(10);
      expect(countBy(s, live, (n) => n.Datacenter)).toEqual(want);
      // Each allocation explains its placement: every node scored, spread among the scores. The first
      // placed ([0]) had nothing in its datacenter yet: (desired - 1) / desired > 0. (A later one that
      // meets its target exactly scores 0, which Nomad does not record.)
      const first = live.find((a) => a.Name.endsWith(".web[0]"))!;
      const res = await s.call(`/v1/allocation/${first.ID}`);
      const m = (res.body as { Metrics: Metrics }).Metrics;
      expect(m.NodesEvaluated).toBe(6);
      expect(m.ScoreMetaData!.length).toBe(5);
      const best = m.ScoreMetaData![0]!;
      expect(best.NodeID).toBe(first.NodeID);
      expect(best.Scores["allocation-spread"]).toBeGreaterThan(0);
      expect(best.NormScore).toBeCloseTo((best.Scores.binpack! + best.Scores["allocation-spread"]!) / 2, 12);
    });
  }
});

describe("affinity", () => {
  it("prefers nodes of the class the affinity names, and records node-affinity in the scores", async () => {
    const s = await cluster([
      { Datacenter: "us-east1", NodeClass: "small" },
      { Datacenter: "us-east1", NodeClass: "large" },
      { Datacenter: "us-west1", NodeClass: "small" },
      { Datacenter: "us-west1", NodeClass: "large" },
      { Datacenter: "us-west1", NodeClass: "small" },
    ]);
    const job = fixture("affinity-node-class.json");
    await s.register(job);
    await s.idle();
    const live = s.live("prefers-large");
    expect(countBy(s, live, (n) => n.NodeClass)).toEqual({ large: 2 });
    const res = await s.call(`/v1/allocation/${live[0]!.ID}`);
    const m = (res.body as { Metrics: Metrics }).Metrics;
    const best = m.ScoreMetaData![0]!;
    expect(best.NodeID).toBe(live[0]!.NodeID);
    expect(best.Scores["node-affinity"]).toBe(1);
    // binpack and the affinity of 1, averaged (Nomad's ScoreNormalizationIterator).
    expect(best.NormScore).toBeCloseTo((best.Scores.binpack! + 1) / 2, 12);
    // A small node matches no affinity: Nomad records no node-affinity for it, and binpack alone counts.
    const small = m.ScoreMetaData!.find((x) => !("node-affinity" in x.Scores));
    expect(small?.NormScore).toBeCloseTo(small!.Scores.binpack!, 12);
  });
});

describe("distinct_hosts and distinct_property", () => {
  it("distinct_hosts with more allocations than nodes: one per node, the rest blocked with Nomad's reason", async () => {
    const s = await cluster(twoDatacenters.slice(0, 4));
    await s.register(fixture("distinct-hosts.json"));
    await s.idle();
    const live = s.live("one-per-host");
    expect(live).toHaveLength(4);
    expect(new Set(live.map((a) => a.NodeID)).size).toBe(4);
    const blocked = s.evals("one-per-host").find((e) => e.Status === "blocked");
    expect(blocked).toBeDefined();
    const res = await s.call("/v1/job/one-per-host/evaluations");
    const evals = res.body as {
      Status: string;
      FailedTGAllocs: Record<string, Metrics & { CoalescedFailures: number }> | null;
    }[];
    const failed = evals.find((e) => e.Status === "complete" && e.FailedTGAllocs)?.FailedTGAllocs?.web;
    expect(failed).toMatchObject({
      NodesEvaluated: 4,
      NodesFiltered: 4,
      ConstraintFiltered: { distinct_hosts: 4 },
      CoalescedFailures: 1,
    });
    // The blocked evaluation carries the same explanation (Nomad's CreateBlockedEval).
    expect(evals.find((e) => e.Status === "blocked")?.FailedTGAllocs?.web?.ConstraintFiltered).toEqual({
      distinct_hosts: 4,
    });
  });

  it("distinct_property: at most 2 per rack, the rest blocked naming the rack and its count", async () => {
    const racks = ["r1", "r1", "r1", "r2", "r2"];
    const s = await cluster(racks.map((rack) => ({ Datacenter: "us-east1", Meta: { rack } })));
    await s.register(fixture("distinct-property-rack.json"));
    await s.idle();
    const live = s.live("per-rack");
    const perRack: Record<string, number> = {};
    for (const a of live) {
      const rack = s.server.store.table<NodeRow>("nodes").get(a.NodeID)!.Meta!.rack!;
      perRack[rack] = (perRack[rack] ?? 0) + 1;
    }
    expect(perRack).toEqual({ r1: 2, r2: 2 });
    const res = await s.call("/v1/job/per-rack/evaluations");
    const evals = res.body as { Status: string; FailedTGAllocs: Record<string, Metrics> | null }[];
    const failed = evals.find((e) => e.Status === "blocked")?.FailedTGAllocs?.web;
    expect(failed?.ConstraintFiltered).toEqual({
      "distinct_property: ${meta.rack}=r1 used by 2 allocs": 3,
      "distinct_property: ${meta.rack}=r2 used by 2 allocs": 2,
    });
    expect(failed?.NodesFiltered).toBe(5);
    // A placed allocation explains the nodes its search passed over.
    const placed = await s.call(`/v1/allocation/${live[3]!.ID}`);
    const m = (placed.body as { Metrics: Metrics }).Metrics;
    expect(m.NodesFiltered).toBe(Object.values(m.ConstraintFiltered ?? {}).reduce((a, b) => a + b, 0));
  });
});
// biome-ignore-end lint/suspicious/noTemplateCurlyInString: Nomad's interpolation syntax
