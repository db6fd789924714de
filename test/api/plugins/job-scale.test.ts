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

const POLICY = { Min: 1, Max: 5, Enabled: true, Policy: {} };

interface ScaleStatus {
  JobID: string;
  Namespace: string;
  JobCreateIndex: number;
  JobModifyIndex: number;
  JobStopped: boolean;
  TaskGroups: Record<
    string,
    {
      Desired: number;
      Placed: number;
      Running: number;
      Healthy: number;
      Unhealthy: number;
      Events: Record<string, unknown>[] | null;
    }
  >;
}

const status = async (s: Scenario, id = "web") => (await s.call(`/v1/job/${id}/scale`)).body as ScaleStatus;

describe("PUT /v1/job/:id/scale", () => {
  it("scales a group within its policy: a new version at the count, a job-scaling evaluation, the event in the scale status", async () => {
    const s = await start();
    // A batch job: no deployment to wait for.
    const reg = await s.register(serviceJob("web", 2, { Type: "batch" }, { Scaling: POLICY }));
    await s.idle();
    const res = await s.call("/v1/job/web/scale", "PUT", {
      Count: 4,
      Target: { Job: "web", Group: "web" },
      Message: "need more instances",
      Meta: { meta: "data" },
    });
    expect(res.status, res.text).toBe(200);
    const answer = res.body as Record<string, unknown>;
    expect(answer).toMatchObject({ EvalCreateIndex: res.index, JobModifyIndex: res.index, Index: res.index });
    expect(answer.JobModifyIndex).toBeGreaterThan(reg.JobModifyIndex);
    const job = (await s.call("/v1/job/web")).body as { Version: number; TaskGroups: { Count: number }[] };
    expect(job.Version).toBe(1);
    expect(job.TaskGroups[0]!.Count).toBe(4);
    const evals = (await s.call("/v1/job/web/evaluations")).body as Record<string, unknown>[];
    expect(evals.find((e) => e.ID === answer.EvalID)).toMatchObject({
      TriggeredBy: "job-scaling",
      JobModifyIndex: res.index,
    });
    const st = await status(s);
    expect(st.TaskGroups.web!.Desired).toBe(4);
    expect(st.TaskGroups.web!.Events).toEqual([
      {
        Time: expect.any(Number),
        Count: 4,
        PreviousCount: 2,
        Message: "need more instances",
        Error: false,
        Meta: { meta: "data" },
        EvalID: answer.EvalID,
        CreateIndex: res.index,
      },
    ]);
    expect(st.TaskGroups.web!.Events![0]!.Time).toBeGreaterThan(0);
    // The job's status counts the scaling evaluation as it counts a register's.
    await s.idle();
    const summary = s.server.store.table("job_summary").get("default\u0000web") as unknown as {
      Activity: { Evals: number };
    };
    expect(summary.Activity.Evals).toBe(s.evals("web").length);
  });

  it("records an event without a count (an error, or for information) and leaves the job alone", async () => {
    const s = await start();
    const reg = await s.register(serviceJob("web", 2, {}, { Scaling: POLICY }));
    for (const [message, error] of [
      ["something bad happened", true],
      ["no count, just informative", false],
    ] as const) {
      const res = await s.call("/v1/job/web/scale", "POST", {
        Target: { Group: "web" },
        Message: message,
        Error: error,
      });
      expect(res.status, res.text).toBe(200);
      expect(res.body).toMatchObject({ EvalID: "", EvalCreateIndex: 0, JobModifyIndex: reg.JobModifyIndex });
    }
    const job = (await s.call("/v1/job/web")).body as { Version: number; TaskGroups: { Count: number }[] };
    expect(job.Version).toBe(0);
    const events = (await status(s)).TaskGroups.web!.Events!;
    // Newest first.
    expect(events.map((e) => [e.Message, e.Error, e.EvalID, e.Count, e.PreviousCount])).toEqual([
      ["no count, just informative", false, null, null, 2],
      ["something bad happened", true, null, null, 2],
    ]);
  });

  it("keeps the newest 20 events of a group", async () => {
    const s = await start();
    await s.register(serviceJob("web", 2));
    for (let i = 0; i < 22; i++) {
      const res = await s.call("/v1/job/web/scale", "PUT", { Target: { Group: "web" }, Message: `m${i}` });
      expect(res.status, res.text).toBe(200);
    }
    const events = (await status(s)).TaskGroups.web!.Events!;
    expect(events).toHaveLength(20);
    expect(events[0]!.Message).toBe("m21");
    expect(events[19]!.Message).toBe("m2");
  });

  it("refuses bad actions with Nomad's status and text, and writes nothing", async () => {
    const s = await start();
    await s.register(serviceJob("web", 2, {}, { Scaling: POLICY }));
    await s.register({ ...serviceJob("sys", 1), Type: "system" });
    await s.idle();
    const before = s.server.log.lastIndex();
    const cases: [string, unknown, number, string][] = [
      [
        "web",
        { Count: 2, Target: { Job: "other", Group: "web" } },
        400,
        "job ID in payload did not match URL",
      ],
      ["web", { Count: 2, Target: {} }, 400, "missing task group name for scaling action"],
      ["web", { Count: -1, Target: { Group: "web" } }, 400, "scaling action count can't be negative"],
      [
        "web",
        { Count: 2, Error: true, Target: { Group: "web" } },
        400,
        "scaling action should not contain count if error is true",
      ],
      [
        "web",
        { Count: 2, Target: { Group: "web", Namespace: "other" } },
        400,
        "namespace in payload did not match header",
      ],
      ["nope", { Count: 2, Target: { Group: "web" } }, 404, 'job "nope" not found'],
      [
        "web",
        { Count: 2, Target: { Group: "db" } },
        400,
        'task group "db" specified for scaling does not exist in job',
      ],
      [
        "web",
        { Count: 0, Target: { Group: "web" } },
        400,
        "group count was less than scaling policy minimum: 0 < 1",
      ],
      [
        "web",
        { Count: 6, Target: { Group: "web" } },
        400,
        "group count was greater than scaling policy maximum: 6 > 5",
      ],
      ["sys", { Count: 2, Target: { Group: "web" } }, 400, 'cannot scale jobs of type "system"'],
      ["web", { Count: 1.5, Target: { Group: "web" } }, 400, "body.Count must be integer,null"],
      ["", { Count: 1, Target: { Group: "web" } }, 400, "missing job ID for scaling action"],
    ];
    for (const [id, body, code, text] of cases) {
      const res = await s.call(`/v1/job/${id}/scale`, "PUT", body);
      expect([res.status, res.text], JSON.stringify(body)).toEqual([code, text]);
    }
    expect(s.server.log.lastIndex()).toBe(before);
    expect((await s.call("/v1/job/web/scale", "DELETE")).status).toBe(405);
  });

  it("is blocked while the job's deployment is running", async () => {
    const s = await start(2);
    await s.register(serviceJob("web", 2));
    await s.idle();
    const res = await s.call("/v1/job/web/scale", "PUT", { Count: 3, Target: { Group: "web" } });
    expect([res.status, res.text]).toEqual([400, "job scaling blocked due to active deployment"]);
    // Without a count it is only a record, and goes through.
    const note = await s.call("/v1/job/web/scale", "PUT", { Target: { Group: "web" }, Message: "waiting" });
    expect(note.status).toBe(200);
  });
});

describe("GET /v1/job/:id/scale", () => {
  it("counts the current allocations of each group: placed, running, healthy, unhealthy", async () => {
    const s = await start(3);
    await s.register(serviceJob("web", 3, { Type: "batch" }));
    await s.idle();
    const allocs = s.allocs("web");
    expect(allocs).toHaveLength(3);
    await s.report(allocs.slice(0, 2), "running");
    const st = await status(s);
    expect(st).toMatchObject({ JobID: "web", Namespace: "default", JobStopped: false });
    expect(st.TaskGroups.web).toEqual({
      Desired: 3,
      Placed: 3,
      Running: 2,
      Healthy: 0,
      Unhealthy: 0,
      Events: null,
    });
    await s.report(allocs.slice(0, 1), "complete");
    expect((await status(s)).TaskGroups.web).toMatchObject({ Placed: 2, Running: 1 });
  });

  it("answers 404 for a job that does not exist", async () => {
    const s = await start();
    const res = await s.call("/v1/job/nope/scale");
    expect([res.status, res.text]).toEqual([404, "job not found"]);
  });

  it("wakes a blocking read when a scaling event is recorded", async () => {
    const s = await start();
    await s.register(serviceJob("web", 1));
    const first = await s.call("/v1/job/web/scale");
    const waiting = s.call(`/v1/job/web/scale?index=${first.index}&wait=20s`);
    const res = await s.call("/v1/job/web/scale", "PUT", { Target: { Group: "web" }, Message: "hello" });
    const woken = await waiting;
    expect(woken.index).toBe(res.index);
    expect((woken.body as ScaleStatus).TaskGroups.web!.Events).toHaveLength(1);
  });
});
