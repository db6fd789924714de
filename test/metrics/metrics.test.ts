import { Counter, Registry } from "prom-client";
import { describe, expect, it } from "vitest";
import { Metrics } from "../../src/metrics/metrics.ts";

describe("Metrics", () => {
  it("serves counters, gauges and samples from one registry in both forms", async () => {
    const m = new Metrics();
    m.incr("nomad.nomad.rpc.request", 1, { method: "GET" }, "RPC requests");
    m.incr("nomad.nomad.rpc.request", 3, { method: "GET" });
    let ready = 2;
    m.gauge("nomad.nomad.broker.total_ready", () => ready);
    for (const v of [10, 20, 30]) m.sample("chronomad.http.request_ms", v);

    const json = await m.toJSON(new Date(Date.UTC(2023, 7, 9, 10, 11, 27)));
    expect(json.Timestamp).toBe("2023-08-09 10:11:20 +0000 UTC");
    expect(json.Gauges).toEqual([{ Name: "nomad.nomad.broker.total_ready", Value: 2, Labels: {} }]);
    expect(json.Counters).toEqual([
      {
        Name: "nomad.nomad.rpc.request",
        Count: 2,
        Rate: 0.4,
        Sum: 4,
        Min: 1,
        Max: 3,
        Mean: 2,
        Stddev: Math.SQRT2,
        Labels: { method: "GET" },
      },
    ]);
    expect(json.Samples).toEqual([
      expect.objectContaining({
        Name: "chronomad.http.request_ms",
        Count: 3,
        Sum: 60,
        Min: 10,
        Max: 30,
        Mean: 20,
      }),
    ]);

    ready = 5;
    const text = await m.toPrometheus();
    expect(text).toContain(
      "# HELP nomad_nomad_rpc_request RPC requests\n# TYPE nomad_nomad_rpc_request counter",
    );
    expect(text).toMatch(/^nomad_nomad_rpc_request\{method="GET"\} 4$/m);
    expect(text).toMatch(/^nomad_nomad_broker_total_ready 5$/m);
    expect(text).toContain("# TYPE chronomad_http_request_ms summary");
    expect(text).toMatch(/^chronomad_http_request_ms\{quantile="0\.5"\} 20$/m);
    expect(text).toMatch(/^chronomad_http_request_ms_count 3$/m);
  });

  it("scrapes counters as a prom-client counter incremented on each call would show them", async () => {
    const m = new Metrics();
    const reference = new Registry();
    const plain = new Counter({
      name: "nomad_rpc_request",
      help: "nomad.rpc.request",
      registers: [reference],
    });
    const put = { method: "PUT" };
    const get = { method: "GET" };
    // Untouched, a counter without labels shows 0.
    m.incr("nomad.rpc.request", 0);
    plain.inc(0);
    expect(await m.toPrometheus()).toBe(await reference.metrics());
    // Metrics registers a family at its first record.
    const labelled = new Counter({
      name: "chronomad_http_requests",
      help: "chronomad.http.requests",
      labelNames: ["method"],
      registers: [reference],
    });
    // The same labels object again and again, another in between, new objects, fractions.
    const calls: [{ method: string } | undefined, number][] = [
      [put, 1],
      [put, 1],
      [get, 0.1],
      [put, 2.5],
      [{ method: "GET" }, 0.2],
      [undefined, 3],
      [{ method: "DELETE" }, 1],
      [get, 0.7],
      [undefined, 1e-3],
    ];
    for (const [labels, by] of calls) {
      if (labels) {
        m.incr("chronomad.http.requests", by, labels);
        labelled.inc(labels, by);
      } else {
        m.incr("nomad.rpc.request", by);
        plain.inc(by);
      }
    }
    expect(await m.toPrometheus()).toBe(await reference.metrics());
    const json = await m.toJSON(new Date(0));
    expect(json.Counters.map((c) => [c.Labels.method, c.Count, c.Sum])).toEqual([
      ["DELETE", 1, 1],
      ["GET", 3, 0.1 + 0.2 + 0.7],
      ["PUT", 3, 4.5],
      [undefined, 3, 3.001],
    ]);
    // What prom-client refused on each call is still refused.
    expect(() => m.incr("chronomad.http.requests", 1, { route: "x" })).toThrow(/label route/);
    expect(() => m.incr("nomad.rpc.request", -1)).toThrow(/cannot decrease/);
    expect(() => m.incr("nomad.rpc.request", Number.POSITIVE_INFINITY)).toThrow(TypeError);
    expect(() => plain.inc(-1)).toThrow();
    expect(() => plain.inc(Number.POSITIVE_INFINITY)).toThrow(TypeError);
    expect(await m.toPrometheus()).toBe(await reference.metrics());
  });

  it("samples by a reused labels object and by new ones into the same series", async () => {
    const m = new Metrics();
    const labels = { method: "PUT" };
    m.sample("chronomad.http.request_ms", 10, labels);
    m.sample("chronomad.http.request_ms", 30, { method: "PUT" });
    m.sample("chronomad.http.request_ms", 5, { method: "GET" });
    m.sample("chronomad.http.request_ms", 20, labels);
    const json = await m.toJSON(new Date(0));
    expect(json.Samples.map((s) => [s.Labels.method, s.Count, s.Sum, s.Min, s.Max])).toEqual([
      ["GET", 1, 5, 5, 5],
      ["PUT", 3, 60, 10, 30],
    ]);
    expect(await m.toPrometheus()).toMatch(/^chronomad_http_request_ms_count\{method="PUT"\} 3$/m);
  });

  it("reads many-series gauges when scraped and leaves out a gauge that cannot answer", async () => {
    const m = new Metrics();
    let jobs = [["web", 2]] as [string, number][];
    m.gauges("nomad.nomad.job_summary.running", ["job"], () => jobs.map(([job, n]) => [{ job }, n] as const));
    m.gauge("nomad.nomad.heartbeat.active", () => {
      throw new Error("not the leader");
    });
    const first = await m.toJSON(new Date());
    expect(first.Gauges).toEqual([
      { Name: "nomad.nomad.job_summary.running", Value: 2, Labels: { job: "web" } },
    ]);
    jobs = [["api", 1]];
    const second = await m.toJSON(new Date());
    expect(second.Gauges.map((g) => g.Labels)).toEqual([{ job: "api" }]);
    expect(await m.toPrometheus()).not.toMatch(/^nomad_nomad_heartbeat_active /m);
  });
});
