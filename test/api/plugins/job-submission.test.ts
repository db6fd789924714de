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

const batch = (v: string, extra: Record<string, unknown> = {}) =>
  serviceJob("web", 1, { Type: "batch", Meta: { v }, ...extra });

const submit = async (s: Scenario, job: unknown, submission: unknown, query = "") => {
  const res = await s.call(`/v1/jobs${query}`, "PUT", { Job: job, Submission: submission });
  expect(res.status, res.text).toBe(200);
  return res.body as { JobModifyIndex: number; Warnings: string };
};

const source = (s: Scenario, version: number, query = "") =>
  s.call(`/v1/job/web/submission?version=${version}${query}`);

describe("GET /v1/job/:id/submission", () => {
  it("answers each version's source as submitted, indexed by its register", async () => {
    const s = await start();
    expect([(await source(s, 0)).status, (await source(s, 0)).text]).toEqual([404, "job source not found"]);
    const v0 = await submit(s, batch("0"), {
      Source: "the job source v0",
      Format: "hcl2",
      VariableFlags: { X: "x", Y: "42" },
      Variables: "var file content",
    });
    await submit(s, batch("1"), { Source: "the job source v1", Format: "hcl2", Variables: "different" });
    const first = await source(s, 0);
    expect(first.status).toBe(200);
    expect(first.index).toBe(v0.JobModifyIndex);
    expect(first.body).toEqual({
      Source: "the job source v0",
      Format: "hcl2",
      VariableFlags: { X: "x", Y: "42" },
      Variables: "var file content",
      Namespace: "default",
      JobID: "web",
      Version: 0,
      JobModifyIndex: v0.JobModifyIndex,
    });
    expect((await source(s, 1)).body).toMatchObject({ Source: "the job source v1", VariableFlags: null });
    // A version registered without one has none.
    await submit(s, batch("2"), undefined);
    expect((await source(s, 2)).status).toBe(404);
    // Purged with the job.
    expect((await s.call("/v1/job/web?purge=true", "DELETE")).status).toBe(200);
    expect((await source(s, 0)).status).toBe(404);
    expect((await source(s, 1)).status).toBe(404);
  });

  it("is kept per namespace", async () => {
    const s = await start();
    expect((await s.call("/v1/namespace/first", "PUT", { Name: "first" })).status).toBe(200);
    await submit(s, batch("0"), { Source: "in first", Format: "hcl2" }, "?namespace=first");
    expect((await source(s, 0)).status).toBe(404);
    expect(((await source(s, 0, "&namespace=first")).body as { Source: string }).Source).toBe("in first");
  });

  it("follows the job: a scaling action's version keeps the source, a revert brings back the old one", async () => {
    const s = await start();
    await submit(s, batch("0"), { Source: "v0", Format: "hcl2" });
    await submit(s, batch("1"), { Source: "v1", Format: "hcl2" });
    expect((await s.call("/v1/job/web/scale", "PUT", { Count: 2, Target: { Group: "web" } })).status).toBe(
      200,
    );
    expect(((await source(s, 2)).body as { Source: string }).Source).toBe("v1");
    expect((await s.call("/v1/job/web/revert", "PUT", { JobID: "web", JobVersion: 0 })).status).toBe(200);
    expect(((await source(s, 3)).body as { Source: string }).Source).toBe("v0");
  });

  it("keeps the newest six of a job", async () => {
    const s = await start();
    for (let v = 0; v < 8; v++) await submit(s, batch(String(v)), { Source: `v${v}`, Format: "hcl2" });
    expect((await source(s, 1)).status).toBe(404);
    expect((await source(s, 2)).status).toBe(200);
    expect((await source(s, 7)).status).toBe(200);
  });

  it("discards a source over Nomad's size limit with its warning, and registers the job", async () => {
    const s = await start();
    const answer = await submit(s, batch("0"), { Source: "x".repeat(1_000_001), Format: "hcl2" });
    expect(answer.Warnings).toBe(
      "1 warning:\n\n* job source size of 1.0 MB exceeds maximum of 1.0 MB and will be discarded",
    );
    expect((await s.call("/v1/job/web")).status).toBe(200);
    expect((await source(s, 0)).status).toBe(404);
  });

  it("refuses a version that is not a number, and a submission of the wrong shape", async () => {
    const s = await start();
    for (const q of ["", "?version=", "?version=x", "?version=-1"]) {
      const res = await s.call(`/v1/job/web/submission${q}`);
      expect([res.status, res.text]).toEqual([400, "Unable to parse job submission version parameter"]);
    }
    const bad = await s.call("/v1/jobs", "PUT", { Job: batch("0"), Submission: { Source: 5 } });
    expect([bad.status, bad.text]).toEqual([400, "body.Submission.Source must be string"]);
  });
});
