import { describe, expect, it } from "vitest";
import { benchIdentity } from "../../src/bench/identity-bench.ts";

describe("workload identity benchmark", () => {
  it("places a job whose every task gets a JWT, and counts them", async () => {
    const f = await benchIdentity({ nodes: 50, allocs: 200, fsync: "never" });
    expect(f.allocs).toBe(200);
    expect(f.jwts).toBe(200 * f.tasks_per_alloc);
    expect(f.jwts_per_s).toBeGreaterThan(0);
    expect(f.sign_only_jwts_per_s).toBeGreaterThan(0);
    expect(f.loop_delay_max_ms).toBeGreaterThanOrEqual(f.loop_delay_p50_ms);
  }, 120_000);
});
