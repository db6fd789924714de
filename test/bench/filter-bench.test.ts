import { describe, expect, it } from "vitest";
import { benchFilter } from "../../src/bench/filter-bench.ts";

describe("filter benchmark", () => {
  it("decides every row: 2 of each 64 row shapes match its three clauses", () => {
    const f = benchFilter(6400);
    expect(f.matched).toBe(200);
    expect(f.matches_per_s).toBeGreaterThan(0);
  });
});
