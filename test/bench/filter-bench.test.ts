import { describe, expect, it } from "vitest";
import { benchFilter } from "../../src/bench/filter-bench.ts";

describe("filter benchmark", () => {
  it("decides every row, for clauses and for regular expressions", () => {
    const f = benchFilter(6400);
    // 2 of each 64 row shapes match the three clauses.
    expect(f.matched).toBe(200);
    // Half the job IDs are `web-N`.
    expect(f.regexp_matched).toBe(3200);
    expect(f.matches_per_s).toBeGreaterThan(0);
    expect(f.regexp_matches_per_s).toBeGreaterThan(0);
    expect(f.pathological_regexp_matches_per_s).toBeGreaterThan(0);
  });
});
