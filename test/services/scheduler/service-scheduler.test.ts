import { afterEach, describe, expect, it } from "vitest";
import { Scenario, serviceJob } from "./scenario.ts";

const scenarios: Scenario[] = [];
async function start() {
  const s = await Scenario.start();
  scenarios.push(s);
  return s;
}
afterEach(async () => {
  for (const s of scenarios.splice(0)) await s.stop();
});

describe("service scheduler", () => {
  it("places a count-3 service job on 3 nodes, one each, and they run", async () => {
    const s = await start();
    for (let i = 0; i < 3; i++) await s.addNode();
    const reg = await s.register(serviceJob("web", 3));
    expect(reg.EvalID).toMatch(/^[0-9a-f-]{36}$/);
    await s.idle();
    const allocs = s.allocs("web");
    expect(allocs).toHaveLength(3);
    expect(new Set(allocs.map((a) => a.NodeID)).size).toBe(3);
    expect(allocs.map((a) => a.Name).sort()).toEqual(["web.web[0]", "web.web[1]", "web.web[2]"]);
    expect(s.evals("web").map((e) => [e.TriggeredBy, e.Status])).toEqual([["job-register", "complete"]]);
    await s.report(allocs, "running");
    expect(s.live("web").map((a) => a.ClientStatus)).toEqual(["running", "running", "running"]);
    expect(s.job("web")?.Status).toBe("running");
  });
});

describe("deployments", () => {
  const HEALTHY = { DeploymentStatus: { Healthy: true, Timestamp: "2025-11-22T08:00:00Z" } };

  it("rolls a destructive update one allocation at a time, as allocations report healthy, then succeeds", async () => {
    const s = await start();
    for (let i = 0; i < 3; i++) await s.addNode();
    await s.register(serviceJob("web", 3));
    await s.idle();
    const first = (await s.call("/v1/job/web/deployment")).body as {
      ID: string;
      Status: string;
      TaskGroups: Record<string, { DesiredTotal: number; PlacedAllocs: number }>;
    };
    expect(first.TaskGroups.web).toMatchObject({ DesiredTotal: 3, PlacedAllocs: 3 });
    await s.report(s.allocs("web"), "running", HEALTHY);
    expect(((await s.call(`/v1/deployment/${first.ID}`)).body as { Status: string }).Status).toBe(
      "successful",
    );

    const update = serviceJob("web", 3);
    update.TaskGroups[0]!.Tasks[0]!.Config = { image: "nginx:2" };
    await s.register(update);
    await s.idle();
    const newVersion = () => s.live("web").filter((a) => a.Job?.Version === 1);
    for (let step = 1; step <= 3; step++) {
      expect(newVersion()).toHaveLength(step);
      expect(s.live("web")).toHaveLength(3);
      const pending = newVersion().filter((a) => a.ClientStatus === "pending");
      expect(pending).toHaveLength(1);
      await s.report(pending, "running", HEALTHY);
    }
    const second = (await s.call("/v1/job/web/deployment")).body as {
      ID: string;
      Status: string;
      JobVersion: number;
    };
    expect(second).toMatchObject({ JobVersion: 1, Status: "successful" });
    expect(s.allocs("web")).toHaveLength(6);
  });
});

describe("updates", () => {
  it("moves allocations to a new version in place when the tasks did not change, and scales down from the highest index", async () => {
    const s = await start();
    for (let i = 0; i < 3; i++) await s.addNode();
    await s.register(serviceJob("web", 3, { Update: { MaxParallel: 0 } }));
    await s.idle();
    await s.report(s.allocs("web"), "running");
    const before = s.allocs("web");
    // A restart policy change reaches no task: Nomad updates in place.
    await s.register(
      serviceJob(
        "web",
        2,
        { Update: { MaxParallel: 0 } },
        { RestartPolicy: { Attempts: 5, Interval: 3_600e9, Delay: 15e9, Mode: "fail" } },
      ),
    );
    await s.idle();
    const after = s.allocs("web");
    expect(after.map((a) => a.ID)).toEqual(before.map((a) => a.ID));
    const live = s.live("web");
    expect(live.map((a) => a.Name).sort()).toEqual(["web.web[0]", "web.web[1]"]);
    expect(live.every((a) => a.Job?.Version === 1 && a.ClientStatus === "running")).toBe(true);
    const stopped = after.find((a) => a.Name === "web.web[2]")!;
    expect(stopped).toMatchObject({
      DesiredStatus: "stop",
      DesiredDescription: "alloc not needed due to job update",
    });
  });
});
