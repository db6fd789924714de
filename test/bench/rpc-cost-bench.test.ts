import { describe, expect, it } from "vitest";
import { benchRpcCost } from "../../src/bench/rpc-cost-bench.ts";

describe("client RPC cost benchmark", () => {
  it("calls each client RPC from another process, every call answered, and reports the server's CPU per call", async () => {
    const figures = await benchRpcCost({ nodes: 20, calls: 200, concurrency: 4 });
    expect(figures.nodes).toBe(20);
    expect(figures.acl).toBe(0);
    for (const method of [
      "Node.UpdateStatus",
      "Node.UpdateAlloc",
      "Node.GetClientAllocs",
      "Alloc.GetAllocs",
      "Node.Register",
    ]) {
      // A failed call throws; each method ran its calls and the server spent CPU on them.
      expect(figures[`${method}.calls`]).toBeGreaterThan(0);
      expect(figures[`${method}.calls_per_s`]).toBeGreaterThan(0);
      expect(figures[`${method}.server_cpu_us_per_call`]).toBeGreaterThan(0);
      expect(figures[`${method}.main_thread_cpu_us_per_call`]).not.toBeUndefined();
    }
    expect(figures["Node.UpdateAlloc.calls"]).toBe(50);
    expect(figures["Node.UpdateAlloc.concurrency"]).toBe(20);
    // Nodes the server had not seen: a quarter of the calls, after a warm-up of others.
    expect(figures["Node.Register.calls"]).toBe(50);
  }, 180_000);

  it("runs only the methods asked for", async () => {
    const figures = await benchRpcCost({ nodes: 5, calls: 40, concurrency: 2, methods: ["Node.Register"] });
    expect(figures["Node.Register.calls"]).toBe(10);
    expect(figures["Node.Register.server_cpu_us_per_call"]).toBeGreaterThan(0);
    expect(figures["Node.UpdateStatus.calls"]).toBeUndefined();
  }, 180_000);

  it("with acl, runs every method on a server with ACLs on, each call authenticated by the node's secret", async () => {
    const figures = await benchRpcCost({ nodes: 10, calls: 100, concurrency: 4, acl: true });
    expect(figures.acl).toBe(1);
    for (const method of [
      "Node.UpdateStatus",
      "Node.UpdateAlloc",
      "Node.GetClientAllocs",
      "Alloc.GetAllocs",
    ]) {
      // Each call answered 2xx (a refused one throws).
      expect(figures[`${method}.calls_per_s`]).toBeGreaterThan(0);
      expect(figures[`${method}.server_cpu_us_per_call`]).toBeGreaterThan(0);
    }
  }, 180_000);
});
