import { getHeapStatistics, setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { describe, expect, it } from "vitest";
import { VirtualClock } from "../../../src/util/clock.ts";
import { startTestServer } from "../../server-harness.ts";
import { settle, TestNode } from "../node-fixtures.ts";
import { runningTaskState } from "./running-task-state.ts";

/**
 * The figures docs/architecture.md ("What the burst allocates") quotes for
 * what a Node.UpdateAlloc call keeps alive while it waits for its window's
 * apply: NODES nodes each send one call of UPDATES entries, as a simulated
 * node reports allocations that just started (one task, four events), while
 * the virtual clock holds the 50 ms window; the heap in use after full
 * collections, before the calls and while all of them wait, over the calls.
 * The client's side (fetch, in this process) is counted too, the same in
 * every run. Run on demand only:
 * CHRONOMAD_UPDATE_HEAP_FIGURES=1 npx vitest run test/api/client-rpc/update-alloc-heap-figures.test.ts
 */
const enabled = process.env.CHRONOMAD_UPDATE_HEAP_FIGURES === "1";
const NODES = 200;
const UPDATES = 20;
const ROUNDS = 4;

setFlagsFromString("--expose-gc");
const gc = runInNewContext("gc") as () => void;

function usedAfterGc(): number {
  gc();
  gc();
  return getHeapStatistics().used_heap_size;
}

/** One simulated node's report of UPDATES allocations that just started. */
function report(nodeID: string, round: number, n: number): Record<string, unknown> {
  const ms = 1_763_800_000_000 + round * 1_000;
  const Alloc = [];
  for (let i = 0; i < UPDATES; i++) {
    const state = runningTaskState(ms);
    Alloc.push({
      ID: `${(round * 1_000_003 + n * UPDATES + i).toString(16).padStart(8, "0")}-1f2e-4d3c-8b7a-69584f3e2d1c`,
      NodeID: nodeID,
      ClientStatus: "running",
      ClientDescription: "Tasks are running",
      TaskStates: { web: state },
      DeploymentStatus: null,
      NetworkStatus: null,
    });
  }
  return { Alloc };
}

describe.skipIf(!enabled)("what a waiting Node.UpdateAlloc call keeps (figures)", () => {
  it("reports the heap kept per call while the calls wait for their window", async () => {
    const clock = new VirtualClock();
    const s = await startTestServer({ deps: { clock } });
    try {
      const nodes = Array.from({ length: NODES }, () => new TestNode(s));
      for (const node of nodes) {
        expect((await node.register()).status).toBe(200);
        expect((await node.heartbeat()).status).toBe(200);
      }
      const lines: string[] = [];
      for (let round = 0; round < ROUNDS; round++) {
        const bodies = nodes.map((node, n) => report(node.id, round, n));
        const before = usedAfterGc();
        const answers = nodes.map((node, n) => node.rpc("Node.UpdateAlloc", bodies[n]));
        // The calls arrive, are parsed and wait in the window the virtual clock holds.
        await new Promise((r) => setTimeout(r, 1_500));
        const waiting = usedAfterGc();
        const statuses = await settle(clock, Promise.all(answers));
        expect(statuses.every((a) => a.status === 200)).toBe(true);
        lines.push(
          `round ${round}: ${Math.round((waiting - before) / NODES)} B kept a waiting call of ${UPDATES} updates`,
        );
      }
      process.stdout.write(`${lines.join("\n")}\n`);
    } finally {
      await s.stop();
    }
  }, 300_000);
});
