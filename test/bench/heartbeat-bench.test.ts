import { describe, expect, it } from "vitest";
import { benchHeartbeats } from "../../src/bench/heartbeat-bench.ts";

describe("heartbeat benchmark", () => {
  it("drives heartbeats and alloc updates over HTTP, logging nothing for heartbeats and coalescing updates", async () => {
    const figures = await benchHeartbeats({ nodes: 400, concurrency: 4, durationMs: 300, warmupMs: 0 });
    expect(figures.heartbeats_per_s).toBeGreaterThan(0);
    expect(figures.heartbeat_log_records).toBe(0);
    // 200 updates never need 200 records: each 50 ms window is one.
    expect(figures.alloc_updates).toBe(200);
    expect(figures.alloc_update_events_per_1000).toBeLessThan(1000);
    expect(figures.alloc_update_burst_events_per_1000).toBeLessThanOrEqual(
      figures.alloc_update_events_per_1000,
    );
  }, 120_000);
});
