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
