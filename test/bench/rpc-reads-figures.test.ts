import { describe, expect, it } from "vitest";
import { benchRpcCost } from "../../src/bench/rpc-cost-bench.ts";

/**
 * The figures docs/architecture.md ("Client RPC cost") quotes for the
 * client reads as a placement burst leaves them: 1,000 nodes with ten
 * allocations each, placed with the active root key, so
 * Node.GetClientAllocs answers a map of ten and Alloc.GetAllocs pulls ten
 * allocations with their SignedIdentities. A few minutes: run on demand only,
 * CHRONOMAD_RPC_READS_FIGURES=1 npx vitest run test/bench/rpc-reads-figures.test.ts
 */
const enabled = process.env.CHRONOMAD_RPC_READS_FIGURES === "1";
if (!enabled) console.warn("client read figures skipped: set CHRONOMAD_RPC_READS_FIGURES=1 to take them");

const METHODS = ["Node.UpdateStatus", "Node.GetClientAllocs", "Alloc.GetAllocs"];

describe.runIf(enabled)("client read figures", () => {
  it("server CPU per call with ten signed allocations per node", async () => {
    const figures = await benchRpcCost({
      nodes: 1_000,
      calls: Number(process.env.CHRONOMAD_RPC_READS_CALLS ?? 10_000),
      allocsPerNode: 10,
      signed: true,
    });
    expect(figures.signed).toBe(1);
    for (const method of METHODS) {
      console.log(
        `${method.padEnd(22)} server ${figures[`${method}.server_cpu_us_per_call`]} µs/call,` +
          ` main thread ${figures[`${method}.main_thread_cpu_us_per_call`]} µs/call,` +
          ` ${figures[`${method}.calls_per_s`]} calls/s`,
      );
    }
  }, 600_000);
});
