import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestServer, type TestServer } from "../../server-harness.ts";

describe("GET /v1/metrics", () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer();
  });
  afterAll(async () => {
    await s.stop();
  });

  it("answers Nomad's JSON summary with Nomad's metric names and chronomad's own", async () => {
    await s.call("/v1/status/leader");
    const res = await s.call("/v1/metrics");
    expect(res.status).toBe(200);
    const body = (await res.json()) as {
      Timestamp: string;
      Gauges: { Name: string; Value: number }[];
      Counters: { Name: string }[];
      Samples: { Name: string }[];
      Points: unknown[];
    };
    expect(body.Timestamp).toMatch(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d0 \+0000 UTC$/);
    expect(body.Points).toEqual([]);
    const gauge = (name: string) => body.Gauges.find((g) => g.Name === name)?.Value;
    expect(gauge("nomad.raft.appliedIndex")).toBe(s.store.appliedIndex);
    expect(gauge("nomad.raft.lastIndex")).toBe(s.log.lastIndex());
    expect(gauge("nomad.nomad.broker.total_ready")).toBe(0);
    expect(gauge("nomad.nomad.heartbeat.active")).toBe(0);
    expect(gauge("nomad.nomad.job_status.running")).toBe(0);
    expect(gauge("nomad.runtime.alloc_bytes")).toBeGreaterThan(0);
    expect(gauge("chronomad.store.applied_index")).toBe(s.store.appliedIndex);
    expect(body.Counters.map((c) => c.Name)).toContain("chronomad.http.requests");
    expect(body.Samples.map((c) => c.Name)).toContain("chronomad.http.request_ms");
  });

  it("answers the same registry as Prometheus text with HELP and TYPE lines", async () => {
    const res = await s.call("/v1/metrics?format=prometheus");
    expect(res.headers.get("content-type")).toMatch(/^text\/plain; version=0\.0\.4/);
    const text = await res.text();
    expect(text).toContain("# HELP nomad_nomad_broker_total_ready Evaluations ready to be scheduled");
    expect(text).toContain("# TYPE nomad_nomad_broker_total_ready gauge");
    expect(text).toMatch(/^nomad_raft_appliedIndex \d+$/m);
    expect(text).toMatch(/^chronomad_http_requests\{method="GET"\} \d+$/m);
    expect((await s.call("/v1/metrics", { method: "PUT" })).status).toBe(405);
  });
});
