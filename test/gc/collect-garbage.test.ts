import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { AllocRow } from "../../projections/allocs.ts";
import type { EvaluationRow } from "../../projections/evals.ts";
import type { HistoryEntry } from "../../projections/history.ts";
import type { JobRow } from "../../projections/jobs.ts";
import { EnvelopeCodec } from "../../src/codec/envelope-codec.ts";
import {
  collectGarbage,
  DEFAULT_GC_THRESHOLDS,
  type GcSources,
  gcDrafts,
} from "../../src/gc/collect-garbage.ts";
import { writeEvents } from "../../src/store/writer.ts";
import { allSchemas } from "../../streams/index.ts";
import { Scenario, serviceJob } from "../services/scheduler/scenario.ts";

const HOUR_MS = 3_600_000;

const scenarios: Scenario[] = [];
async function start(nodes: number) {
  const s = await Scenario.start();
  scenarios.push(s);
  for (let i = 0; i < nodes; i++) await s.addNode();
  return s;
}
afterEach(async () => {
  for (const s of scenarios.splice(0)) await s.stop();
});

function batchJob(id: string, count: number) {
  return {
    ID: id,
    Type: "batch",
    Datacenters: ["dc1"],
    TaskGroups: [
      {
        Name: "work",
        Count: count,
        Tasks: [{ Name: "task", Driver: "exec", Config: { command: "/bin/true" }, Resources: { CPU: 200 } }],
      },
    ],
  };
}

function sources(s: Scenario): GcSources {
  const store = s.server.store;
  return {
    jobs: store.table<JobRow>("jobs"),
    jobVersions: store.table<JobRow>("job_versions"),
    evals: store.table<EvaluationRow>("evals"),
    allocs: store.table<AllocRow>("allocs"),
  };
}

/** What the periodic core GC would collect `laterMs` from now. */
function periodicAfter(s: Scenario, laterMs: number) {
  return collectGarbage(sources(s), { nowMs: s.clock.now() + laterMs, thresholds: DEFAULT_GC_THRESHOLDS });
}

async function apply(s: Scenario, events: Awaited<ReturnType<typeof collectGarbage>>) {
  const { outcomes } = await writeEvents(
    s.server.store,
    s.clock.now(),
    { kind: "server", id: "test" },
    gcDrafts(events),
  );
  expect(outcomes.every((o) => o.status === "applied")).toBe(true);
}

describe("periodic core GC", () => {
  it("collects a finished batch job with its evaluations and allocations only after job_gc_threshold", async () => {
    const s = await start(1);
    await s.register(batchJob("nightly", 2));
    await s.idle();
    const allocs = s.allocs("nightly");
    await s.report(allocs, "complete");
    expect(s.job("nightly")?.Status).toBe("dead");

    expect(await periodicAfter(s, 0)).toEqual([]);
    expect(await periodicAfter(s, 4 * HOUR_MS - 60_000)).toEqual([]);
    const events = await periodicAfter(s, 4 * HOUR_MS + 60_000);
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({
      Reason: "periodic",
      Jobs: [{ Namespace: "default", ID: "nightly" }],
      EvalIDs: s
        .evals("nightly")
        .map((e) => e.ID)
        .sort(),
    });
    expect([...events[0]!.AllocIDs].sort()).toEqual(allocs.map((a) => a.ID).sort());

    await apply(s, events);
    expect(s.job("nightly")).toBeUndefined();
    expect(s.allocs("nightly")).toEqual([]);
    expect(s.evals("nightly")).toEqual([]);
    const history = (await s.call("/v1/job/nightly/history")).body as HistoryEntry[];
    expect(history.at(-1)).toMatchObject({
      Field: "(deleted)",
      Cause: { Event: "GarbageCollected", Reason: "periodic" },
    });
  });

  it("keeps a running batch job's completed allocations, however old", async () => {
    const s = await start(1);
    await s.register(batchJob("long", 2));
    await s.idle();
    const [done, running] = s.allocs("long");
    await s.report([done!], "complete");
    await s.report([running!], "running");
    expect(s.job("long")?.Status).toBe("running");
    // The scheduler would place a completed allocation again if it were collected.
    expect(await periodicAfter(s, 48 * HOUR_MS)).toEqual([]);
    expect((await collectGarbage(sources(s), { nowMs: s.clock.now() })).length).toBe(0);
  });

  it("leaves a stopped job dead, not pending, once its evaluations are collected, and collects it later", async () => {
    const s = await start(1);
    await s.register(serviceJob("web", 1, { Update: { MaxParallel: 0 } }));
    await s.idle();
    expect((await s.call("/v1/job/web", "DELETE")).status).toBe(200);
    await s.idle();
    await s.report(s.allocs("web"), "complete");
    expect(s.job("web")?.Status).toBe("dead");

    expect(await periodicAfter(s, HOUR_MS - 60_000)).toEqual([]);
    const evalsOnly = await periodicAfter(s, HOUR_MS + 60_000);
    expect(evalsOnly).toHaveLength(1);
    expect(evalsOnly[0]).toMatchObject({ Jobs: [] });
    expect(evalsOnly[0]!.EvalIDs.length).toBeGreaterThan(0);
    await apply(s, evalsOnly);
    expect(s.evals("web")).toEqual([]);
    expect(s.allocs("web")).toEqual([]);
    expect(s.job("web")?.Status).toBe("dead");

    const job = await periodicAfter(s, 4 * HOUR_MS + 60_000);
    expect(job).toEqual([
      { Reason: "periodic", AllocIDs: [], EvalIDs: [], Jobs: [{ Namespace: "default", ID: "web" }] },
    ]);
    await apply(s, job);
    expect(s.job("web")).toBeUndefined();
    expect((await s.call("/v1/job/web")).status).toBe(404);
  });

  it("never collects a running service job, and keeps its live allocations", async () => {
    const s = await start(1);
    await s.register(serviceJob("api", 1, { Update: { MaxParallel: 0 } }));
    await s.idle();
    await s.report(s.allocs("api"), "running");
    const events = await collectGarbage(sources(s), { nowMs: s.clock.now() });
    expect(events.flatMap((e) => e.Jobs)).toEqual([]);
    expect(events.flatMap((e) => e.AllocIDs)).toEqual([]);
  });
});

describe("GarbageCollected events", () => {
  it("reads a v1 record (evaluations and allocations only) as v2 with no jobs", async () => {
    const codec = new EnvelopeCodec(allSchemas);
    const v1 = await readFile(join(import.meta.dirname, "../fixtures/events/GarbageCollected.v1.msgpack"));
    const event = codec.decode(v1);
    expect(event).toMatchObject({ type: "GarbageCollected", v: 2 });
    expect(event.data).toMatchObject({ Reason: "periodic", Jobs: [] });
  });
});
