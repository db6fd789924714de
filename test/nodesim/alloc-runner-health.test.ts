import { describe, expect, it } from "vitest";
import { AllocRunner, type ClientAllocUpdate, type RunnerHost } from "../../src/nodesim/alloc-runner.ts";
import { simAllocSpec } from "../../src/nodesim/alloc-spec.ts";
import type { DriverOptions } from "../../src/nodesim/driver-options.ts";
import { goDuration } from "../../src/nodesim/health-watch.ts";
import type { TaskState } from "../../src/nodesim/task-states.ts";
import { TimerQueue } from "../../src/nodesim/timer-queue.ts";
import { VirtualClock } from "../../src/util/clock.ts";
import { at, DRIVER } from "./quick-driver.ts";

const S = 1e9;

function alloc(fields: Record<string, unknown> = {}, group: Record<string, unknown> = {}, type = "service") {
  return {
    ID: "a1",
    Name: "web.web[0]",
    JobID: "web",
    TaskGroup: "web",
    DeploymentID: "",
    DesiredStatus: "run",
    ClientStatus: "pending",
    AllocModifyIndex: 10,
    Job: {
      ID: "web",
      Type: type,
      TaskGroups: [
        {
          Name: "web",
          Tasks: [{ Name: "app" }],
          RestartPolicy: { Attempts: 0, Delay: 0 },
          ...group,
        },
      ],
    },
    ...fields,
  };
}

const ROLLING = {
  Update: { MaxParallel: 1, HealthCheck: "checks", MinHealthyTime: 2 * S, HealthyDeadline: 60 * S },
};

/** One runner on a virtual clock; `sent` holds its state each time it changed. */
function runner(raw: Record<string, unknown>, driver: Partial<DriverOptions> = {}) {
  const clock = new VirtualClock();
  const timers = new TimerQueue(clock);
  const sent: ClientAllocUpdate[] = [];
  const host: RunnerHost = {
    timers,
    driver: { ...DRIVER, ...driver },
    seed: "t",
    changed: (r) => sent.push(structuredClone(r.toUpdate("n1"))),
  };
  const r = new AllocRunner(simAllocSpec(raw, 15_000), host);
  r.start();
  const health = () => sent.at(-1)?.DeploymentStatus ?? null;
  /** The updates whose health differs from the one before. */
  const healthReports = () =>
    sent.filter(
      (u, i) => JSON.stringify(u.DeploymentStatus) !== JSON.stringify(sent[i - 1]?.DeploymentStatus ?? null),
    );
  return { r, clock, sent, health, healthReports };
}

const eventTypes = (u: ClientAllocUpdate | undefined) =>
  (u?.TaskStates.app as TaskState | undefined)?.Events.map((e) => e.Type) ?? [];

describe("the simulated client's health watcher", () => {
  it("watches a service allocation outside any deployment with its migrate block (a drain's replacement)", () => {
    const { clock, health } = runner(
      alloc(
        {},
        {
          Migrate: { MaxParallel: 1, HealthCheck: "checks", MinHealthyTime: 3 * S, HealthyDeadline: 60 * S },
        },
      ),
    );
    clock.advance(100 + 2_999);
    expect(health()).toBeNull();
    clock.advance(1);
    expect(health()).toMatchObject({ Healthy: true, Canary: false });
  });

  it("uses Nomad's default migrate strategy (10 s) when the group has none", () => {
    const { clock, health } = runner(alloc());
    clock.advance(100 + 9_999);
    expect(health()).toBeNull();
    clock.advance(1);
    expect(health()?.Healthy).toBe(true);
  });

  it("watches nothing for batch jobs, nor for deployments with manual health or no rolling update", () => {
    const batch = runner(alloc({}, {}, "batch"), { batchRunFor: at(600_000) });
    const manual = runner(
      alloc({ DeploymentID: "d1" }, { Update: { ...ROLLING.Update, HealthCheck: "manual" } }),
    );
    const empty = runner(alloc({ DeploymentID: "d1" }, { Update: { MaxParallel: 0 } }));
    for (const x of [batch, manual, empty]) {
      x.clock.advance(400_000);
      expect(x.r.clientStatus).toBe("running");
      expect(x.health()).toBeNull();
    }
  });

  it("an in-place update into another deployment clears the health and reports it again after min_healthy_time", () => {
    const { r, clock, health, healthReports } = runner(alloc({ DeploymentID: "d1" }, ROLLING));
    clock.advance(100 + 2_000);
    expect(health()?.Healthy).toBe(true);
    const first = health()!.Timestamp;

    // Same deployment (another change in place): the health stays, nothing is reported again.
    r.update(simAllocSpec(alloc({ DeploymentID: "d1", AllocModifyIndex: 20 }, ROLLING), 15_000));
    clock.advance(5_000);
    expect(healthReports()).toHaveLength(1);

    r.update(simAllocSpec(alloc({ DeploymentID: "d2", AllocModifyIndex: 30 }, ROLLING), 15_000));
    expect(r.toUpdate("n1").DeploymentStatus?.Healthy).toBeNull();
    clock.advance(1_999);
    expect(healthReports()).toHaveLength(1);
    clock.advance(1);
    expect(healthReports()).toHaveLength(2);
    expect(health()?.Healthy).toBe(true);
    expect(health()?.Timestamp).not.toBe(first);
  });

  it("restarts count from the new start; past the healthy deadline the allocation is unhealthy, with the reason", () => {
    const { r, clock, health, sent } = runner(
      alloc(
        { DeploymentID: "d1" },
        {
          Update: {
            MaxParallel: 1,
            HealthCheck: "task_states",
            MinHealthyTime: 5 * S,
            HealthyDeadline: 1.5 * S,
          },
        },
      ),
      { start: at(2_000) },
    );
    clock.advance(1_499);
    expect(health()).toBeNull();
    clock.advance(1);
    expect(health()?.Healthy).toBe(false);
    expect(eventTypes(sent.at(-1)).at(-1)).toBe("Alloc Unhealthy");
    const last = (sent.at(-1)!.TaskStates.app as TaskState).Events.at(-1)!;
    expect(last.DisplayMessage).toBe("Task not running by healthy_deadline of 1.5s");
    // The tasks still start; the health stays what it was.
    clock.advance(10_000);
    expect(r.clientStatus).toBe("running");
    expect(health()?.Healthy).toBe(false);
  });

  it("a task crash resets the min_healthy_time countdown", () => {
    const { clock, health } = runner(
      alloc({ DeploymentID: "d1" }, { ...ROLLING, RestartPolicy: { Attempts: 3 } }),
      {
        failureRate: 1,
        crashWithin: at(1_000),
        restartDelay: 500,
      },
    );
    // Running at 100, crashes at 1 100, runs again at 1 600, crashes at 2 600...: never 2 s in a row.
    clock.advance(4_000);
    expect(health()).toBeNull();
  });

  it("tasks killed by the server before they were healthy make the allocation unhealthy, without task events", () => {
    const { r, clock, health, sent } = runner(alloc({ DeploymentID: "d1" }, ROLLING));
    clock.advance(1_000);
    r.update(
      simAllocSpec(
        alloc({ DeploymentID: "d1", DesiredStatus: "stop", AllocModifyIndex: 20 }, ROLLING),
        15_000,
      ),
    );
    clock.advance(100);
    expect(r.clientStatus).toBe("complete");
    expect(health()?.Healthy).toBe(false);
    expect(eventTypes(sent.at(-1))).not.toContain("Alloc Unhealthy");
  });

  it("a failed allocation of a deployment is unhealthy", () => {
    const { r, clock, health } = runner(alloc({ DeploymentID: "d1" }, ROLLING), {
      failureRate: 1,
      crashWithin: at(500),
    });
    clock.advance(1_000);
    expect(r.clientStatus).toBe("failed");
    expect(health()?.Healthy).toBe(false);
  });

  it("formats durations as Go does", () => {
    expect([100, 1_000, 1_500, 10_000, 300_000, 3_600_000, 90_061_000].map(goDuration)).toEqual([
      "100ms",
      "1s",
      "1.5s",
      "10s",
      "5m0s",
      "1h0m0s",
      "25h1m1s",
    ]);
  });
});
