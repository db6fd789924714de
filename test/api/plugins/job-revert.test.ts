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

const HEALTHY = { DeploymentStatus: { Healthy: true, Timestamp: "2025-11-22T08:00:00Z" } };

interface Version {
  Version: number;
  Stable: boolean;
  Meta: Record<string, string> | null;
}

const versions = async (s: Scenario, id = "web") =>
  ((await s.call(`/v1/job/${id}/versions`)).body as { Versions: Version[] }).Versions;

describe("PUT /v1/job/:id/revert", () => {
  it("registers an earlier version's spec again as a new version, with its evaluation", async () => {
    const s = await start();
    await s.register(serviceJob("web", 1, { Type: "batch", Meta: { v: "0" } }));
    await s.register(serviceJob("web", 1, { Type: "batch", Meta: { v: "1" } }));
    const res = await s.call("/v1/job/web/revert", "PUT", {
      JobID: "web",
      JobVersion: 0,
      EnforcePriorVersion: 1,
    });
    expect(res.status, res.text).toBe(200);
    const answer = res.body as Record<string, unknown>;
    expect(answer).toMatchObject({ EvalCreateIndex: res.index, JobModifyIndex: res.index, Index: res.index });
    expect(answer.EvalID).toMatch(/^[0-9a-f-]{36}$/);
    const job = (await s.call("/v1/job/web")).body as Version;
    expect([job.Version, job.Meta]).toEqual([2, { v: "0" }]);
  });

  it("refuses what Nomad refuses, with its text, and writes nothing", async () => {
    const s = await start();
    await s.register(serviceJob("web", 1, { Type: "batch", Meta: { v: "0" } }));
    await s.register(serviceJob("web", 1, { Type: "batch", Meta: { v: "1" } }));
    await s.idle();
    const before = s.server.log.lastIndex();
    const cases: [string, unknown, number, string][] = [
      ["web", { JobVersion: 0 }, 400, "JobID must be specified"],
      ["web", { JobID: "other", JobVersion: 0 }, 400, "Job ID does not match"],
      ["nope", { JobID: "nope", JobVersion: 0 }, 404, 'job "nope" not found'],
      ["web", { JobID: "web", JobVersion: 1 }, 400, "can't revert to current version"],
      [
        "web",
        { JobID: "web", JobVersion: 7 },
        404,
        'job "web" in namespace "default" at version 7 not found',
      ],
      [
        "web",
        { JobID: "web", JobVersion: 0, EnforcePriorVersion: 10 },
        409,
        "Current job has version 1; enforcing version 10",
      ],
    ];
    for (const [id, body, code, text] of cases) {
      const res = await s.call(`/v1/job/${id}/revert`, "PUT", body);
      expect([res.status, res.text], JSON.stringify(body)).toEqual([code, text]);
    }
    expect(s.server.log.lastIndex()).toBe(before);
    expect((await s.call("/v1/job/web/revert")).status).toBe(405);
  });
});

describe("PUT /v1/job/:id/stable", () => {
  it("marks a version stable or not; the current job shows its own version's flag", async () => {
    const s = await start();
    await s.register(serviceJob("web", 1, { Type: "batch", Meta: { v: "0" } }));
    await s.register(serviceJob("web", 1, { Type: "batch", Meta: { v: "1" } }));
    const res = await s.call("/v1/job/web/stable", "PUT", { JobID: "web", JobVersion: 0, Stable: true });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toEqual({ Index: res.index });
    expect((await versions(s)).map((v) => [v.Version, v.Stable])).toEqual([
      [1, false],
      [0, true],
    ]);
    // Marking an older version does not roll the job back to it.
    expect(((await s.call("/v1/job/web")).body as Version).Meta).toEqual({ v: "1" });
    await s.call("/v1/job/web/stable", "POST", { JobID: "web", JobVersion: 1, Stable: true });
    expect(((await s.call("/v1/job/web")).body as Version).Stable).toBe(true);
    await s.call("/v1/job/web/stable", "POST", { JobID: "web", JobVersion: 0, Stable: false });
    expect((await versions(s)).map((v) => v.Stable)).toEqual([true, false]);
    const missing = await s.call("/v1/job/web/stable", "PUT", { JobID: "web", JobVersion: 5, Stable: true });
    expect([missing.status, missing.text]).toEqual([
      404,
      'job "web" in namespace "default" at version 5 not found',
    ]);
  });

  it("comes with a deployment that succeeds", async () => {
    const s = await start(2);
    await s.register(serviceJob("web", 2));
    await s.idle();
    expect((await versions(s))[0]!.Stable).toBe(false);
    await s.report(s.allocs("web"), "running", HEALTHY);
    const deployment = (await s.call("/v1/job/web/deployment")).body as { Status: string };
    expect(deployment.Status).toBe("successful");
    expect((await versions(s))[0]!.Stable).toBe(true);
    expect(((await s.call("/v1/job/web")).body as Version).Stable).toBe(true);
  });
});
