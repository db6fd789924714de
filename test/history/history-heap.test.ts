import { describe, expect, it } from "vitest";
import { inFreshProcess } from "../../src/bench/fresh-process.ts";
import type { HistoryBenchFigures, HistoryBenchOptions } from "../../src/bench/history-bench.ts";

/** The history benchmark at a test's size, in a process of its own with --expose-gc. */
function restartedOn(transitionsPerAlloc: number): Promise<HistoryBenchFigures> {
  const options: HistoryBenchOptions = {
    allocs: 20_000,
    transitionsPerAlloc,
    hotTransitions: 1_000,
    allocsPerRecord: 200,
    reads: 1,
    collect: true,
  };
  return inFreshProcess<HistoryBenchFigures>(
    { module: "./history-bench.ts", exported: "benchHistory", args: [options], label: "history heap" },
    ["--expose-gc"],
  );
}

/**
 * History is on disk, not in the heap: a server restarted on a log of
 * 200,000 allocation transitions over 20,000 allocations (collected at the
 * end, as a long-lived cluster's allocations are) holds no more heap than
 * one restarted on a log of 20,000 transitions over the same allocations,
 * and answers one allocation's full history (1,000 transitions) exactly as
 * the entries a replay computes. Before the history store, the larger log
 * left about 230 MB more. The 2,000,000-transition run is
 * `npm run bench -- --history-read` (minutes here: replay applies about
 * 12,000 client updates a second on this machine, and the run replays the
 * log twice).
 */
describe("history heap", () => {
  it("keeps the heap of a restarted server the same however many transitions its log holds", async () => {
    const few = await restartedOn(1);
    const many = await restartedOn(10);
    expect(many.transitions).toBeGreaterThan(200_000);
    for (const figures of [few, many]) {
      expect(figures.liveAllocs).toBe(0);
      expect(figures.hotEntries).toBeGreaterThan(1_000);
      expect(figures.sameAnswer).toBe(1);
    }
    // 180,000 more transitions: not 180,000 more entries in the heap (they would be over 100 MB).
    expect(many.restartedHeapMB - few.restartedHeapMB).toBeLessThan(15);
  }, 900_000);
});
