import { afterEach, describe, expect, it } from "vitest";
import { Scenario, serviceJob } from "../services/scheduler/scenario.ts";

const scenarios: Scenario[] = [];
afterEach(async () => {
  for (const s of scenarios.splice(0)) await s.stop();
});

interface Summary {
  Gauges: { Name: string; Value: number }[];
  Counters: { Name: string; Count: number; Labels: Record<string, string> }[];
  Samples: { Name: string; Count: number }[];
}

describe("the scheduler pipeline in /v1/metrics", () => {
  it("reports the broker, the plan queue, the workers and their timings under Nomad's names", async () => {
    const s = await Scenario.start();
    scenarios.push(s);
    await s.addNode();
    await s.register(serviceJob("web", 2));
    // Does not fit anywhere: a blocked evaluation.
    await s.register(
      serviceJob("huge", 1, {}, { Tasks: [{ Name: "t", Driver: "docker", Resources: { CPU: 90_000 } }] }),
    );
    await s.idle();

    const res = await s.call("/v1/metrics");
    expect(res.status).toBe(200);
    const body = res.body as Summary;
    const gauge = (name: string) => body.Gauges.find((g) => g.Name === name)?.Value;
    const samples = (name: string) => body.Samples.find((x) => x.Name === name)?.Count ?? 0;
    expect(gauge("nomad.nomad.broker.total_ready")).toBe(0);
    expect(gauge("nomad.nomad.broker.total_unacked")).toBe(0);
    expect(gauge("nomad.nomad.broker.service.ready")).toBe(0);
    expect(gauge("nomad.nomad.blocked_evals.total_blocked")).toBe(1);
    expect(gauge("nomad.nomad.blocked_evals.total_escaped")).toBe(0);
    expect(gauge("nomad.nomad.plan.queue_depth")).toBe(0);
    expect(gauge("chronomad.scheduler.plan_queue.in_flight")).toBe(0);
    expect(gauge("chronomad.scheduler.workers")).toBe(s.scheduler.workerConfig().NumSchedulers);
    expect(gauge("chronomad.scheduler.workers_busy")).toBe(0);
    const utilization = gauge("chronomad.scheduler.worker_utilization");
    expect(utilization).toBeGreaterThan(0);
    expect(utilization).toBeLessThanOrEqual(1);
    // Plans and status updates (one with its blocked evaluation), sharing appends.
    const appends = gauge("chronomad.scheduler.plan_queue.appends")!;
    expect(appends).toBeGreaterThan(0);
    expect(appends).toBeLessThanOrEqual(gauge("chronomad.scheduler.plan_queue.submissions")!);

    expect(samples("nomad.nomad.worker.invoke_scheduler.service")).toBe(2);
    expect(samples("nomad.nomad.worker.dequeue_eval")).toBeGreaterThanOrEqual(2);
    const plans = samples("nomad.nomad.worker.submit_plan");
    expect(plans).toBeGreaterThanOrEqual(1);
    expect(samples("nomad.nomad.worker.update_eval")).toBe(2);
    expect(samples("nomad.nomad.plan.submit")).toBe(plans);
    expect(samples("nomad.nomad.plan.apply")).toBe(appends);
    expect(samples("chronomad.scheduler.eval_ms")).toBe(2);

    const text = await (await s.server.call("/v1/metrics?format=prometheus")).text();
    expect(text).toContain("# TYPE nomad_nomad_plan_queue_depth gauge");
    expect(text).toMatch(/^nomad_nomad_plan_apply\{quantile="0.99"\} /m);
  });

  it("counts the nodes whose part of a plan apply refused", async () => {
    const s = await Scenario.start();
    scenarios.push(s);
    const node = await s.addNode();
    await s.call("/v1/operator/scheduler/configuration", "PUT", {
      SchedulerAlgorithm: "binpack",
      PauseEvalBroker: true,
    });
    // Two jobs that each fill the node, scheduled at once by racing workers: one plan loses.
    const big = { Tasks: [{ Name: "t", Driver: "docker", Resources: { CPU: 3000, MemoryMB: 256 } }] };
    await s.register(serviceJob("a", 1, {}, big));
    await s.register(serviceJob("b", 1, {}, big));
    await s.call("/v1/operator/scheduler/configuration", "PUT", {
      SchedulerAlgorithm: "binpack",
      PauseEvalBroker: false,
    });
    await s.idle();
    expect(s.live("a").length + s.live("b").length).toBe(1);
    const body = (await s.call("/v1/metrics")).body as Summary;
    const rejected = body.Counters.filter((c) => c.Name === "nomad.nomad.plan.node_rejected");
    expect(rejected.map((c) => c.Labels)).toEqual([{ node_id: node.id }]);
  });
});
