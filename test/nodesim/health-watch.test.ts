import { afterEach, describe, expect, it } from "vitest";
import type { AllocRow } from "../../projections/allocs.ts";
import type { DeploymentRow } from "../../projections/deployments.ts";
import { type NodeSimOptions, NodeSimulator } from "../../src/nodesim/simulator.ts";
import { startTestServer, type TestServer } from "../server-harness.ts";
import { allocsTable, eventually, nodesTable } from "./fixtures.ts";

/**
 * The simulated clients' health watcher (Nomad's health_hook.go) against a
 * real server and scheduler: deployments after in-place updates, and
 * drains whose migrations wait on the replacements' health.
 */

const FAST_DRIVER: NodeSimOptions["driver"] = {
  setup: { min: 5, max: 20 },
  pull: { min: 10, max: 50 },
  start: { min: 20, max: 100 },
  kill: { min: 10, max: 50 },
  failureRate: 0,
  eventInterval: 0,
};
const MS = 1e6;
/** A stall shows as a failed wait naming what did not happen, well within the test timeout. */
const WAIT_MS = 25_000;

const cleanup: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanup.splice(0).reverse()) await c();
});

async function setup(nodes: number) {
  const s = await startTestServer();
  cleanup.push(() => s.stop());
  const sim = new NodeSimulator({
    server: s.url,
    nodes,
    seed: "health-watch-test",
    initialHeartbeatStaggerMs: 500,
    driver: FAST_DRIVER,
  });
  cleanup.push(() => sim.stop());
  await sim.start();
  await eventually(
    "every node ready",
    () => nodesTable(s).size === nodes && [...nodesTable(s).all()].every((n) => n.Status === "ready"),
  );
  return { s, sim };
}

async function call(s: TestServer, path: string, method: string, body?: unknown) {
  const res = await s.call(path, {
    method,
    headers: { "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  expect(res.status, `${method} ${path}: ${text}`).toBe(200);
  return JSON.parse(text) as Record<string, unknown>;
}

function webJob(count: number, group: Record<string, unknown> = {}) {
  return {
    ID: "web",
    Type: "service",
    Datacenters: ["dc1"],
    TaskGroups: [
      {
        Name: "web",
        Count: count,
        Tasks: [
          {
            Name: "server",
            Driver: "mock_driver",
            Config: {},
            Resources: { CPU: 100, MemoryMB: 64 },
          },
        ],
        ...group,
      },
    ],
  };
}

const deployments = (s: TestServer) =>
  [...s.store.table<DeploymentRow>("deployments").all()]
    .filter((d) => d.JobID === "web")
    .sort((a, b) => a.CreateIndex - b.CreateIndex);
const liveAllocs = (s: TestServer) =>
  [...allocsTable(s).all()].filter((a: AllocRow) => a.JobID === "web" && a.DesiredStatus === "run");

describe("the simulated clients' health watcher", () => {
  it("reports health again when an in-place update joins a new deployment (count-only change, job scale)", async () => {
    const { s } = await setup(3);
    const update = {
      Update: {
        MaxParallel: 1,
        HealthCheck: "task_states",
        MinHealthyTime: 100 * MS,
        HealthyDeadline: 30_000 * MS,
        ProgressDeadline: 60_000 * MS,
      },
    };
    const successful = async (n: number) => {
      await eventually(
        `deployment ${n} successful`,
        () => {
          const d = deployments(s);
          return d.length === n && d[n - 1]!.Status === "successful";
        },
        WAIT_MS,
      );
      return deployments(s)[n - 1]!;
    };

    await call(s, "/v1/jobs", "PUT", { Job: webJob(2, update) });
    const first = await successful(1);
    expect(first.TaskGroups.web).toMatchObject({ DesiredTotal: 2, PlacedAllocs: 2, HealthyAllocs: 2 });

    // Count only: the two running allocations are updated in place and join
    // the new deployment (counted as placed, as Nomad's state store does),
    // one more is placed; all three must report their health to it.
    await call(s, "/v1/jobs", "PUT", { Job: webJob(3, update) });
    const second = await successful(2);
    expect(second.TaskGroups.web).toMatchObject({ DesiredTotal: 3, PlacedAllocs: 3, HealthyAllocs: 3 });
    const joined = liveAllocs(s).filter((a) => a.CreateIndex < second.CreateIndex);
    expect(joined).toHaveLength(2);
    for (const a of joined) {
      expect(a.DeploymentID).toBe(second.ID);
      expect(a.DeploymentStatus?.Healthy).toBe(true);
    }

    // `nomad job scale`: the same through Job.Scale.
    await call(s, "/v1/job/web/scale", "POST", { Count: 4, Target: { Group: "web" } });
    const third = await successful(3);
    expect(third.TaskGroups.web).toMatchObject({ DesiredTotal: 4, PlacedAllocs: 4, HealthyAllocs: 4 });
    expect(liveAllocs(s).every((a) => a.DeploymentID === third.ID && a.DeploymentStatus?.Healthy)).toBe(true);
  });

  it("reports migration health for replacements outside a deployment, so a drain waiting on their health completes", async () => {
    const { s, sim } = await setup(2);
    const [drained, other] = sim.nodes.map((n) => n.id) as [string, string];
    // Both allocations on the node to drain: the other one is ineligible while the job is placed.
    await call(s, `/v1/node/${other}/eligibility`, "PUT", { Eligibility: "ineligible" });
    const migrate = {
      Migrate: {
        MaxParallel: 1,
        HealthCheck: "checks",
        MinHealthyTime: 200 * MS,
        HealthyDeadline: 30_000 * MS,
      },
    };
    // A rolling update: the first allocations are healthy for their deployment.
    await call(s, "/v1/jobs", "PUT", {
      Job: webJob(2, {
        ...migrate,
        Update: { MaxParallel: 1, MinHealthyTime: 100 * MS, HealthyDeadline: 30_000 * MS },
      }),
    });
    await eventually(
      "both allocations healthy on the node to drain",
      () =>
        liveAllocs(s).length === 2 &&
        liveAllocs(s).every((a) => a.NodeID === drained && a.DeploymentStatus?.Healthy === true),
      WAIT_MS,
    );
    await eventually("the deployment successful", () => deployments(s)[0]?.Status === "successful", WAIT_MS);
    await call(s, `/v1/node/${other}/eligibility`, "PUT", { Eligibility: "eligible" });

    // max_parallel 1 of count 2: the second allocation moves only once the
    // first one's replacement is healthy, and that replacement belongs to no
    // deployment (the job's is over): only its migrate block makes its health.
    await call(s, `/v1/node/${drained}/drain`, "PUT", { DrainSpec: { Deadline: 3_600e9 } });
    await eventually(
      "the drain completes",
      () => {
        const node = nodesTable(s).get(drained);
        return node?.DrainStrategy === null && node.LastDrain?.Status === "complete";
      },
      WAIT_MS,
    );
    const live = liveAllocs(s);
    expect(live).toHaveLength(2);
    expect(live.every((a) => a.NodeID === other && a.DeploymentID === "")).toBe(true);
    await eventually(
      "the replacements healthy",
      () => liveAllocs(s).every((a) => a.DeploymentStatus?.Healthy === true),
      WAIT_MS,
    );
  });
});
