import { rm } from "node:fs/promises";
import { afterEach, describe, expect, it } from "vitest";
import type { PeriodicLaunchRow } from "../../projections/job-children.ts";
import { VirtualClock } from "../../src/util/clock.ts";
import { replayStore } from "../replay-store.ts";
import { startTestServer, type TestServer } from "../server-harness.ts";
import { childrenOf, childrenSummary, dispatcherOf, periodicJob } from "./periodic-fixtures.ts";
import { Scenario } from "./scheduler/scenario.ts";

const MINUTE = 60_000;
/** The VirtualClock's start, 2025-11-22T08:26:40Z: the first minute tick is 08:27:00. */
const START = 1_763_800_000_000;
const FIRST_TICK = 1_763_800_020_000;

const cleanup: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const step of cleanup.splice(0).reverse()) await step();
});

async function scenario(nodes = 1): Promise<Scenario> {
  const s = await Scenario.start();
  cleanup.push(() => s.stop());
  for (let i = 0; i < nodes; i++) await s.addNode();
  return s;
}

/** Virtual time moves; every launch it causes is written and scheduled. */
async function advance(s: Scenario, ms: number): Promise<void> {
  await s.advance(ms, 5_000);
  await dispatcherOf(s.server).settled();
  await s.idle();
}

const launchOf = (server: TestServer, id: string) =>
  server.store.table<PeriodicLaunchRow>("periodic_launches").get(`default\u0000${id}`);

describe("periodic dispatcher (Nomad's PeriodicDispatch)", () => {
  it("registers a periodic job without an evaluation, then launches one child and one evaluation per tick", async () => {
    const s = await scenario();
    const registered = await s.register(periodicJob("report"));
    expect(registered.EvalID).toBe("");
    expect(s.evals("report")).toHaveLength(0);
    expect(s.job("report")!.Status).toBe("running");
    // The registration is the first recorded launch.
    expect(launchOf(s.server, "report")!.Launch).toBe(START);
    expect(dispatcherOf(s.server).nextLaunch("default", "report")).toBe(FIRST_TICK);

    await advance(s, 3 * MINUTE);
    const children = childrenOf(s.server, "report");
    expect(children.map((c) => c.ID)).toEqual(
      [0, 1, 2].map((i) => `report/periodic-${FIRST_TICK / 1000 + 60 * i}`),
    );
    for (const child of children) {
      expect(child).toMatchObject({
        Name: child.ID,
        ParentID: "report",
        Periodic: null,
        Meta: { team: "data" },
      });
      expect(child.Type).toBe("batch");
      const evals = s.evals(child.ID);
      expect(evals).toHaveLength(1);
      expect(evals[0]).toMatchObject({ TriggeredBy: "periodic-job", JobModifyIndex: child.JobModifyIndex });
      expect(s.allocs(child.ID)).toHaveLength(1);
    }
    const counts = childrenSummary(s.server, "report")!;
    expect(counts.Pending + counts.Running + counts.Dead).toBe(3);
    expect(launchOf(s.server, "report")!.Launch).toBe(FIRST_TICK + 2 * MINUTE);
    expect(dispatcherOf(s.server).nextLaunch("default", "report")).toBe(FIRST_TICK + 3 * MINUTE);

    // The children's summary follows their status: all dead once their allocations complete.
    await s.report(
      children.flatMap((c) => s.allocs(c.ID)),
      "complete",
    );
    expect(childrenSummary(s.server, "report")).toEqual({ Pending: 0, Running: 0, Dead: 3 });
    const summary = (await s.call("/v1/job/report/summary")).body as { Children: unknown };
    expect(summary.Children).toEqual({ Pending: 0, Running: 0, Dead: 3 });

    // Stopped: no timer, no launch.
    expect((await s.call("/v1/job/report", "DELETE")).status).toBe(200);
    expect(dispatcherOf(s.server).nextLaunch("default", "report")).toBeUndefined();
    await advance(s, 2 * MINUTE);
    expect(childrenOf(s.server, "report")).toHaveLength(3);
  });

  it("skips a tick while a child of a prohibit_overlap job is not dead", async () => {
    const s = await scenario();
    await s.register(periodicJob("nightly", { ProhibitOverlap: true }));
    await advance(s, 3 * MINUTE);
    const [first, ...others] = childrenOf(s.server, "nightly");
    expect(others).toHaveLength(0);
    expect(first!.Status).not.toBe("dead");

    await s.report(s.allocs(first!.ID), "complete");
    expect(s.job(first!.ID)!.Status).toBe("dead");
    await advance(s, MINUTE);
    expect(childrenOf(s.server, "nightly")).toHaveLength(2);
  });

  it("reads the cron spec in the job's time_zone", async () => {
    const s = await scenario(0);
    await s.register(periodicJob("morning", { Spec: "0 9 * * *", TimeZone: "America/New_York" }));
    // 09:00 in New York on 2025-11-22 (EST, UTC-5).
    expect(dispatcherOf(s.server).nextLaunch("default", "morning")).toBe(Date.UTC(2025, 10, 22, 14, 0, 0));
    const plan = await s.call("/v1/job/morning/plan", "PUT", {
      Job: periodicJob("morning", { Spec: "0 9 * * *", TimeZone: "America/New_York" }),
    });
    expect((plan.body as { NextPeriodicLaunch: string }).NextPeriodicLaunch).toBe(
      "2025-11-22T09:00:00-05:00",
    );
  });

  it("rebuilds identical tables from the log in a fresh store, which launches nothing", async () => {
    const s = await scenario();
    await s.register(periodicJob("report"));
    await advance(s, 2 * MINUTE);
    const lastIndex = s.server.log.lastIndex();
    const fresh = replayStore(s.server.log);
    await fresh.start();
    await fresh.caughtUp();
    expect(fresh.appliedIndex).toBe(s.server.store.appliedIndex);
    expect(fresh.hash()).toBe(s.server.store.hash());
    expect(fresh.table<PeriodicLaunchRow>("periodic_launches").get("default\u0000report")!.Launch).toBe(
      FIRST_TICK + MINUTE,
    );
    await fresh.stop();
    expect(s.server.log.lastIndex()).toBe(lastIndex);
  });

  it("resumes after a restart from the recorded last launch: no tick twice, one launch for ticks missed while down", async () => {
    const clock = new VirtualClock(START);
    const first = await startTestServer({ keepDir: true, deps: { clock } });
    const dataDir = first.dataDir;
    cleanup.push(() => rm(dataDir, { recursive: true, force: true }));
    const res = await first.call("/v1/jobs", {
      method: "PUT",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ Job: periodicJob("report") }),
    });
    expect(res.status).toBe(200);
    await first.store.caughtUp();
    for (let i = 0; i < 2; i++) {
      clock.advance(MINUTE);
      await dispatcherOf(first).settled();
    }
    await first.store.caughtUp();
    expect(childrenOf(first, "report")).toHaveLength(2);
    await first.stop();

    // Back at the same instant: nothing was missed, nothing is launched.
    const sameClock = new VirtualClock(clock.now());
    const same = await startTestServer({ dataDir, deps: { clock: sameClock } });
    await dispatcherOf(same).settled();
    await same.store.caughtUp();
    expect(childrenOf(same, "report")).toHaveLength(2);
    // The tick already launched before the stop is not launched again.
    expect(dispatcherOf(same).nextLaunch("default", "report")).toBe(FIRST_TICK + 2 * MINUTE);
    await same.stop();

    // Five minutes without a leader: Nomad's restorePeriodicDispatcher launches once, now.
    const laterAt = clock.now() + 5 * MINUTE + 7_000;
    const later = new VirtualClock(laterAt);
    const second = await startTestServer({ dataDir, deps: { clock: later } });
    cleanup.push(() => second.stop());
    await dispatcherOf(second).settled();
    await second.store.caughtUp();
    const ids = childrenOf(second, "report").map((c) => c.ID);
    expect(ids).toHaveLength(3);
    expect(ids[2]).toBe(`report/periodic-${Math.floor(laterAt / 1000)}`);
    later.advance(MINUTE);
    await dispatcherOf(second).settled();
    await second.store.caughtUp();
    const after = childrenOf(second, "report").map((c) => c.ID);
    expect(after).toHaveLength(4);
    expect(new Set(after).size).toBe(4);
    expect(childrenSummary(second, "report")!.Pending).toBe(4);
  });
});
