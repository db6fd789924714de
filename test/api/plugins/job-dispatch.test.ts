import { afterEach, describe, expect, it } from "vitest";
import type { JobRow } from "../../../projections/jobs.ts";
import { snappyDecode } from "../../../src/jobs/snappy.ts";
import {
  childrenOf,
  childrenSummary,
  parameterizedJob,
  periodicJob,
} from "../../services/periodic-fixtures.ts";
import { Scenario, serviceJob } from "../../services/scheduler/scenario.ts";

const scenarios: Scenario[] = [];
async function start(): Promise<Scenario> {
  const s = await Scenario.start();
  scenarios.push(s);
  return s;
}
afterEach(async () => {
  for (const s of scenarios.splice(0)) await s.stop();
});

interface DispatchAnswer {
  DispatchedJobID: string;
  EvalID: string;
  EvalCreateIndex: number;
  JobCreateIndex: number;
  Index: number;
}

const b64 = (text: string) => Buffer.from(text).toString("base64");

/** A request that must be refused with `status` and a message containing `words`, appending nothing. */
async function refused(
  s: Scenario,
  path: string,
  body: unknown,
  status: number,
  words: string,
): Promise<void> {
  await s.idle();
  const before = s.server.log.lastIndex();
  const res = await s.call(path, "PUT", body);
  expect(res.status, res.text).toBe(status);
  expect(res.text).toContain(words);
  expect(s.server.log.lastIndex()).toBe(before);
}

describe("PUT /v1/job/:id/dispatch (Nomad's Job.Dispatch)", () => {
  it("dispatches 100 children, each with its meta merged over the parent's, its payload, and its evaluation", async () => {
    const s = await start();
    const registered = await s.register(parameterizedJob("etl"));
    expect(registered.EvalID).toBe("");
    expect(s.evals("etl")).toHaveLength(0);

    const answers: DispatchAnswer[] = [];
    for (let i = 0; i < 100; i++) {
      const res = await s.call("/v1/job/etl/dispatch", "PUT", {
        Meta: { customer: `c${i}`, ...(i % 2 === 0 ? { region: "eu" } : {}) },
        Payload: b64(`payload ${i}`),
      });
      expect(res.status, res.text).toBe(200);
      const a = res.body as DispatchAnswer;
      expect(res.index).toBe(a.Index);
      expect(a.JobCreateIndex).toBe(a.Index);
      expect(a.EvalCreateIndex).toBe(a.Index);
      expect(a.DispatchedJobID).toMatch(/^etl\/dispatch-\d+-[0-9a-f]{8}$/);
      answers.push(a);
    }
    await s.idle();
    const children = childrenOf(s.server, "etl");
    expect(children).toHaveLength(100);
    expect(new Set(children.map((c) => c.ID)).size).toBe(100);
    for (const [i, a] of answers.entries()) {
      const res = await s.call(`/v1/job/${encodeURIComponent(a.DispatchedJobID)}`);
      expect(res.status).toBe(200);
      const child = res.body as JobRow & { Payload: string };
      expect(child).toMatchObject({
        ID: a.DispatchedJobID,
        Name: a.DispatchedJobID,
        ParentID: "etl",
        Dispatched: true,
        Meta: { team: "data", customer: `c${i}`, ...(i % 2 === 0 ? { region: "eu" } : {}) },
      });
      expect(snappyDecode(Buffer.from(child.Payload, "base64"))!.toString()).toBe(`payload ${i}`);
      // Its evaluation (with no node to place on, the scheduler adds a blocked one after it).
      expect(s.evals(a.DispatchedJobID)[0]).toMatchObject({ ID: a.EvalID, TriggeredBy: "job-register" });
    }
    // Read by a client that does not escape the slash (python-nomad), as Nomad routes it.
    const unescaped = await s.call(`/v1/job/${answers[0]!.DispatchedJobID}/summary`);
    expect(unescaped.status, unescaped.text).toBe(200);
    expect(unescaped.body).toMatchObject({ JobID: answers[0]!.DispatchedJobID });
    const counts = childrenSummary(s.server, "etl")!;
    expect(counts.Pending + counts.Running + counts.Dead).toBe(100);
    // Listed as Nomad lists them: the parent parameterized, the children not.
    const list = (await s.call("/v1/jobs?prefix=etl")).body as Record<string, unknown>[];
    const parent = list.find((j) => j.ID === "etl")!;
    expect(parent).toMatchObject({ ParameterizedJob: true, Periodic: false, ParentID: "" });
    expect(parent.JobSummary).toMatchObject({ Children: counts });
    const stub = list.find((j) => j.ID === answers[0]!.DispatchedJobID)!;
    expect(stub).toMatchObject({ ParameterizedJob: false, Periodic: false, ParentID: "etl" });
  });

  it("answers the live child of an idempotency token instead of dispatching again", async () => {
    const s = await start();
    await s.register(parameterizedJob("etl"));
    const first = await s.call("/v1/job/etl/dispatch?idempotency_token=once", "PUT", {
      Meta: { customer: "a" },
    });
    expect(first.status, first.text).toBe(200);
    await s.idle();
    const before = s.server.log.lastIndex();
    const again = await s.call("/v1/job/etl/dispatch", "PUT", {
      Meta: { customer: "a" },
      IdempotencyToken: "once",
    });
    expect(again.status, again.text).toBe(200);
    const a = first.body as DispatchAnswer;
    expect(again.body).toMatchObject({
      DispatchedJobID: a.DispatchedJobID,
      JobCreateIndex: a.JobCreateIndex,
      EvalID: "",
    });
    expect(s.server.log.lastIndex()).toBe(before);
    const other = await s.call("/v1/job/etl/dispatch?idempotency_token=twice", "PUT", {
      Meta: { customer: "a" },
    });
    expect((other.body as DispatchAnswer).DispatchedJobID).not.toBe(a.DispatchedJobID);
    expect(childrenOf(s.server, "etl")).toHaveLength(2);
  });

  it("refuses, with Nomad's words and nothing appended, what Job.Dispatch refuses", async () => {
    const s = await start();
    await s.register(parameterizedJob("opt"));
    await s.register(parameterizedJob("req", { Payload: "required" }));
    await s.register(parameterizedJob("none", { Payload: "forbidden" }));
    await s.register(parameterizedJob("stopped"));
    expect((await s.call("/v1/job/stopped", "DELETE")).status).toBe(200);
    await s.register(serviceJob("web", 0));
    const meta = { Meta: { customer: "a" } };

    await refused(s, "/v1/job/missing/dispatch", meta, 404, "parameterized job not found");
    await refused(s, "/v1/job/web/dispatch", meta, 400, 'Specified job "web" is not a parameterized job');
    await refused(s, "/v1/job/stopped/dispatch", meta, 400, 'Specified job "stopped" is stopped');
    await refused(
      s,
      "/v1/job/req/dispatch",
      meta,
      400,
      "Payload is not provided but required by parameterized job",
    );
    await refused(
      s,
      "/v1/job/none/dispatch",
      { ...meta, Payload: b64("x") },
      400,
      "Payload provided but forbidden by parameterized job",
    );
    await refused(
      s,
      "/v1/job/opt/dispatch",
      { ...meta, Payload: Buffer.alloc(16 * 1024 + 1, 1).toString("base64") },
      400,
      "Payload exceeds maximum size; 16385 > 16384",
    );
    await refused(
      s,
      "/v1/job/opt/dispatch",
      { Meta: { region: "eu" } },
      400,
      "Dispatch did not provide required meta keys: [customer]",
    );
    await refused(
      s,
      "/v1/job/opt/dispatch",
      { Meta: { customer: "a", zone: "z", colour: "red" } },
      400,
      "Dispatch request included unpermitted metadata keys: [colour zone]",
    );
    await refused(s, "/v1/job/opt/dispatch", { ...meta, Payload: "not base64!" }, 400, "Payload");
    // At the limit is fine.
    const atLimit = await s.call("/v1/job/opt/dispatch", "PUT", {
      ...meta,
      Payload: Buffer.alloc(16 * 1024, 1).toString("base64"),
    });
    expect(atLimit.status, atLimit.text).toBe(200);
  });

  it("validates the parameterized block at registration", async () => {
    const s = await start();
    const bad = await s.call("/v1/jobs", "PUT", {
      Job: parameterizedJob("bad", { Payload: "sometimes", MetaOptional: ["customer"] }),
    });
    expect(bad.status).toBe(400);
    expect(bad.text).toContain('Unknown payload requirement: "sometimes"');
    expect(bad.text).toContain("Required and optional meta keys should be disjoint");
    const service = await s.call("/v1/jobs", "PUT", { Job: { ...parameterizedJob("svc"), Type: "service" } });
    expect(service.text).toContain('Parameterized job can only be used with "batch" or "sysbatch" scheduler');
  });
});

describe("PUT /v1/job/:id/periodic/force (Nomad's Periodic.Force)", () => {
  it("launches a child now, with its periodic-job evaluation", async () => {
    const s = await start();
    await s.register(periodicJob("report", { Spec: "0 0 1 1 *" }));
    // A launch must come after the registration, which is recorded as the first launch.
    s.clock.advance(1_000);
    const res = await s.call("/v1/job/report/periodic/force", "POST");
    expect(res.status, res.text).toBe(200);
    const body = res.body as { EvalID: string; EvalCreateIndex: number; Index: number };
    expect(body.EvalCreateIndex).toBe(body.Index);
    expect(res.index).toBe(body.Index);
    const [child] = childrenOf(s.server, "report");
    expect(child!.ID).toBe(`report/periodic-${Math.floor(s.clock.now() / 1000)}`);
    expect(s.evals(child!.ID)[0]).toMatchObject({ ID: body.EvalID, TriggeredBy: "periodic-job" });
    await s.idle();
    // The same second again: that child exists, nothing is written.
    await refused(s, "/v1/job/report/periodic/force", undefined, 409, "force launch");
  });

  it("refuses a job that is missing, not periodic, or disabled, appending nothing", async () => {
    const s = await start();
    await s.register(serviceJob("web", 0));
    await s.register(periodicJob("off", { Enabled: false }));
    await refused(s, "/v1/job/missing/periodic/force", undefined, 404, "job not found");
    await refused(s, "/v1/job/web/periodic/force", undefined, 400, "can't force launch non-periodic job");
    await refused(s, "/v1/job/off/periodic/force", undefined, 400, "can't force run non-tracked job off");
  });

  it("validates the periodic block at registration", async () => {
    const s = await start();
    const res = await s.call("/v1/jobs", "PUT", {
      Job: periodicJob("bad", { Spec: "not a cron", TimeZone: "Mars/Olympus" }),
    });
    expect(res.status).toBe(400);
    expect(res.text).toContain('Invalid cron spec "not a cron"');
    expect(res.text).toContain('Invalid time zone "Mars/Olympus"');
  });
});
