import { describe, expect, it } from "vitest";
import { benchVariables } from "../../src/bench/variables-bench.ts";

describe("variables benchmark", () => {
  it("writes and reads every path over HTTP, and times sealing and opening alone", async () => {
    const f = await benchVariables({ paths: 50, durationMs: 300, rounds: 1 });
    expect(f.paths).toBe(50);
    expect(f.items_bytes).toBeGreaterThan(0);
    expect(f.write_per_s).toBeGreaterThan(0);
    expect(f.read_per_s).toBeGreaterThan(0);
    expect(f.write_p99_ms).toBeGreaterThanOrEqual(f.write_p50_ms);
    expect(f.encrypt_us).toBeGreaterThan(0);
    expect(f.decrypt_us).toBeGreaterThan(0);
  }, 120_000);
});
