import { Registry } from "prom-client";
import { describe, expect, it } from "vitest";
import { WindowedSummary } from "../../src/metrics/windowed-summary.ts";

const quantiles = async (s: WindowedSummary) =>
  (await s.get()).values.filter((v) => v.metricName === undefined).map((v) => [v.labels.quantile, v.value]);

describe("WindowedSummary", () => {
  it("reads quantiles by nearest rank over the last one to two generations, and sum and count since the start", async () => {
    let now = 0;
    const s = new WindowedSummary("t_ms", "t", [0.5, 0.99], 5_000, () => now);
    for (let v = 1; v <= 100; v++) s.observe("", {}, v);
    expect(await quantiles(s)).toEqual([
      [0.5, 50],
      [0.99, 99],
    ]);
    now = 5_000; // a second generation starts; the first is still read
    s.observe("", {}, 1_000);
    expect(await quantiles(s)).toEqual([
      [0.5, 51],
      [0.99, 100],
    ]);
    now = 10_000; // the first generation has left the window
    expect(await quantiles(s)).toEqual([
      [0.5, 1_000],
      [0.99, 1_000],
    ]);
    now = 25_000; // idle for longer than a generation: nothing left
    expect(await quantiles(s)).toEqual([
      [0.5, 0],
      [0.99, 0],
    ]);
    const totals = (await s.get()).values.filter((v) => v.metricName !== undefined);
    expect(totals).toEqual([
      { metricName: "t_ms_sum", labels: {}, value: 5_050 + 1_000 },
      { metricName: "t_ms_count", labels: {}, value: 101 },
    ]);
  });

  it("keeps a bounded sample of a burst, whose quantiles stay near the burst's", async () => {
    const s = new WindowedSummary("b_ms", "b", [0.5], 5_000, () => 0);
    for (let i = 0; i < 100_000; i++) s.observe("", {}, i % 1_000);
    const [[, median]] = (await quantiles(s)) as [[number, number]];
    expect(median).toBeGreaterThan(400);
    expect(median).toBeLessThan(600);
    const count = (await s.get()).values.find((v) => v.metricName === "b_ms_count");
    expect(count?.value).toBe(100_000);
  });

  it("is written by prom-client's registry as a summary, one series per label set", async () => {
    const registry = new Registry();
    const s = new WindowedSummary("w_ms", "worker timings", [0.5], 5_000);
    registry.registerMetric(s as unknown as Parameters<Registry["registerMetric"]>[0]);
    s.observe("op=a", { op: "a" }, 2);
    s.observe("op=b", { op: "b" }, 4);
    const text = await registry.metrics();
    expect(text).toContain("# HELP w_ms worker timings\n# TYPE w_ms summary");
    expect(text).toMatch(/^w_ms\{quantile="0\.5",op="a"\} 2$/m);
    expect(text).toMatch(/^w_ms_sum\{op="b"\} 4$/m);
    expect(text).toMatch(/^w_ms_count\{op="b"\} 1$/m);
  });
});
