import { describe, expect, it } from "vitest";
import { benchPreferences } from "../../src/bench/preferences-bench.ts";

describe("placement preferences benchmark", () => {
  it("places a count-only job and a spread-and-affinity job, the latter scoring max(count, 100) nodes per placement", async () => {
    const f = await benchPreferences({ nodes: 200, allocs: 100, runs: 1 });
    expect(f.count_only.placements_per_s).toBeGreaterThan(0);
    expect(f.spread_affinity.placements_per_s).toBeGreaterThan(0);
    // log2(200) rounded up for the count only; 100 (Nomad's floor) with a spread or an affinity.
    expect(f.count_only.nodes_evaluated_per_alloc).toBe(8);
    expect(f.spread_affinity.nodes_evaluated_per_alloc).toBeGreaterThanOrEqual(100);
    const sum = (r: Readonly<Record<string, number>>) => Object.values(r).reduce((a, b) => a + b, 0);
    expect(sum(f.count_only.by_datacenter)).toBe(100);
    expect(sum(f.spread_affinity.by_datacenter)).toBe(100);
    // dc1's target of 50% is the largest: it gets the most.
    const dcs = f.spread_affinity.by_datacenter;
    expect(dcs.dc1).toBe(Math.max(...Object.values(dcs)));
  }, 120_000);
});
