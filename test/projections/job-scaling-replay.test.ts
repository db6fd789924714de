import { afterEach, describe, expect, it } from "vitest";
import { replayStore } from "../replay-store.ts";
import { Scenario, serviceJob } from "../services/scheduler/scenario.ts";

const scenarios: Scenario[] = [];
afterEach(async () => {
  for (const s of scenarios.splice(0)) await s.stop();
});

describe("scaling, stability and submissions on replay", () => {
  it("rebuild identical tables from the log in a fresh store", async () => {
    const s = await Scenario.start();
    scenarios.push(s);
    const job = (v: string) =>
      serviceJob("web", 2, { Type: "batch", Meta: { v } }, { Scaling: { Min: 1, Max: 5, Policy: { a: 1 } } });
    for (const v of ["0", "1"]) {
      const res = await s.call("/v1/jobs", "PUT", {
        Job: job(v),
        Submission: { Source: `v${v}`, Format: "hcl2" },
      });
      expect(res.status, res.text).toBe(200);
    }
    expect((await s.call("/v1/job/web/scale", "PUT", { Count: 3, Target: { Group: "web" } })).status).toBe(
      200,
    );
    expect((await s.call("/v1/job/web/scale", "PUT", { Target: { Group: "web" }, Error: true })).status).toBe(
      200,
    );
    const stable = await s.call("/v1/job/web/stable", "PUT", { JobID: "web", JobVersion: 1, Stable: true });
    expect(stable.status).toBe(200);
    expect((await s.call("/v1/job/web/revert", "PUT", { JobID: "web", JobVersion: 0 })).status).toBe(200);
    await s.idle();
    const tables = s.server.store;
    expect(tables.table("scaling_policies").size).toBe(1);
    expect(tables.table("scaling_events").size).toBe(1);
    expect(tables.table("job_submissions").size).toBe(4);

    const fresh = replayStore(s.server.log);
    await fresh.start();
    await fresh.caughtUp();
    expect(fresh.hash()).toBe(s.server.store.hash());
  });
});
