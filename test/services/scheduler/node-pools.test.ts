import { afterEach, describe, expect, it } from "vitest";
import { Scenario, serviceJob } from "./scenario.ts";

const scenarios: Scenario[] = [];
afterEach(async () => {
  for (const s of scenarios.splice(0)) await s.stop();
});

/** One node in the default pool and one in `gpu`. */
async function twoPools() {
  const s = await Scenario.start();
  scenarios.push(s);
  const plain = await s.addNode();
  const gpu = await s.addNode({ NodePool: "gpu" });
  return { s, plain, gpu };
}

const systemJob = (id: string, extra: Record<string, unknown> = {}) => ({
  ...serviceJob(id, 1, extra),
  Type: "system",
});

describe("scheduling within node pools", () => {
  it("places a job's allocations only on nodes of its pool; `all` takes any node", async () => {
    const { s, plain, gpu } = await twoPools();
    await s.register(serviceJob("trainer", 3, { NodePool: "gpu" }));
    await s.register(serviceJob("web", 3));
    await s.register(serviceJob("anywhere", 4, { NodePool: "all" }));
    await s.idle();
    const nodesOf = (job: string) => new Set(s.live(job).map((a) => a.NodeID));
    expect(s.live("trainer")).toHaveLength(3);
    expect(nodesOf("trainer")).toEqual(new Set([gpu.id]));
    expect(s.live("web")).toHaveLength(3);
    expect(nodesOf("web")).toEqual(new Set([plain.id]));
    expect(s.live("anywhere")).toHaveLength(4);
    expect(nodesOf("anywhere")).toEqual(new Set([plain.id, gpu.id]));
    // Only the pool's nodes count as available (Nomad's readyNodesInDCsAndPool).
    expect(s.live("trainer")[0]?.Metrics).toMatchObject({ NodesEvaluated: 1 });
  });

  it("queues what no node of the pool can run, though other pools have room", async () => {
    const { s } = await twoPools();
    expect((await s.call("/v1/node/pools", "PUT", { Name: "empty" })).status).toBe(200);
    await s.register(serviceJob("stuck", 2, { NodePool: "empty" }));
    await s.idle();
    expect(s.live("stuck")).toHaveLength(0);
    const summary = (await s.call("/v1/job/stuck/summary")).body as {
      Summary: Record<string, { Queued: number }>;
    };
    expect(summary.Summary.web?.Queued).toBe(2);
  });

  it("runs a system job on every ready node of its pool, and on nodes that join that pool only", async () => {
    const { s, plain, gpu } = await twoPools();
    await s.register(systemJob("gpu-agent", { NodePool: "gpu" }));
    await s.register(systemJob("log-agent"));
    await s.idle();
    expect(s.live("gpu-agent").map((a) => a.NodeID)).toEqual([gpu.id]);
    expect(s.live("log-agent").map((a) => a.NodeID)).toEqual([plain.id]);

    const gpu2 = await s.addNode({ NodePool: "gpu" });
    await s.addNode();
    await s.idle();
    expect(new Set(s.live("gpu-agent").map((a) => a.NodeID))).toEqual(new Set([gpu.id, gpu2.id]));
    expect(s.live("log-agent")).toHaveLength(2);
    expect(s.live("log-agent").some((a) => a.NodeID === gpu2.id)).toBe(false);
  });
});
