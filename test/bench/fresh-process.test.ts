import { describe, expect, it } from "vitest";
import { inFreshProcess } from "../../src/bench/fresh-process.ts";

describe("inFreshProcess", () => {
  it("runs a benchmark part in a child process and returns its figures", async () => {
    const figures = await inFreshProcess<{ records_per_s: number; records: number }>({
      module: "./store-bench.ts",
      exported: "benchReplay",
      args: [5000, 1],
      label: "replay",
    });
    expect(figures.records).toBe(5000);
    expect(figures.records_per_s).toBeGreaterThan(0);
  });

  it("rejects with the child's error, naming the part", async () => {
    await expect(
      inFreshProcess({ module: "./store-bench.ts", exported: "noSuchBench", args: [], label: "missing" }),
    ).rejects.toThrow(/missing: .*exports no function noSuchBench/);
  });
});
