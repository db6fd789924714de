import { describe, expect, it } from "vitest";
import { benchPlacement } from "../../src/bench/placement-bench.ts";

describe("placement benchmark", () => {
  it("computes plans for one large job, its re-evaluation and replacement, and many small jobs, without a server", async () => {
    const f = await benchPlacement({ nodes: 200, bigJobAllocs: 1_000, jobs: 20, allocsPerJob: 5, runs: 1 });
    expect(f.big_job_compute_placements_per_s).toBeGreaterThan(0);
    expect(f.many_jobs_compute_placements_per_s).toBeGreaterThan(0);
    expect(f.update_compute_ms).toBeGreaterThan(0);
    expect(f.placements_digest).toMatch(/^[0-9a-f]{16}$/);
    // Same world, same seeds: the same placements on every run.
    const again = await benchPlacement({
      nodes: 200,
      bigJobAllocs: 1_000,
      jobs: 1,
      allocsPerJob: 1,
      runs: 1,
    });
    expect(again.placements_digest).toBe(f.placements_digest);
  }, 120_000);
});
