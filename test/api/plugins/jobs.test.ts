import { afterEach, describe, expect, it } from "vitest";
import { Scenario, serviceJob } from "../../services/scheduler/scenario.ts";

const scenarios: Scenario[] = [];
async function start(nodes = 0) {
  const s = await Scenario.start();
  scenarios.push(s);
  for (let i = 0; i < nodes; i++) await s.addNode();
  return s;
}
afterEach(async () => {
  for (const s of scenarios.splice(0)) await s.stop();
});

describe("PUT /v1/jobs", () => {
  it("registers a job with Nomad's defaults and answers Nomad's register response", async () => {
    const s = await start();
    const res = await s.call("/v1/jobs", "PUT", {
      Job: { ID: "web", TaskGroups: [{ Name: "g", Tasks: [{ Name: "t", Driver: "docker" }] }] },
    });
    expect(res.status, res.text).toBe(200);
    const body = res.body as Record<string, unknown>;
    expect(body).toMatchObject({
      EvalCreateIndex: res.index,
      JobModifyIndex: res.index,
      Warnings: "",
      Index: res.index,
    });
    expect(res.index).toBeGreaterThan(0);
    const job = (await s.call("/v1/job/web")).body as Record<string, unknown> & {
      TaskGroups: Record<string, unknown>[];
    };
    expect(job).toMatchObject({
      ID: "web",
      Name: "web",
      Namespace: "default",
      Region: "global",
      Type: "service",
      Priority: 50,
      Datacenters: ["*"],
      Version: 0,
      Status: "pending",
      Stop: false,
      CreateIndex: res.index,
      JobModifyIndex: res.index,
      Update: {
        MaxParallel: 1,
        Stagger: 30e9,
        HealthCheck: "checks",
        MinHealthyTime: 10e9,
        HealthyDeadline: 300e9,
        ProgressDeadline: 600e9,
      },
    });
    expect(job.TaskGroups[0]).toMatchObject({
      Count: 1,
      RestartPolicy: { Attempts: 2, Interval: 1800e9, Delay: 15e9, Mode: "fail" },
      ReschedulePolicy: {
        Delay: 30e9,
        DelayFunction: "exponential",
        MaxDelay: 3600e9,
        Unlimited: true,
        Attempts: 0,
        Interval: 0,
      },
      EphemeralDisk: { SizeMB: 300, Sticky: false, Migrate: false },
      Migrate: { MaxParallel: 1, HealthCheck: "checks" },
      Tasks: [{ Resources: { CPU: 100, MemoryMB: 300 }, KillTimeout: 5e9 }],
    });
    await s.idle();
    const evals = (await s.call("/v1/job/web/evaluations")).body as Record<string, unknown>[];
    expect(evals[0]).toMatchObject({
      ID: body.EvalID,
      TriggeredBy: "job-register",
      JobModifyIndex: res.index,
      Type: "service",
    });
    // No node to run it on: the evaluation completes with the failure and leaves a blocked one behind.
    expect(evals[0]).toMatchObject({
      Status: "complete",
      FailedTGAllocs: { g: { NodesEvaluated: 0 } },
      QueuedAllocations: { g: 1 },
    });
    expect(evals[1]).toMatchObject({
      Status: "blocked",
      TriggeredBy: "queued-allocs",
      PreviousEval: body.EvalID,
    });
    expect(evals[0]!.BlockedEval).toBe(evals[1]!.ID);
  });

  it("gives batch jobs Nomad's batch restart and reschedule policies, and no update strategy", async () => {
    const s = await start();
    await s.register({
      ID: "b",
      Type: "batch",
      TaskGroups: [{ Name: "g", Tasks: [{ Name: "t", Driver: "exec" }] }],
    });
    const job = (await s.call("/v1/job/b")).body as {
      Update: unknown;
      TaskGroups: Record<string, unknown>[];
    };
    expect(job.Update).toBeNull();
    expect(job.TaskGroups[0]).toMatchObject({
      Update: null,
      Migrate: null,
      RestartPolicy: { Attempts: 3, Interval: 86_400e9, Delay: 15e9, Mode: "fail" },
      ReschedulePolicy: {
        Attempts: 1,
        Interval: 86_400e9,
        Delay: 5e9,
        DelayFunction: "constant",
        Unlimited: false,
      },
    });
  });

  it("refuses bad jobs with a 400 naming the problem, and writes nothing", async () => {
    const s = await start();
    const before = s.server.log.lastIndex();
    const cases: [unknown, RegExp][] = [
      [undefined, /^Request body is empty$/],
      [{}, /^Job must be specified$/],
      [{ Job: { Name: "x" } }, /^Job ID hasn't been provided$/],
      [
        { Job: { ID: "a b", TaskGroups: [{ Name: "g", Tasks: [{ Name: "t", Driver: "d" }] }] } },
        /Job ID contains a space/,
      ],
      [{ Job: { ID: "x", TaskGroups: [] } }, /Missing job task groups/],
      // Fields the control plane carries without reading are still checked for their kind.
      [
        { Job: { ID: "x", TaskGroups: [{ Name: "g", Tasks: [{ Name: "t", Driver: "d", Env: 5 }] }] } },
        /TaskGroups\[0\]\.Tasks\[0\]\.Env must be an object, not number/,
      ],
      [
        { Job: { ID: "x", TaskGroups: [{ Name: "g", Networks: "x", Tasks: [{ Name: "t", Driver: "d" }] }] } },
        /TaskGroups\[0\]\.Networks must be an array, not string/,
      ],
      [
        { Job: { ID: "x", TaskGroups: [{ Name: "g", Tasks: [{ Name: "t", Driver: "d", Services: "s" }] }] } },
        /Tasks\[0\]\.Services must be an array, not string/,
      ],
      [
        { Job: { ID: "x", Type: "weird", TaskGroups: [{ Name: "g", Tasks: [{ Name: "t", Driver: "d" }] }] } },
        /Invalid job type: "weird"/,
      ],
      [
        { Job: { ID: "x", Priority: 500, TaskGroups: [{ Name: "g", Tasks: [{ Name: "t", Driver: "d" }] }] } },
        /job priority must be between \[1, 100\]/,
      ],
      [
        { Job: { ID: "x", TaskGroups: [{ Name: "g", Count: -1, Tasks: [{ Name: "t", Driver: "d" }] }] } },
        /Task group g validation failed: 1 error occurred:\n\t\* Task group count can't be negative/,
      ],
      [{ Job: { ID: "x", TaskGroups: [{ Name: "g", Tasks: [] }] } }, /Missing tasks for task group/],
      [
        { Job: { ID: "x", TaskGroups: [{ Name: "g", Tasks: [{ Name: "t" }] }] } },
        /Task t validation failed: 1 error occurred:\n\t\* Missing task driver/,
      ],
      [
        {
          Job: {
            ID: "x",
            TaskGroups: [{ Name: "g", Tasks: [{ Name: "t", Driver: "d", Resources: { MemoryMB: 5 } }] }],
          },
        },
        /minimum MemoryMB value is 10; got 5/,
      ],
      [
        {
          Job: {
            ID: "x",
            TaskGroups: [
              // The default logs (10 files of 10 MB) need more than the 100 MB disk asked for.
              { Name: "g", EphemeralDisk: { SizeMB: 100 }, Tasks: [{ Name: "t", Driver: "d" }] },
            ],
          },
        },
        /log storage \(100 MB\) must be less than requested disk capacity \(100 MB\)/,
      ],
      [
        { Job: { ID: "x", TaskGroups: [{ Name: "g", Count: "3", Tasks: [{ Name: "t", Driver: "d" }] }] } },
        /^Job\.TaskGroups\[0\]\.Count must be an integer, not string$/,
      ],
      [
        {
          Job: {
            ID: "x",
            // biome-ignore lint/suspicious/noTemplateCurlyInString: Nomad's interpolation syntax
            Constraints: [{ LTarget: "${attr.x}", Operand: "regexp", RTarget: "(" }],
            TaskGroups: [{ Name: "g", Tasks: [{ Name: "t", Driver: "d" }] }],
          },
        },
        /Constraint 1 validation failed/,
      ],
      [
        {
          Job: {
            ID: "x",
            Namespace: "nope",
            TaskGroups: [{ Name: "g", Tasks: [{ Name: "t", Driver: "d" }] }],
          },
        },
        /^nonexistent namespace "nope"$/,
      ],
      [
        {
          Job: {
            ID: "x",
            TaskGroups: [
              {
                Name: "g",
                MaxClientDisconnect: 1e9,
                StopAfterClientDisconnect: 1e9,
                Tasks: [{ Name: "t", Driver: "d" }],
              },
            ],
          },
        },
        /both max_client_disconnect and stop_after_client_disconnect/,
      ],
    ];
    for (const [body, message] of cases) {
      const res = await s.call("/v1/jobs", "PUT", body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.text).toMatch(message);
    }
    const mismatch = await s.call("/v1/job/other", "PUT", { Job: serviceJob("web", 1) });
    expect(mismatch.status).toBe(400);
    expect(mismatch.text).toBe("Job ID does not match name");
    expect(s.server.log.lastIndex()).toBe(before);
  });

  it("enforces the job modify index, and writes only an evaluation for an unchanged job", async () => {
    const s = await start();
    const first = await s.call("/v1/jobs", "PUT", {
      Job: serviceJob("web", 1),
      EnforceIndex: true,
      JobModifyIndex: 0,
    });
    expect(first.status).toBe(200);
    const index = (first.body as { JobModifyIndex: number }).JobModifyIndex;
    const stale = await s.call("/v1/jobs", "PUT", {
      Job: serviceJob("web", 2),
      EnforceIndex: true,
      JobModifyIndex: index - 1,
    });
    expect(stale.status).toBe(409);
    expect(stale.text).toBe(
      `Enforcing job modify index ${index - 1}: job exists with conflicting job modify index: ${index}`,
    );
    const again = await s.call("/v1/jobs", "PUT", { Job: serviceJob("web", 1) });
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({ JobModifyIndex: index });
    expect(s.job("web")?.Version).toBe(0);
    const changed = await s.call("/v1/jobs", "PUT", {
      Job: serviceJob("web", 2),
      EnforceIndex: true,
      JobModifyIndex: index,
    });
    expect(changed.status).toBe(200);
    expect(s.job("web")?.Version).toBe(1);
    const versions = (await s.call("/v1/job/web/versions")).body as { Versions: { Version: number }[] };
    expect(versions.Versions.map((v) => v.Version)).toEqual([1, 0]);
  });

  it("keeps the running version's task resources with PreserveResources, and only then", async () => {
    const s = await start();
    const withCpu = (cpu: number, group = "g") => ({
      ID: "web",
      TaskGroups: [
        { Name: group, Tasks: [{ Name: "t", Driver: "docker", Resources: { CPU: cpu, MemoryMB: 300 } }] },
      ],
    });
    const cpuOf = () =>
      (s.job("web")?.TaskGroups[0]?.Tasks[0]?.Resources as { CPU: number } | undefined)?.CPU;
    expect((await s.call("/v1/jobs", "PUT", { Job: withCpu(100) })).status).toBe(200);
    expect((await s.call("/v1/jobs", "PUT", { Job: withCpu(50), PreserveResources: true })).status).toBe(200);
    expect(cpuOf()).toBe(100);
    expect((await s.call("/v1/jobs", "PUT", { Job: withCpu(50) })).status).toBe(200);
    expect(cpuOf()).toBe(50);
    // A group the running version does not have takes its resources as submitted.
    expect(
      (await s.call("/v1/jobs", "PUT", { Job: withCpu(70, "other"), PreserveResources: true })).status,
    ).toBe(200);
    expect(cpuOf()).toBe(70);
  });
});

describe("job reads", () => {
  it("lists jobs with summaries, prefix, filter and pages; 404s for a missing job", async () => {
    const s = await start(2);
    for (const id of ["api", "app", "web"])
      await s.register(serviceJob(id, 1, { Update: { MaxParallel: 0 } }));
    await s.idle();
    const all = (await s.call("/v1/jobs")).body as {
      ID: string;
      JobSummary: { Summary: Record<string, { Starting: number }> };
    }[];
    expect(all.map((j) => j.ID)).toEqual(["api", "app", "web"]);
    expect(all[0]!.JobSummary.Summary.web).toMatchObject({ Starting: 1 });
    expect(((await s.call("/v1/jobs?prefix=ap")).body as { ID: string }[]).map((j) => j.ID)).toEqual([
      "api",
      "app",
    ]);
    expect(
      ((await s.call(`/v1/jobs?filter=${encodeURIComponent('ID == "web"')}`)).body as { ID: string }[]).map(
        (j) => j.ID,
      ),
    ).toEqual(["web"]);
    const page = await s.server.call("/v1/jobs?per_page=2");
    expect(((await page.json()) as unknown[]).length).toBe(2);
    expect(page.headers.get("x-nomad-nexttoken")).toBe("default.web");
    const rest = (await s.call("/v1/jobs?per_page=2&next_token=default.web")).body as { ID: string }[];
    expect(rest.map((j) => j.ID)).toEqual(["web"]);
    expect((await s.call("/v1/jobs?per_page=x")).status).toBe(400);
    for (const path of ["/v1/job/nope", "/v1/job/nope/summary", "/v1/job/nope/versions"]) {
      const res = await s.call(path);
      expect(res.status, path).toBe(404);
      expect(res.text).toBe("job not found");
    }
    const allocs = (await s.call("/v1/job/web/allocations")).body as {
      JobID: string;
      ClientStatus: string;
    }[];
    expect(allocs).toHaveLength(1);
    expect(allocs[0]).toMatchObject({ JobID: "web", ClientStatus: "pending" });
    expect((await s.call("/v1/jobs", "DELETE")).status).toBe(405);
  });
});

describe("DELETE /v1/job/:id", () => {
  it("stops a job (a new version, its allocations stopped), then purges it keeping its versions", async () => {
    const s = await start(2);
    await s.register(serviceJob("web", 2, { Update: { MaxParallel: 0 } }));
    await s.idle();
    const stop = await s.call("/v1/job/web", "DELETE");
    expect(stop.status).toBe(200);
    expect(stop.body).toMatchObject({
      EvalCreateIndex: stop.index,
      JobModifyIndex: stop.index,
      VolumeEvalID: "",
    });
    await s.idle();
    expect(s.job("web")).toMatchObject({ Stop: true, Version: 1 });
    expect(s.allocs("web").every((a) => a.DesiredStatus === "stop")).toBe(true);
    const deregisterEval = s.evals("web").find((e) => e.TriggeredBy === "job-deregister")!;
    expect(deregisterEval).toMatchObject({ Type: "service", Status: "complete", JobModifyIndex: stop.index });
    await s.report(s.allocs("web"), "complete");
    expect(s.job("web")?.Status).toBe("dead");

    const purge = await s.call("/v1/job/web?purge=true", "DELETE");
    expect(purge.status).toBe(200);
    await s.idle();
    expect(s.job("web")).toBeUndefined();
    expect((await s.call("/v1/job/web")).status).toBe(404);
    expect(s.server.store.table("job_versions").size).toBe(2);
    // As Nomad: deregistering a job that is gone answers 200 with no evaluation.
    expect((await s.call("/v1/job/web", "DELETE")).body).toMatchObject({ EvalID: "", Index: 0 });
    expect((await s.call("/v1/job/web?purge=maybe", "DELETE")).status).toBe(400);
  });
});

describe("PUT /v1/job/:id/plan", () => {
  it("answers what the scheduler would do, and writes nothing", async () => {
    const s = await start(3);
    await s.register(serviceJob("web", 2, { Update: { MaxParallel: 0 } }));
    await s.idle();
    const before = s.server.log.lastIndex();
    const scaled = await s.call("/v1/job/web/plan", "PUT", {
      Job: serviceJob("web", 3, { Update: { MaxParallel: 0 } }),
      Diff: true,
    });
    expect(scaled.status, scaled.text).toBe(200);
    expect(scaled.body).toMatchObject({
      // A count change leaves the tasks alone: the two running allocations move to the new version in place.
      Annotations: { DesiredTGUpdates: { web: { Place: 1, InPlaceUpdate: 2, Ignore: 0, Stop: 0 } } },
      FailedTGAllocs: null,
      Diff: { Type: "Edited", TaskGroups: [{ Name: "web", Updates: { create: 1, "in-place update": 2 } }] },
    });
    const huge = serviceJob("web", 1, { Update: { MaxParallel: 0 } });
    huge.TaskGroups[0]!.Tasks[0]!.Resources = { CPU: 100_000, MemoryMB: 256 };
    const failing = await s.call("/v1/job/web/plan", "PUT", { Job: huge });
    expect(failing.status).toBe(200);
    expect(failing.body).toMatchObject({
      FailedTGAllocs: { web: { NodesExhausted: 3, DimensionExhausted: { cpu: 3 } } },
    });
    expect(s.server.log.lastIndex()).toBe(before);
  });
});

describe("/v1/deployments", () => {
  it("lists and reads the deployments the scheduler creates", async () => {
    const s = await start(2);
    await s.register(serviceJob("web", 2));
    await s.idle();
    const list = (await s.call("/v1/deployments")).body as { ID: string; JobID: string; Status: string }[];
    expect(list).toHaveLength(1);
    expect(list[0]).toMatchObject({
      JobID: "web",
      Status: "running",
      StatusDescription: "Deployment is running",
    });
    const one = await s.call(`/v1/deployment/${list[0]!.ID}`);
    expect(one.body).toMatchObject({
      ID: list[0]!.ID,
      TaskGroups: { web: { DesiredTotal: 2, PlacedAllocs: 2 } },
    });
    expect((await s.call("/v1/deployment/00000000-0000-0000-0000-000000000000")).status).toBe(404);
    const allocs = (await s.call(`/v1/deployment/allocations/${list[0]!.ID}`)).body as unknown[];
    expect(allocs).toHaveLength(2);
  });
});
