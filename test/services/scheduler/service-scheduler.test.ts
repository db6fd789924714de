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
