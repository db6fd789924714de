import { describe, expect, it } from "vitest";
import { benchScheduler } from "../../src/bench/scheduler-bench.ts";

describe("scheduler benchmark", () => {
  it("places one large job and many small ones, in compact plan records, and replays them to the same state", async () => {
    const f = await benchScheduler({
      nodes: 300,
      bigJobAllocs: 1_500,
      jobs: 30,
      allocsPerJob: 4,
      fsync: "never",
    });
    expect(f.big_job_placements_per_s).toBeGreaterThan(0);
    expect(f.many_jobs_placements_per_s).toBeGreaterThan(0);
    // A compact placement is a few hundred bytes at most: the job is referenced, not embedded.
    expect(f.plan_bytes_per_alloc).toBeLessThan(300);
    expect(f.replay_records_per_s).toBeGreaterThan(0);
  }, 120_000);
});
