import { afterEach, describe, expect, it } from "vitest";
import type { AllocRow } from "../../../projections/allocs.ts";
import type { DeploymentRow } from "../../../projections/deployments.ts";
import { goTime } from "../../../projections/go-time.ts";
import { createProjections } from "../../../projections/index.ts";
import { writeEvents } from "../../../src/store/writer.ts";
import { replayStore } from "../../replay-store.ts";
import { Scenario, serviceJob } from "./scenario.ts";

const scenarios: Scenario[] = [];
afterEach(async () => {
  for (const s of scenarios.splice(0)) await s.stop();
});

const MINUTE_NS = 60_000_000_000;

/** The group of a canary deployment: `count` allocations of `image`, `canary` canaries, max_parallel 2. */
function canaryJob(count: number, image: string, update: Record<string, unknown> = {}) {
  return serviceJob(
    "web",
    count,
    {},
    {
      Update: {
        MaxParallel: 2,
        Canary: 1,
        HealthyDeadline: MINUTE_NS,
        ProgressDeadline: 5 * MINUTE_NS,
        ...update,
      },
      Tasks: [
        {
          Name: "server",
          Driver: "docker",
          Config: { image },
          Resources: { CPU: 500, MemoryMB: 256 },
        },
      ],
    },
  );
}

async function start(): Promise<Scenario> {
  const s = await Scenario.start();
  scenarios.push(s);
  for (let i = 0; i < 3; i++) await s.addNode();
  return s;
}

function imageOf(job: unknown): string | undefined {
  const j = job as { TaskGroups?: { Tasks?: { Config?: { image?: string } | null }[] }[] } | null | undefined;
  return j?.TaskGroups?.[0]?.Tasks?.[0]?.Config?.image;
}

function healthy(s: Scenario) {
  return { DeploymentStatus: { Healthy: true, Timestamp: goTime(s.clock.now()) } };
}

function latest(s: Scenario): DeploymentRow {
  const all = s.server.store.table<DeploymentRow>("deployments").all();
  return [...all].sort((a, b) => b.CreateIndex - a.CreateIndex)[0]!;
}

/** Version 0, deployed and healthy: its deployment succeeds and the version is stable. */
async function stableVersionZero(s: Scenario, update: Record<string, unknown> = {}): Promise<void> {
  await s.register(canaryJob(4, "nginx:1", update));
  await s.idle();
  expect(s.live("web")).toHaveLength(4);
  // The first version replaces nothing: no canary.
  expect(s.live("web").every((a) => a.DeploymentStatus?.Canary !== true)).toBe(true);
  await s.report(s.live("web"), "running", healthy(s));
  expect(latest(s).Status).toBe("successful");
  expect(s.job("web")!.Stable).toBe(true);
}

/** Reports every pending allocation of the job running and healthy, until nothing is left pending. */
async function rollOut(s: Scenario): Promise<void> {
  for (let round = 0; round < 10; round++) {
    const pending = s.live("web").filter((a) => a.DeploymentStatus?.Healthy !== true);
    if (pending.length === 0) return;
    await s.report(pending, "running", healthy(s));
  }
}

/**
 * Replays the log record by record and, after each, counts the
 * allocations of `version` that run without being healthy yet: never more
 * than `limit` (max_parallel) at any index.
 */
async function maxUnhealthyUpdated(s: Scenario, version: number): Promise<{ max: number; at: number }> {
  const projections = createProjections();
  const replay = replayStore(s.server.log, projections);
  const live = new Map<string, AllocRow>();
  let max = 0;
  let at = 0;
  const check = (index: number) => {
    let n = 0;
    for (const a of live.values()) if (a.DeploymentStatus?.Healthy !== true) n++;
    if (n > max) {
      max = n;
      at = index;
    }
  };
  let pendingIndex = 0;
  const changes = replay.change$.subscribe((c) => {
    if (c.index !== pendingIndex) check(pendingIndex);
    pendingIndex = c.index;
    if (c.table !== "allocs") return;
    const a = c.after as AllocRow | undefined;
    const id = ((c.after ?? c.before) as AllocRow).ID;
    const running =
      a && a.DesiredStatus === "run" && !["complete", "failed", "lost"].includes(a.ClientStatus);
    if (a && running && a.Job?.Version === version) live.set(id, a);
    else live.delete(id);
  });
  const records = replay.applied$.subscribe(() => check(pendingIndex));
  await replay.start({ until: s.server.log.lastIndex() });
  check(pendingIndex);
  changes.unsubscribe();
  records.unsubscribe();
  await replay.stop();
  expect(replay.hash()).toBe(s.server.store.hash());
  return { max, at };
}

describe("canary deployments", () => {
  it("places canaries beside the old allocations, promotes by hand, then rolls out max_parallel at a time", async () => {
    const s = await start();
    await stableVersionZero(s);

    await s.register(canaryJob(4, "nginx:2"));
    await s.idle();
    const d = latest(s);
    expect(d.JobVersion).toBe(1);
    expect(d.Status).toBe("running");
    expect(d.StatusDescription).toBe("Deployment is running but requires manual promotion");
    expect(d.TaskGroups.web).toMatchObject({ DesiredCanaries: 1, DesiredTotal: 4, Promoted: false });
    const canaries = s.live("web").filter((a) => a.DeploymentStatus?.Canary === true);
    expect(canaries).toHaveLength(1);
    expect(d.TaskGroups.web!.PlacedCanaries).toEqual([canaries[0]!.ID]);
    // The old allocations keep running until promotion.
    expect(s.live("web").filter((a) => a.Job?.Version === 0)).toHaveLength(4);

    // Not healthy yet: refused, nothing written.
    const before = s.server.log.lastIndex();
    const early = await s.call(`/v1/deployment/promote/${d.ID}`, "PUT", { DeploymentID: d.ID, All: true });
    expect(early.status).toBe(400);
    expect(early.text).toContain('1 error occurred:\n\t* Task group "web" has 0/1 healthy allocations\n\n');
    expect(s.server.log.lastIndex()).toBe(before);

    // Healthy: still waits for a person (no auto_promote).
    await s.report(canaries, "running", healthy(s));
    expect(latest(s).TaskGroups.web!.Promoted).toBe(false);
    expect(s.live("web").filter((a) => a.Job?.Version === 0)).toHaveLength(4);

    const promoted = await s.call(`/v1/deployment/promote/${d.ID}`, "POST", {
      DeploymentID: d.ID,
      All: true,
    });
    expect(promoted.status, promoted.text).toBe(200);
    const answer = promoted.body as Record<string, unknown>;
    expect(answer.EvalID).not.toBe("");
    expect(answer.EvalCreateIndex).toBe(answer.Index);
    expect(answer.DeploymentModifyIndex).toBe(answer.Index);
    expect(answer.RevertedJobVersion).toBeNull();
    await s.idle();
    const after = latest(s);
    expect(after.TaskGroups.web!.Promoted).toBe(true);
    expect(after.StatusDescription).toBe("Deployment is running");
    // The promoted canary is one of the group now; the old allocation of its name is stopped.
    expect(s.allocs("web").find((a) => a.ID === canaries[0]!.ID)!.DeploymentStatus?.Canary).toBe(false);
    expect(s.live("web").filter((a) => a.Name === canaries[0]!.Name)).toHaveLength(1);

    await rollOut(s);
    const done = latest(s);
    expect(done.ID).toBe(d.ID);
    expect(done.Status).toBe("successful");
    const live = s.live("web");
    expect(live).toHaveLength(4);
    expect(live.every((a) => a.Job?.Version === 1)).toBe(true);
    expect(s.job("web")!.Stable).toBe(true);

    // max_parallel 2 reached, never passed, at any index of the log.
    const { max, at } = await maxUnhealthyUpdated(s, 1);
    expect(max, `at index ${at}`).toBe(2);
  });

  it("promotes by itself when every canary of an auto_promote group is healthy", async () => {
    const s = await start();
    await stableVersionZero(s, { AutoPromote: true, Canary: 2 });
    await s.register(canaryJob(4, "nginx:2", { AutoPromote: true, Canary: 2 }));
    await s.idle();
    const d = latest(s);
    expect(d.StatusDescription).toBe("Deployment is running pending automatic promotion");
    const canaries = s.live("web").filter((a) => a.DeploymentStatus?.Canary === true);
    expect(canaries).toHaveLength(2);
    await s.report(canaries.slice(0, 1), "running", healthy(s));
    expect(latest(s).TaskGroups.web!.Promoted).toBe(false);
    await s.report(canaries.slice(1), "running", healthy(s));
    expect(latest(s).TaskGroups.web!.Promoted).toBe(true);
    await rollOut(s);
    expect(latest(s).Status).toBe("successful");
    expect(s.live("web").every((a) => a.Job?.Version === 1)).toBe(true);
    const { max } = await maxUnhealthyUpdated(s, 1);
    expect(max).toBeLessThanOrEqual(2);
  });

  it("reverts to the stable version when a canary of an auto_revert group turns unhealthy", async () => {
    const s = await start();
    await stableVersionZero(s, { AutoRevert: true });
    await s.register(canaryJob(4, "nginx:broken", { AutoRevert: true }));
    await s.idle();
    const d = latest(s);
    const canary = s.live("web").find((a) => a.DeploymentStatus?.Canary === true)!;
    await s.report([canary], "running", {
      DeploymentStatus: { Healthy: false, Timestamp: goTime(s.clock.now()) },
    });
    await s.idle();
    const failed = s.server.store.table<DeploymentRow>("deployments").get(d.ID)!;
    expect(failed.Status).toBe("failed");
    expect(failed.StatusDescription).toBe(
      "Failed due to unhealthy allocations - rolling back to job version 0",
    );
    const job = s.job("web")!;
    expect(job.Version).toBe(2);
    expect(imageOf(job)).toBe("nginx:1");
    // The failure and the revert are one append: consecutive records, the revert right after.
    expect(job.JobModifyIndex).toBe(failed.ModifyIndex + 1);
    // The canary is stopped; the group runs the stable spec.
    await rollOut(s);
    expect(s.allocs("web").find((a) => a.ID === canary.ID)!.DesiredStatus).toBe("stop");
    const live = s.live("web");
    expect(live).toHaveLength(4);
    expect(live.every((a) => imageOf(a.Job) === "nginx:1")).toBe(true);
  });

  it("reverts when a person fails an auto_revert deployment, and says to which version", async () => {
    const s = await start();
    await stableVersionZero(s, { AutoRevert: true });
    await s.register(canaryJob(4, "nginx:2", { AutoRevert: true }));
    await s.idle();
    const d = latest(s);
    const res = await s.call(`/v1/deployment/fail/${d.ID}`, "PUT");
    expect(res.status, res.text).toBe(200);
    const answer = res.body as Record<string, number | string | null>;
    expect(answer.RevertedJobVersion).toBe(0);
    // The failure first, then the reverted job with the evaluation.
    expect(answer.DeploymentModifyIndex).toBe((answer.Index as number) - 1);
    expect(answer.EvalCreateIndex).toBe(answer.Index);
    await s.idle();
    expect(s.server.store.table<DeploymentRow>("deployments").get(d.ID)).toMatchObject({
      Status: "failed",
      StatusDescription: "Deployment marked as failed - rolling back to job version 0",
    });
    expect(s.job("web")).toMatchObject({ Version: 2, JobModifyIndex: answer.Index });
    expect(imageOf(s.job("web"))).toBe("nginx:1");
  });

  it("fails a deployment whose progress deadline passes, on the virtual clock", async () => {
    const s = await start();
    await stableVersionZero(s, { ProgressDeadline: 2 * MINUTE_NS });
    await s.register(canaryJob(4, "nginx:2", { ProgressDeadline: 2 * MINUTE_NS, Canary: 0 }));
    await s.idle();
    const d = latest(s);
    expect(d.Status).toBe("running");
    await s.advance(60_000);
    expect(latest(s).Status).toBe("running");
    await s.advance(70_000);
    const failed = s.server.store.table<DeploymentRow>("deployments").get(d.ID)!;
    expect(failed.Status).toBe("failed");
    expect(failed.StatusDescription).toBe("Failed due to progress deadline");
  });
});

describe("multiregion jobs", () => {
  it("mark their deployment multiregion, and a complete one waits for its peer regions (blocked)", async () => {
    const s = await start();
    await s.register({
      ...canaryJob(2, "nginx:1"),
      Multiregion: { Strategy: { MaxParallel: 1 }, Regions: [{ Name: "global", Count: 2 }] },
    });
    await s.idle();
    expect(latest(s).IsMultiregion).toBe(true);
    await s.report(s.live("web"), "running", healthy(s));
    expect(latest(s)).toMatchObject({
      Status: "blocked",
      StatusDescription: "Deployment is complete but waiting for peer region",
    });
  });
});

describe("deployment endpoints", () => {
  it("pauses, resumes and fails a deployment; refuses what Nomad refuses with nothing written", async () => {
    const s = await start();
    await stableVersionZero(s);
    await s.register(canaryJob(4, "nginx:2"));
    await s.idle();
    const d = latest(s);
    const before = s.server.log.lastIndex();
    const refusals: [string, unknown, number, string][] = [
      [`/v1/deployment/pause/nope`, { DeploymentID: "nope", Pause: true }, 404, "deployment not found"],
      [`/v1/deployment/pause/${d.ID}`, { Pause: true }, 400, "DeploymentID must be specified"],
      [
        `/v1/deployment/pause/${d.ID}`,
        { DeploymentID: "x", Pause: true },
        400,
        "Deployment ID does not match",
      ],
      [`/v1/deployment/fail/nope`, undefined, 404, "deployment not found"],
      [
        `/v1/deployment/allocation-health/${d.ID}`,
        { DeploymentID: d.ID },
        400,
        "must specify at least one healthy/unhealthy allocation ID",
      ],
      [
        `/v1/deployment/allocation-health/${d.ID}`,
        { DeploymentID: d.ID, HealthyAllocationIDs: ["nope"] },
        400,
        'unknown alloc "nope"',
      ],
    ];
    for (const [path, body, status, text] of refusals) {
      const res = await s.call(path, "PUT", body);
      expect(res.status, `${path} ${res.text}`).toBe(status);
      expect(res.text).toContain(text);
    }
    expect(s.server.log.lastIndex()).toBe(before);

    const paused = await s.call(`/v1/deployment/pause/${d.ID}`, "PUT", { DeploymentID: d.ID, Pause: true });
    expect(paused.status, paused.text).toBe(200);
    expect((paused.body as { EvalID: string }).EvalID).toBe("");
    await s.idle();
    expect(latest(s)).toMatchObject({ Status: "paused", StatusDescription: "Deployment is paused" });

    const resumed = await s.call(`/v1/deployment/pause/${d.ID}`, "PUT", { DeploymentID: d.ID, Pause: false });
    expect(resumed.status, resumed.text).toBe(200);
    expect((resumed.body as { EvalID: string }).EvalID).not.toBe("");
    await s.idle();
    expect(latest(s)).toMatchObject({ Status: "running", StatusDescription: "Deployment is running" });

    // Marked healthy by hand: counted toward the deployment.
    const canary = s.live("web").find((a) => a.DeploymentStatus?.Canary === true)!;
    const health = await s.call(`/v1/deployment/allocation-health/${d.ID}`, "PUT", {
      DeploymentID: d.ID,
      HealthyAllocationIDs: [canary.ID],
    });
    expect(health.status, health.text).toBe(200);
    await s.idle();
    expect(latest(s).TaskGroups.web!.HealthyAllocs).toBe(1);
    expect(s.allocs("web").find((a) => a.ID === canary.ID)!.DeploymentStatus?.Healthy).toBe(true);

    const failed = await s.call(`/v1/deployment/fail/${d.ID}`, "POST");
    expect(failed.status, failed.text).toBe(200);
    await s.idle();
    expect(latest(s)).toMatchObject({ Status: "failed", StatusDescription: "Deployment marked as failed" });
    // A failed deployment stops its canaries.
    expect(s.allocs("web").find((a) => a.ID === canary.ID)!.DesiredStatus).toBe("stop");

    const mark = s.server.log.lastIndex();
    for (const [path, body, text] of [
      [`/v1/deployment/fail/${d.ID}`, undefined, "can't fail terminal deployment"],
      [
        `/v1/deployment/pause/${d.ID}`,
        { DeploymentID: d.ID, Pause: true },
        "can't pause terminal deployment",
      ],
      [
        `/v1/deployment/promote/${d.ID}`,
        { DeploymentID: d.ID, All: true },
        "can't promote terminal deployment",
      ],
    ] as const) {
      const res = await s.call(path, "PUT", body);
      expect(res.status).toBe(400);
      expect(res.text).toContain(text);
    }
    expect(s.server.log.lastIndex()).toBe(mark);

    // The second validation: a record written past the handler's check is refused at apply, changing nothing.
    const evalID = "00000000-0000-4000-8000-000000000001";
    const written = await writeEvents(s.server.store, s.clock.now(), { kind: "server", id: "test" }, [
      {
        type: "DeploymentStatusUpdated",
        v: 1,
        data: {
          DeploymentID: d.ID,
          Status: "running",
          StatusDescription: "Deployment is running",
          Eval: { ...s.evals("web").at(-1)!, ID: evalID },
        },
      },
    ]);
    expect(written.outcomes[0]).toMatchObject({
      status: "rejected",
      reason: `Deployment "${d.ID}" has terminal status "failed":`,
    });
    expect(latest(s)).toMatchObject({ Status: "failed", StatusDescription: "Deployment marked as failed" });
    expect(s.evals("web").some((e) => e.ID === evalID)).toBe(false);
  });
});
