import { describe, expect, it } from "vitest";
import { MAX_UPDATES_PER_RECORD } from "../../src/api/client-rpc/alloc-update-batcher.ts";
import { benchHeartbeats } from "../../src/bench/heartbeat-bench.ts";

describe("heartbeat benchmark", () => {
  it("drives heartbeats and alloc updates over HTTP, logging nothing for heartbeats and coalescing updates", async () => {
    const figures = await benchHeartbeats({ nodes: 400, concurrency: 4, durationMs: 300, warmupMs: 0 });
    expect(figures.heartbeats_per_s).toBeGreaterThan(0);
    expect(figures.heartbeat_log_records).toBe(0);
    // 200 updates never need 200 records: each 50 ms window is one.
    expect(figures.alloc_updates).toBe(200);
    expect(figures.alloc_update_events_per_1000).toBeLessThan(1000);
    // Arriving at once, they share windows: at least two updates a record,
    // and never fewer records than the per-record cap allows. How many
    // windows they span depends on the machine's speed, so the paced and
    // burst figures are not compared (both sit near that floor).
    const floor = Math.round((Math.ceil(200 / MAX_UPDATES_PER_RECORD) / 200) * 1000);
    expect(figures.alloc_update_burst_events_per_1000).toBeGreaterThanOrEqual(floor);
    expect(figures.alloc_update_burst_events_per_1000).toBeLessThanOrEqual(500);
  }, 120_000);
});
