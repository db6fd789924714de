import { afterEach, describe, expect, it } from "vitest";
import type { EvaluationRow } from "../../../projections/evals.ts";
import type { PlanRefusalRow } from "../../../projections/plan-apply.ts";
import { CORE_SCHEDULER, SCHEDULER_TYPES } from "../../../src/services/scheduler/worker-pool.ts";
import { startTestServer, type TestServer } from "../../server-harness.ts";
import { batchJob } from "./batch-job.ts";
import { Scenario } from "./scenario.ts";

const scenarios: Scenario[] = [];
const servers: TestServer[] = [];
afterEach(async () => {
  for (const s of scenarios.splice(0)) await s.stop();
  for (const s of servers.splice(0)) await s.stop();
});

const JOBS = 40;

/** One worker, `depth` evaluations planning at once; every evaluation is ready before the worker takes any. */
async function oneWorker(depth: number, before: (s: Scenario) => Promise<void> = async () => undefined) {
  const s = await Scenario.start();
  scenarios.push(s);
  s.scheduler.setWorkerConfig({ NumSchedulers: 1, EnabledSchedulers: [...SCHEDULER_TYPES, CORE_SCHEDULER] });
  s.scheduler.setDepth(depth);
  await before(s);
  const pause = async (on: boolean) => {
    const res = await s.call("/v1/operator/scheduler/configuration", "PUT", {
      SchedulerAlgorithm: "binpack",
      PauseEvalBroker: on,
    });
    expect(res.status, res.text).toBe(200);
  };
  await pause(true);
  return { s, unpause: () => pause(false) };
}

describe("a worker's evaluations in flight", () => {
  it("takes the next evaluation while the last one's outcome is on its way to the log, and acks each once applied", async () => {
    const { s, unpause } = await oneWorker(1);
    const ids = Array.from({ length: JOBS }, (_, i) => `depth-${String(i).padStart(2, "0")}`);
    for (const id of ids) await s.register(batchJob(id));
    // At each applied batch: evaluations handed out and not acked yet.
    let peakUnacked = 0;
    const watching = s.server.store.applied$.subscribe(() => {
      peakUnacked = Math.max(peakUnacked, s.scheduler.evalBroker?.stats().unacked ?? 0);
    });
    await unpause();
    await s.idle();
    watching.unsubscribe();

    // With one planning slot, an evaluation whose status record is still
    // being written no longer holds it: the worker had taken the next one
    // before that record was applied.
    expect(peakUnacked).toBeGreaterThan(1);
    // Nothing placed (no node), so each ended complete with one blocked follow-up, none acked before its record.
    for (const id of ids) {
      const evals = s.evals(id);
      expect(evals.map((e) => e.Status).sort(), id).toEqual(["blocked", "complete"]);
    }
    expect(s.scheduler.evalBroker?.stats()).toMatchObject({ ready: 0, unacked: 0 });
  });

  it("still plans one evaluation at a time with one slot: no plan is computed against a state missing another's", async () => {
    // Ten nodes that fit exactly the jobs below: plans computed side by side
    // would pick the same free room and be refused at apply.
    const { s, unpause } = await oneWorker(1, async (s) => {
      for (let i = 0; i < 10; i++) {
        await s.addNode({
          NodeResources: { Cpu: { CpuShares: 1000 }, Memory: { MemoryMB: 4000 }, Disk: { DiskMB: 100_000 } },
        });
      }
    });
    const ids = Array.from({ length: JOBS }, (_, i) => `fit-${String(i).padStart(2, "0")}`);
    for (const id of ids) await s.register(batchJob(id, { cpu: 250 }));
    await unpause();
    await s.idle();
    for (const id of ids) expect(s.live(id), id).toHaveLength(1);
    const refusals = s.server.store.table<PlanRefusalRow>("plan_refusals");
    expect(refusals.size).toBe(0);
  });
});

describe("a crash while outcomes are on their way to the log", () => {
  it("loses no evaluation: those not recorded are done again by the next start, each job's once", async () => {
    const first = await startTestServer({ keepDir: true });
    const call = async (path: string, method: string, body?: unknown) => {
      const res = await first.call(path, {
        method,
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      expect(res.status, await res.clone().text()).toBe(200);
    };
    const pause = (on: boolean) =>
      call("/v1/operator/scheduler/configuration", "PUT", {
        SchedulerAlgorithm: "binpack",
        PauseEvalBroker: on,
      });
    await pause(true);
    const ids = Array.from({ length: JOBS }, (_, i) => `crash-${String(i).padStart(2, "0")}`);
    for (const id of ids) await call("/v1/jobs", "PUT", { Job: batchJob(id) });
    const evals = first.store.table<EvaluationRow>("evals");
    const pending = () => [...evals.all()].filter((e) => e.Status === "pending").length;
    // The log stops taking records as the first outcome is applied: the
    // evaluations in flight then have their outcome durable, or queued and
    // refused, and none of them was acked past what the log holds.
    let pendingAtCrash = -1;
    const crashed = new Promise<void>((resolve) => {
      const watching = first.store.change$.subscribe((c) => {
        if (c.table !== "evals" || (c.after as EvaluationRow | undefined)?.Status !== "complete") return;
        watching.unsubscribe();
        pendingAtCrash = pending();
        void first.flushLog().then(resolve);
      });
    });
    await pause(false);
    await crashed;
    await first.close();
    expect(pendingAtCrash).toBeGreaterThan(0);

    const again = await startTestServer({ dataDir: first.dataDir });
    servers.push(again);
    const after = again.store.table<EvaluationRow>("evals");
    const deadline = Date.now() + 30_000;
    while ([...after.all()].some((e) => e.Status === "pending")) {
      if (Date.now() > deadline) throw new Error("evaluations still pending after the restart");
      await new Promise((r) => setTimeout(r, 20));
    }
    for (const id of ids) {
      const mine = [...after.all()].filter((e) => e.JobID === id);
      const registered = mine.filter((e) => e.TriggeredBy === "job-register");
      expect(
        registered.map((e) => e.Status),
        id,
      ).toEqual(["complete"]);
      // Done once: one blocked follow-up, not one per run.
      expect(
        mine.filter((e) => e.Status === "blocked"),
        id,
      ).toHaveLength(1);
    }
  });
});
