import { describe, expect, it } from "vitest";
import { benchCSI } from "../../src/bench/csi-bench.ts";

describe("CSI claims benchmark", () => {
  it("claims and frees every volume of a per_alloc job on simulated nodes, and does no watcher work for idle volumes", async () => {
    // Five releases per node at once: more Unpublish calls in flight (each answered once its
    // detaches are done) than the nodes have long-poll sockets, which the detaches are announced on.
    const f = await benchCSI({ volumes: 20, nodes: 4, idleVolumes: 50 });
    expect(f).toMatchObject({
      volumes: 20,
      nodes: 4,
      idle_volumes: 50,
      idle_watcher_passes: 0,
      timed_releases: 20,
    });
    expect(f.claims_per_s).toBeGreaterThan(0);
    expect(f.releases_per_s).toBeGreaterThan(0);
    // Every claim's release was timed from its allocation's stop.
    expect(f.stop_to_free_p50_ms).toBeGreaterThan(0);
    expect(f.stop_to_free_p99_ms).toBeGreaterThanOrEqual(f.stop_to_free_p50_ms);
  }, 180_000);
});
