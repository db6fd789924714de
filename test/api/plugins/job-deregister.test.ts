import { afterEach, describe, expect, it } from "vitest";
import { Scenario, serviceJob } from "../../services/scheduler/scenario.ts";

const scenarios: Scenario[] = [];
async function start() {
  const s = await Scenario.start();
  scenarios.push(s);
  return s;
}
afterEach(async () => {
  for (const s of scenarios.splice(0)) await s.stop();
});

describe("DELETE /v1/job/:id, as Nomad reads it", () => {
  it("answers 200 with an empty EvalID for a job that does not exist, and writes nothing", async () => {
    const s = await start();
    const before = s.server.log.lastIndex();
    const res = await s.call("/v1/job/nope?purge=true&eval_priority=0", "DELETE");
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({
      EvalID: "",
      EvalCreateIndex: 0,
      JobModifyIndex: 0,
      VolumeEvalID: "",
      VolumeEvalIndex: 0,
      Index: 0,
    });
    expect(res.index).toBe(0);
    expect(s.server.log.lastIndex()).toBe(before);
  });

  it("takes eval_priority=0 (what `nomad job stop` always sends) as no override", async () => {
    const s = await start();
    await s.register(serviceJob("web", 1, { Priority: 70 }));
    const res = await s.call("/v1/job/web?eval_priority=0&global=false&no_shutdown_delay=false", "DELETE");
    expect(res.status, res.text).toBe(200);
    const evaluation = s.evals("web").find((e) => e.ID === (res.body as { EvalID: string }).EvalID);
    expect(evaluation).toMatchObject({ TriggeredBy: "job-deregister", Priority: 70 });
  });

  it("uses an eval_priority in range, and refuses a bad one in Nomad's words, writing nothing", async () => {
    const s = await start();
    await s.register(serviceJob("web", 1));
    await s.idle();
    const before = s.server.log.lastIndex();
    const bad = [
      ["101", "Eval priority must be between 1 and 100 inclusively"],
      [
        "high",
        'Failed to parse value of "eval_priority" (high) as a int: strconv.Atoi: parsing "high": invalid syntax',
      ],
      [
        "1.5",
        'Failed to parse value of "eval_priority" (1.5) as a int: strconv.Atoi: parsing "1.5": invalid syntax',
      ],
    ];
    for (const [value, message] of bad) {
      const res = await s.call(`/v1/job/web?eval_priority=${value}`, "DELETE");
      expect(res.status, value).toBe(400);
      expect(res.text).toBe(message);
    }
    expect(s.server.log.lastIndex()).toBe(before);
    const res = await s.call("/v1/job/web?eval_priority=90", "DELETE");
    const evaluation = s.evals("web").find((e) => e.ID === (res.body as { EvalID: string }).EvalID);
    expect(evaluation?.Priority).toBe(90);
  });

  it("reads purge as Go's ParseBool (purge=True purges) and names a bad value", async () => {
    const s = await start();
    await s.register(serviceJob("web", 1));
    const bad = await s.call("/v1/job/web?purge=yes", "DELETE");
    expect(bad.status).toBe(400);
    expect(bad.text).toBe(
      'Failed to parse value of "purge" (yes) as a bool: strconv.ParseBool: parsing "yes": invalid syntax',
    );
    expect((await s.call("/v1/job/web?global=maybe", "DELETE")).text).toMatch(
      /^Failed to parse value of "global"/,
    );
    const purge = await s.call("/v1/job/web?purge=True", "DELETE");
    expect(purge.status, purge.text).toBe(200);
    await s.idle();
    expect(s.job("web")).toBeUndefined();
  });
});

describe("PUT /v1/jobs EvalPriority", () => {
  it("takes 0 as the job's own priority and refuses one out of range in Nomad's words", async () => {
    const s = await start();
    const job = serviceJob("web", 1, { Priority: 60 });
    const ok = await s.call("/v1/jobs", "PUT", { Job: job, EvalPriority: 0 });
    expect(ok.status, ok.text).toBe(200);
    const evaluation = s.evals("web").find((e) => e.ID === (ok.body as { EvalID: string }).EvalID);
    expect(evaluation?.Priority).toBe(60);
    const bad = await s.call("/v1/jobs", "PUT", { Job: job, EvalPriority: 101 });
    expect(bad.status).toBe(400);
    expect(bad.text).toBe("Eval priority must be between 1 and 100 inclusively");
  });
});
