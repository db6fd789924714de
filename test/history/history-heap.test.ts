import { describe, expect, it } from "vitest";
import { inFreshProcess } from "../../src/bench/fresh-process.ts";
import type { HistoryBenchFigures } from "../../src/bench/history-bench.ts";

/**
 * History is on disk, not in the heap: a server restarted on a log of
 * 200,000 allocation transitions over 20,000 allocations (collected at the
 * end, as a long-lived cluster's allocations are) holds less than 50 MB of
 * heap more than an empty server, and answers one allocation's full
 * history (1,000 transitions) exactly as the entries a replay computes.
 * Before the history store, the same log left about 300 MB more. The
 * 2,000,000-transition run is `npm run bench -- --history-read` (minutes
 * here: replay applies about 12,000 client updates a second on this
 * machine, and the run replays the log twice).
 */
describe("history heap", () => {
  it("keeps the heap of a restarted server small however many transitions its log holds", async () => {
    const figures = await inFreshProcess<HistoryBenchFigures>(
      {
        module: "./history-bench.ts",
        exported: "benchHistory",
        args: [
          {
            allocs: 20_000,
            transitionsPerAlloc: 10,
            hotTransitions: 1_000,
            allocsPerRecord: 200,
            reads: 1,
            collect: true,
          },
        ],
        label: "history heap",
      },
      ["--expose-gc"],
    );
    expect(figures.transitions).toBeGreaterThan(200_000);
    expect(figures.liveAllocs).toBe(0);
    expect(figures.hotEntries).toBeGreaterThan(1_000);
    expect(figures.sameAnswer).toBe(1);
    expect(figures.heapGrowthMB).toBeLessThan(50);
  }, 600_000);
});
