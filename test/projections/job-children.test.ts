import { describe, expect, it } from "vitest";
import type { PeriodicLaunchRow } from "../../projections/job-children.ts";
import { periodicEvalRefusal } from "../../projections/jobs.ts";
import { canonicalizeJob } from "../../src/jobs/canonicalize.ts";
import { periodicLaunch } from "../../src/jobs/periodic-launch.ts";
import type { Draft } from "../../src/store/writer.ts";
import { newEvaluation } from "../../streams/evals.ts";
import { JOB_REGISTERED_VERSION, type JobSpec } from "../../streams/jobs.ts";
import type { JobDispatched } from "../../streams/periodic.ts";
import { parameterizedJob, periodicJob } from "../services/periodic-fixtures.ts";
import { AT, memoryStore } from "./memory-store.ts";

const spec = (raw: Record<string, unknown>): JobSpec => canonicalizeJob({ Namespace: "default", ...raw });

const register = (job: JobSpec, withEval = false): Draft => ({
  type: "JobRegistered",
  v: JOB_REGISTERED_VERSION,
  data: {
    Job: job,
    Eval: withEval
      ? newEvaluation({
          ID: "e-register",
          Namespace: "default",
          Type: "batch",
          TriggeredBy: "job-register",
          JobID: job.ID,
          CreateTime: 0,
        })
      : null,
    EnforceIndex: false,
    JobModifyIndex: 0,
    Submission: null,
  },
});

/** A memory store of a bootstrapped cluster. */
async function world() {
  const m = await memoryStore();
  // The bootstrap creates the default namespace and node pools.
  await m.write({
    type: "ClusterBootstrapped",
    v: 1,
    data: { ClusterID: "c1", CreateTime: AT, ServerName: "s1" },
  });
  return m;
}

const launch = (job: JobSpec, at: number, evalID: string): Draft => ({
  type: "PeriodicJobLaunched",
  v: 1,
  data: periodicLaunch(job, at, at, evalID, false),
});

describe("periodic launches and dispatches at apply", () => {
  it("refuses a registration of a periodic or parameterized job that carries an evaluation", async () => {
    const { write, tables } = await world();
    for (const job of [spec(periodicJob("p")), spec(parameterizedJob("d"))]) {
      const [outcome] = await write(register(job, true));
      expect(outcome).toMatchObject({ status: "rejected", code: 400, reason: periodicEvalRefusal });
    }
    expect(tables.jobs.size).toBe(0);
    expect(tables.evals.size).toBe(0);
  });

  it("launches a tick once: a second leader's (or a restarted one's) launch of it changes nothing", async () => {
    const { write, tables, store } = await world();
    const job = spec(periodicJob("report"));
    await write(register(job));
    // The registration's time (the envelope's) is the first recorded launch.
    const registeredAt = tables.periodicLaunches.get("default\u0000report")!.Launch;
    expect(registeredAt).toBe(AT + 2000);

    const tick = registeredAt + 60_000;
    const [first] = await write(launch(job, tick, "e1"));
    expect(first!.status).toBe("applied");
    const hash = store.hash();
    const [second] = await write(launch(job, tick, "e2"));
    expect(second).toMatchObject({ status: "rejected", code: 409 });
    const [older] = await write(launch(job, tick - 30_000, "e3"));
    expect(older).toMatchObject({ status: "rejected", code: 409 });
    expect(store.hash()).toBe(hash);
    expect(tables.evals.has("e2")).toBe(false);

    const child = tables.jobs.get(`default\u0000report/periodic-${tick / 1000}`)!;
    expect(child).toMatchObject({ ParentID: "report", Periodic: null, Status: "pending", Version: 0 });
    expect(tables.evals.get("e1")).toMatchObject({
      TriggeredBy: "periodic-job",
      JobModifyIndex: child.CreateIndex,
    });
    expect(tables.periodicLaunches.get("default\u0000report")).toMatchObject<Partial<PeriodicLaunchRow>>({
      Launch: tick,
      ModifyIndex: child.CreateIndex,
    });
    expect(tables.jobSummaries.get("default\u0000report")!.Children).toEqual({
      Pending: 1,
      Running: 0,
      Dead: 0,
    });

    // Purged: the launch record goes with it, the child stays (as Nomad).
    await write({
      type: "JobDeregistered",
      v: 1,
      data: { Namespace: "default", JobID: "report", Purge: true, Eval: null },
    });
    expect(tables.periodicLaunches.size).toBe(0);
    expect(tables.jobs.has(`default\u0000report/periodic-${tick / 1000}`)).toBe(true);
    const [orphan] = await write(launch(job, tick + 60_000, "e4"));
    expect(orphan).toMatchObject({ status: "rejected", code: 404 });
  });

  it("registers the child again when a forced launch falls in the second of a tick (Nomad's ForceEval upserts)", async () => {
    const { write, tables } = await world();
    const job = spec(periodicJob("report"));
    await write(register(job));
    const tick = tables.periodicLaunches.get("default\u0000report")!.Launch + 60_000;
    await write(launch(job, tick, "e1"));
    const childKey = `default\u0000report/periodic-${tick / 1000}`;
    const created = tables.jobs.get(childKey)!;

    const data = periodicLaunch(job, tick + 400, tick + 400, "e-forced", true);
    expect(data.ChildID).toBe(created.ID);
    const [outcome] = await write({ type: "PeriodicJobLaunched", v: 1, data });
    expect(outcome!.status).toBe("applied");
    expect(tables.jobs.get(childKey)).toMatchObject({ CreateIndex: created.CreateIndex });
    expect(tables.evals.get("e-forced")).toMatchObject({ JobID: created.ID, TriggeredBy: "periodic-job" });
    expect(tables.periodicLaunches.get("default\u0000report")!.Launch).toBe(tick + 400);
    expect(tables.jobSummaries.get("default\u0000report")!.Children).toEqual({
      Pending: 1,
      Running: 0,
      Dead: 0,
    });
    // A scheduled tick in that second is still refused: it is the two-leaders case.
    const [again] = await write(launch(job, tick + 700, "e2"));
    expect(again).toMatchObject({ status: "rejected", code: 409 });
  });

  it("refuses a launch of a stopped or disabled job, and a child ID that does not name the launch", async () => {
    const { write } = await world();
    const job = spec(periodicJob("report"));
    await write(register(job));
    const wrongID = periodicLaunch(job, AT + 120_000, AT, "e1", false);
    const [renamed] = await write({
      type: "PeriodicJobLaunched",
      v: 1,
      data: { ...wrongID, ChildID: "report/x" },
    });
    expect(renamed).toMatchObject({ status: "rejected", code: 400 });
    await write(register({ ...job, Periodic: { ...job.Periodic, Enabled: false } }));
    const [disabled] = await write(launch(job, AT + 180_000, "e2"));
    expect(disabled).toMatchObject({ status: "rejected", code: 400 });
  });

  it("keeps the first of two dispatches racing with one idempotency token", async () => {
    const { write, tables } = await world();
    await write(register(spec(parameterizedJob("etl"))));
    const dispatch = (childID: string): Draft => ({
      type: "JobDispatched",
      v: 1,
      data: {
        Namespace: "default",
        ParentID: "etl",
        ChildID: childID,
        Meta: { customer: "a" },
        Payload: "AA==",
        IdempotencyToken: "once",
        Eval: null,
      } satisfies JobDispatched,
    });
    const [a] = await write(dispatch("etl/dispatch-1-aaaaaaaa"));
    const [b] = await write(dispatch("etl/dispatch-1-bbbbbbbb"));
    expect(a!.status).toBe("applied");
    expect(b).toMatchObject({ status: "rejected", code: 409 });
    expect(tables.jobs.get("default\u0000etl/dispatch-1-aaaaaaaa")).toMatchObject({
      Dispatched: true,
      ParentID: "etl",
      Meta: { team: "data", customer: "a" },
      Payload: "AA==",
      DispatchIdempotencyToken: "once",
    });
    expect(tables.jobs.has("default\u0000etl/dispatch-1-bbbbbbbb")).toBe(false);
  });
});
