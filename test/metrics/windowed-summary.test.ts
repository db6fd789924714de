import { Registry } from "prom-client";
import { describe, expect, it } from "vitest";
import { WindowedSummary } from "../../src/metrics/windowed-summary.ts";

const PERCENTILES = [0.5, 0.9, 0.99];

function summary(clock: { t: number }) {
  return new WindowedSummary({
    name: "req_ms",
    help: "request time",
    percentiles: PERCENTILES,
    maxAgeSeconds: 10,
    now: () => clock.t,
  });
}

async function quantiles(s: WindowedSummary, key = "") {
  const got = await s.get();
  const mine = got.values.filter((v) => {
    const { quantile: _q, ...labels } = v.labels as Record<string, unknown>;
    return (
      Object.entries(labels)
        .map(([k, x]) => `${k}=${x}`)
        .join(";") === key
    );
  });
  const out: Record<string, number> = {};
  for (const v of mine) {
    const name = (v as { metricName?: string }).metricName;
    out[name ? name.slice("req_ms".length) : `q${v.labels.quantile}`] = v.value;
  }
  return out;
}

describe("WindowedSummary", () => {
  it("answers nearest-rank quantiles, with count and sum since start", async () => {
    const clock = { t: 1_000 };
    const s = summary(clock);
    for (let v = 1; v <= 100; v++) s.observe("", {}, v);
    expect(await quantiles(s)).toEqual({ "q0.5": 50, "q0.9": 90, "q0.99": 99, _sum: 5050, _count: 100 });
  });

  it("forgets samples older than the window but keeps counting them", async () => {
    const clock = { t: 0 };
    const s = summary(clock);
    for (let i = 0; i < 10; i++) s.observe("", {}, 1_000);
    clock.t = 5_000; // the next slot: the first one still counts
    s.observe("", {}, 1);
    expect((await quantiles(s))["q0.5"]).toBe(1_000);
    clock.t = 10_000; // the first slot is out of the window now
    expect(await quantiles(s)).toEqual({ "q0.5": 1, "q0.9": 1, "q0.99": 1, _sum: 10_001, _count: 11 });
    clock.t = 30_000; // nothing for a whole window
    expect(await quantiles(s)).toEqual({ "q0.5": 0, "q0.9": 0, "q0.99": 0, _sum: 10_001, _count: 11 });
  });

  it("keeps a bounded, unbiased subset when flooded", async () => {
    const clock = { t: 0 };
    const s = summary(clock);
    // 200,000 samples, uniform over [0, 1000): the median stays near 500.
    for (let i = 0; i < 200_000; i++) s.observe("", {}, (i * 7919) % 1000);
    const q = await quantiles(s);
    expect(q._count).toBe(200_000);
    expect(q["q0.5"]).toBeGreaterThan(450);
    expect(q["q0.5"]).toBeLessThan(550);
  });

  it("keeps one series per label set and refuses a value that is not a number", async () => {
    const clock = { t: 0 };
    const s = summary(clock);
    s.observe("method=GET", { method: "GET" }, 3);
    s.observe("method=PUT", { method: "PUT" }, 7);
    expect(await quantiles(s, "method=GET")).toMatchObject({ "q0.5": 3, _count: 1 });
    expect(await quantiles(s, "method=PUT")).toMatchObject({ "q0.5": 7, _count: 1 });
    expect(() => s.observe("", {}, Number.NaN)).toThrow(/not a finite number/);
  });

  it("is exposed by a prom-client registry in the text format", async () => {
    const registry = new Registry();
    const s = summary({ t: 0 });
    registry.registerMetric(s as unknown as Parameters<Registry["registerMetric"]>[0]);
    s.observe("method=GET", { method: "GET" }, 12);
    const text = await registry.metrics();
    expect(text).toContain("# HELP req_ms request time\n# TYPE req_ms summary");
    expect(text).toMatch(/^req_ms\{quantile="0\.99",method="GET"\} 12$/m);
    expect(text).toMatch(/^req_ms_sum\{method="GET"\} 12$/m);
    expect(text).toMatch(/^req_ms_count\{method="GET"\} 1$/m);
  });
});
