import { afterEach, describe, expect, it, vi } from "vitest";
import type { EvaluationRow } from "../../../../projections/evals.ts";
import { EnvelopeCodec } from "../../../../src/codec/envelope-codec.ts";
import {
  blockedEvalSpec,
  evalStatusUpdate,
  queuedAfter,
} from "../../../../src/services/scheduler/eval-update.ts";
import type { ScheduleOutcomeMessage } from "../../../../src/services/scheduler/threads/messages.ts";
import { outcomeWritables, placedByGroup } from "../../../../src/services/scheduler/threads/plan-message.ts";
import { SchedulerThreads } from "../../../../src/services/scheduler/threads/scheduler-threads.ts";
import { submitThreadPlan } from "../../../../src/services/scheduler/threads/submit-thread-plan.ts";
import { writeEvents } from "../../../../src/store/writer.ts";
import type { EvaluationSpec, EvaluationsUpserted } from "../../../../streams/evals.ts";
import type { Envelope } from "../../../../streams/event-schema.ts";
import { useTempDirs } from "../../../store/helpers.ts";
import { batchJob } from "../batch-job.ts";
import { Scenario } from "../scenario.ts";
import { ACTOR, MainStore, quiet } from "./fixture.ts";

const tempDir = useTempDirs();
const opened: { close(): Promise<void> }[] = [];
afterEach(async () => {
  for (const o of opened.splice(0).reverse()) await o.close();
});

/** The thread's first pass over `evaluation`, at the main store's applied index. */
function scheduleNow(main: MainStore, threads: SchedulerThreads, evaluation: EvaluationRow) {
  return threads.schedule({ evaluation, minIndex: main.store.appliedIndex, nowMs: Date.now(), attempt: 0 });
}

async function setUp(): Promise<{ main: MainStore; threads: SchedulerThreads }> {
  const main = await MainStore.open(await tempDir());
  opened.push(main);
  await main.addNodes(4);
  const threads = new SchedulerThreads({
    workers: 1,
    store: main.store,
    snapshotDir: main.snapshotDir,
    logger: quiet,
  });
  opened.push(threads);
  return { main, threads };
}

const hex = (b: Uint8Array) => Buffer.from(b).toString("hex");
const stamp = { at: 1_700_000_000_000, by: ACTOR };

/**
 * The worker's record for an evaluation that completes with this pass
 * (setStatus), naming the blocked evaluation it spawned if any.
 */
function completed(
  main: MainStore,
  outcome: ScheduleOutcomeMessage,
  modifyTimeMs: number,
  blockedID?: string,
) {
  const evaluation = main.tables.evals.get(outcome.evalID)!;
  const placed = placedByGroup(outcome, main.tables.allocs).placedByGroup;
  return evalStatusUpdate(
    evaluation,
    "complete",
    "",
    {
      deploymentID: outcome.deploymentID,
      failedTGAllocs: outcome.failedTGAllocs,
      queuedAllocs: queuedAfter(outcome.queuedAllocs, placed),
      snapshotIndex: outcome.atIndex,
    },
    blockedID,
    0,
    Math.max(modifyTimeMs * 1e6, evaluation.CreateTime + 1),
  );
}

describe("an evaluation's outcome record encoded on the scheduler thread", () => {
  it("is, with the write's stamp and time, byte for byte the record the codec encodes", async () => {
    const { main, threads } = await setUp();
    const evalID = await main.registerJob("web", 6);
    await main.startThreads(threads);
    const evaluation = main.tables.evals.get(evalID)!;
    const outcome = await scheduleNow(main, threads, evaluation);
    expect(outcome.update).toBeDefined();
    await submitThreadPlan(
      (records) => writeEvents(main.store, Date.now(), ACTOR, records),
      main.codec,
      main.tables,
      outcome,
    );
    for (const ms of [Date.now(), 1_700_000_000_123, 5]) {
      const updated = completed(main, outcome, ms);
      const draft = updateWritable(main.codec, outcome, updated);
      expect(draft).toBeDefined();
      const data: EvaluationsUpserted = { Evals: [updated] };
      expect(hex(draft!.encode(stamp))).toBe(
        hex(main.codec.encode({ type: "EvaluationsUpserted", v: 1, data, ...stamp })),
      );
    }
    // And it applies as the worker's record does.
    const written = await writeEvents(main.store, Date.now(), ACTOR, [
      updateWritable(main.codec, outcome, completed(main, outcome, Date.now()))!,
    ]);
    expect(written.outcomes[0]?.status).toBe("applied");
    expect(main.tables.evals.get(evalID)).toMatchObject({ Status: "complete", QueuedAllocations: { g: 0 } });
  });

  it("is not used for another outcome than the one it was encoded for", async () => {
    const { main, threads } = await setUp();
    const evalID = await main.registerJob("web", 6);
    await main.startThreads(threads);
    const outcome = await scheduleNow(main, threads, main.tables.evals.get(evalID)!);
    // Nothing applied yet: the placements are still queued, unlike what the thread expected.
    const notPlaced = completed(main, outcome, Date.now());
    expect(notPlaced.QueuedAllocations).toEqual({ g: 6 });
    expect(updateWritable(main.codec, outcome, notPlaced)).toBeUndefined();
    const placedAll = { ...notPlaced, QueuedAllocations: { g: 0 } };
    expect(updateWritable(main.codec, outcome, placedAll)).toBeDefined();
    expect(updateWritable(main.codec, outcome, { ...placedAll, Status: "failed" })).toBeUndefined();
    expect(updateWritable(main.codec, outcome, { ...placedAll, StatusDescription: "x" })).toBeUndefined();
    expect(updateWritable(main.codec, outcome, { ...placedAll, BlockedEval: "b" })).toBeUndefined();
    expect(updateWritable(main.codec, outcome, { ...placedAll, SnapshotIndex: 1 })).toBeUndefined();
  });

  it("for a pass that could not place everything, is the blocked evaluation then the update, byte for byte", async () => {
    const { main, threads } = await setUp();
    // 4 nodes of 8,000 MHz: 40 × 1,500 MHz do not fit.
    const evalID = await main.registerJob("big", 40, 1_500);
    await main.startThreads(threads);
    const evaluation = main.tables.evals.get(evalID)!;
    const outcome = await scheduleNow(main, threads, evaluation);
    expect(outcome.failedTGAllocs).not.toBeNull();
    const id = outcome.update?.blocked?.id;
    expect(id).toBeDefined();
    await submitThreadPlan(
      (records) => writeEvents(main.store, Date.now(), ACTOR, records),
      main.codec,
      main.tables,
      outcome,
    );
    const now = Date.now() * 1e6;
    const blocked = blockedEvalSpec(
      evaluation,
      {
        failedTGAllocs: outcome.failedTGAllocs,
        classEligibility: outcome.classEligibility,
        escaped: outcome.escaped,
        snapshotIndex: outcome.atIndex,
      },
      id!,
      false,
      now,
    );
    const updated = completed(main, outcome, now / 1e6, id);
    const drafts = outcomeWritables(main.codec, outcome, updated, blocked);
    expect(drafts?.length).toBe(2);
    expect(drafts!.map((d) => hex(d.encode(stamp)))).toEqual(
      [blocked, updated].map((e) =>
        hex(main.codec.encode({ type: "EvaluationsUpserted", v: 1, data: { Evals: [e] }, ...stamp })),
      ),
    );
    // Not for another blocked evaluation, nor without the one expected.
    expect(outcomeWritables(main.codec, outcome, updated, { ...blocked, ID: "other" })).toBeUndefined();
    expect(outcomeWritables(main.codec, outcome, updated, undefined)).toBeUndefined();
  });
});

describe("a server scheduling on a thread", () => {
  it("appends the outcome records of evaluations that complete without encoding them on the main thread", async () => {
    const s = await Scenario.start(["--scheduler-workers", "1"]);
    opened.push({ close: () => s.stop() });
    for (let i = 0; i < 2; i++) await s.addNode();
    const encode = vi.spyOn(EnvelopeCodec.prototype, "encode");
    try {
      const ids = ["out-a", "out-b", "out-c"];
      for (const id of ids) await s.register(batchJob(id, { count: 2, cpu: 1_000 }));
      await s.idle();
      for (const id of ids) expect(s.evals(id).map((e) => e.Status)).toEqual(["complete"]);
      // Placements that fail: a blocked evaluation as well.
      await s.register(batchJob("out-big", { count: 40, cpu: 1_000 }));
      await s.idle();
      expect(
        s
          .evals("out-big")
          .map((e) => e.Status)
          .sort(),
      ).toEqual(["blocked", "complete"]);
      const completeEncoded = encode.mock.calls.filter(([e]: [Envelope]) => {
        if (e.type !== "EvaluationsUpserted" || e.data === null) return false;
        return (e.data as EvaluationsUpserted).Evals.some(
          (x) => x.Status === "complete" || x.Status === "blocked",
        );
      });
      expect(completeEncoded).toEqual([]);
      // Their envelopes were encoded without data (one per write) to put the thread's bytes in.
      expect(
        encode.mock.calls.filter(([e]) => e.type === "EvaluationsUpserted" && e.data === null).length,
      ).toBeGreaterThan(0);
    } finally {
      encode.mockRestore();
    }
  });
});

function updateWritable(codec: EnvelopeCodec, outcome: ScheduleOutcomeMessage, updated: EvaluationSpec) {
  const drafts = outcomeWritables(codec, outcome, updated, undefined);
  return drafts?.length === 1 ? drafts[0] : undefined;
}
