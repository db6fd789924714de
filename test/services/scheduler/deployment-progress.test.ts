import { afterEach, describe, expect, it } from "vitest";
import type { DeploymentRow } from "../../../projections/deployments.ts";
import { goTime } from "../../../projections/go-time.ts";
import { Scenario, serviceJob } from "./scenario.ts";

const scenarios: Scenario[] = [];
afterEach(async () => {
  for (const s of scenarios.splice(0)) await s.stop();
});

const MINUTE_NS = 60_000_000_000;

describe("deployment progress deadline", () => {
  it("starts at the first placement and moves with each allocation that turns healthy", async () => {
    const s = await Scenario.start();
    scenarios.push(s);
    await s.addNode();
    await s.register(serviceJob("web", 2));
    await s.idle();
    // A new version (a changed task) rolls out under a deployment with a 2m progress deadline.
    await s.register(
      serviceJob(
        "web",
        2,
        {},
        {
          Update: { MaxParallel: 2, HealthyDeadline: MINUTE_NS, ProgressDeadline: 2 * MINUTE_NS },
          Tasks: [
            {
              Name: "server",
              Driver: "docker",
              Config: { image: "nginx:2" },
              Resources: { CPU: 500, MemoryMB: 256 },
            },
          ],
        },
      ),
    );
    await s.idle();
    const deployments = (await s.call("/v1/job/web/deployments")).body as DeploymentRow[];
    const latest = deployments.sort((a, b) => b.CreateIndex - a.CreateIndex)[0]!;
    const state = latest.TaskGroups.web!;
    expect(state.ProgressDeadline).toBe(2 * MINUTE_NS);
    const placed = s.live("web").filter((a) => a.DeploymentID === latest.ID);
    expect(placed.length).toBeGreaterThan(0);
    const firstModify = Math.min(...placed.map((a) => a.ModifyTime));
    expect(state.RequireProgressBy).toBe(goTime((firstModify + 2 * MINUTE_NS) / 1e6));

    // Healthy much later than the placement: the deadline moves to that time plus 2m.
    const healthyAt = "2099-01-01T00:00:00Z";
    await s.report(placed, "running", { DeploymentStatus: { Healthy: true, Timestamp: healthyAt } });
    const after = (await s.call(`/v1/deployment/${latest.ID}`)).body as DeploymentRow;
    expect(after.TaskGroups.web!.RequireProgressBy).toBe("2099-01-01T00:02:00Z");
  });
});
