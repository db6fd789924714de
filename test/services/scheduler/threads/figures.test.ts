import { randomUUID } from "node:crypto";
import { stat } from "node:fs/promises";
import { getHeapStatistics, setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { afterEach, describe, expect, it } from "vitest";
import { scheduleGeneric } from "../../../../src/services/scheduler/generic-scheduler.ts";
import { ReadyNodes } from "../../../../src/services/scheduler/ready-nodes.ts";
import { SchedulerThreads } from "../../../../src/services/scheduler/threads/scheduler-threads.ts";
import { submitThreadPlan } from "../../../../src/services/scheduler/threads/submit-thread-plan.ts";
import { type Draft, writeEvents } from "../../../../src/store/writer.ts";
import { useTempDirs } from "../../../store/helpers.ts";
import { ACTOR, MainStore, quiet } from "./fixture.ts";

/**
 * The figures docs/architecture.md quotes for scheduler threads. Heavy (a
 * 50,000-allocation cluster): run on demand only,
 * CHRONOMAD_THREADS_FIGURES=1 npx vitest run test/services/scheduler/threads/figures.test.ts
 */
const enabled = process.env.CHRONOMAD_THREADS_FIGURES === "1";
if (!enabled) console.warn("scheduler thread figures skipped: set CHRONOMAD_THREADS_FIGURES=1 to take them");

const tempDir = useTempDirs();
const opened: { close(): Promise<void> }[] = [];
afterEach(async () => {
  for (const o of opened.splice(0).reverse()) await o.close();
});

function mainHeap(): number {
  setFlagsFromString("--expose-gc");
  (runInNewContext("gc") as () => void)();
  return getHeapStatistics().used_heap_size;
}

const mb = (n: number) => `${(n / 1048576).toFixed(1)} MiB`;
const us = (ms: number, n: number) => `${((ms * 1000) / n).toFixed(2)} µs`;

async function startThreads(main: MainStore, workers: number, snapshots = true): Promise<SchedulerThreads> {
  const threads = new SchedulerThreads({
    workers,
    store: main.store,
    snapshotDir: snapshots ? main.snapshotDir : undefined,
    logger: quiet,
  });
  opened.push(threads);
  return main.startThreads(threads);
}

describe.skipIf(!enabled)("scheduler thread figures", () => {
  it("forwarding cost per record, with 1 and 2 threads, by commit size", async () => {
    for (const workers of [1, 2]) {
      for (const perCommit of [1, 100]) {
        const main = await MainStore.open(await tempDir());
        opened.push(main);
        await main.addNodes(100);
        const threads = await startThreads(main, workers);
        const nodes = [...main.tables.nodes.all()].map((n) => n.ID);
        const before = threads.forwarding;
        const commits = perCommit === 1 ? 5_000 : 200;
        const t0 = performance.now();
        for (let c = 0; c < commits; c++) {
          const drafts: Draft[] = [];
          for (let i = 0; i < perCommit; i++) {
            const NodeID = nodes[(c * perCommit + i) % nodes.length]!;
            const eligible = (c + i) % 2 === 0 ? "ineligible" : "eligible";
            drafts.push({
              type: "NodeEligibilityUpdated",
              v: 1,
              data: { NodeID, Eligibility: eligible, NodeEvent: null },
            });
          }
          await main.write(drafts);
        }
        const wallMs = performance.now() - t0;
        const index = main.store.appliedIndex;
        await threads.hashes(index);
        const f = threads.forwarding;
        const records = f.records - before.records;
        const stats = await threads.stats();
        const apply = stats[0]!.applying;
        console.info(
          `forwarding, ${workers} thread(s), ${perCommit} record(s) per commit: ${records} records sent ` +
            `in ${f.messages - before.messages} messages, ${((f.bytes - before.bytes) / records).toFixed(0)} B/record; ` +
            `main thread ${us(f.ms - before.ms, records / workers)} per record (all threads), ` +
            `replica apply ${us(apply.ms, apply.records)} per record; writes took ${wallMs.toFixed(0)} ms`,
        );
        if (perCommit === 1) {
          const pings: number[] = [];
          for (let i = 0; i < 200; i++) {
            const t1 = performance.now();
            await threads.stats();
            pings.push(performance.now() - t1);
          }
          pings.sort((a, b) => a - b);
          console.info(
            `message round trip to ${workers} thread(s) and back: median ${pings[100]!.toFixed(3)} ms, ` +
              `p90 ${pings[180]!.toFixed(3)} ms`,
          );
        }
        await threads.close();
        await main.close();
      }
    }
  }, 300_000);

  it("main-thread cost of a schedule request, alone in its turn and 16 to a turn", async () => {
    const main = await MainStore.open(await tempDir());
    opened.push(main);
    await main.addNodes(100);
    const threads = await startThreads(main, 1);
    const ids: string[] = [];
    for (let j = 0; j < 1_600; j++) ids.push(await main.registerJob(`ask-${j}`, 1));
    const ask = (id: string) =>
      threads.schedule({
        evaluation: main.tables.evals.get(id)!,
        minIndex: main.store.appliedIndex,
        nowMs: Date.now(),
        attempt: 0,
      });
    for (const perTurn of [1, 16, 1, 16]) {
      const before = threads.forwarding;
      const cpu0 = process.cpuUsage();
      const t0 = performance.now();
      // The same 800 evaluations each round (computed, not submitted): only the batching differs.
      for (let i = 0; i < 800; i += perTurn) await Promise.all(ids.slice(i, i + perTurn).map(ask));
      const wallMs = performance.now() - t0;
      const cpu = process.cpuUsage(cpu0);
      const f = threads.forwarding;
      const n = f.scheduleRequests - before.scheduleRequests;
      console.info(
        `schedule requests ${perTurn} to a turn: ${n} in ${f.scheduleMessages - before.scheduleMessages} ` +
          `messages; main thread posting ${us(f.ms - before.ms, n)} per request; process CPU ` +
          `${us((cpu.user + cpu.system) / 1000, n)} per request (both threads); ${us(wallMs, n)} wall per request`,
      );
    }
  }, 300_000);

  it("replica memory, catch-up from a snapshot, schedule latency against in process", async () => {
    const main = await MainStore.open(await tempDir());
    opened.push(main);
    await main.addNodes(5_000);
    const threads = await startThreads(main, 1);
    const base = (await threads.stats(true))[0]!;
    const mainBase = mainHeap();

    // 50,000 allocations: 50 jobs of 1,000, each computed on the thread and appended by the main thread.
    const roundTrips: number[] = [];
    const computes: number[] = [];
    const submits: number[] = [];
    for (let j = 0; j < 50; j++) {
      const evalID = await main.registerJob(`big-${j}`, 1_000);
      const t0 = performance.now();
      const outcome = await threads.schedule({
        evaluation: main.tables.evals.get(evalID)!,
        minIndex: main.store.appliedIndex,
        nowMs: Date.now(),
        attempt: 0,
      });
      roundTrips.push(performance.now() - t0);
      computes.push(outcome.timings.computeMs + outcome.timings.encodeMs);
      const t1 = performance.now();
      const r = await submitThreadPlan(
        (records) => writeEvents(main.store, Date.now(), ACTOR, records),
        main.codec,
        main.tables,
        outcome,
      );
      submits.push(performance.now() - t1);
      expect(r.fullCommit).toBe(true);
    }
    await threads.hashes(main.store.appliedIndex);
    const full = (await threads.stats(true))[0]!;
    const mainFull = mainHeap();
    const allocs = main.tables.allocs.size;
    console.info(
      `memory: ${allocs} allocations on 5,000 nodes; replica heap ${mb(base.heapUsed)} → ${mb(full.heapUsed)} ` +
        `(${((full.heapUsed - base.heapUsed) / allocs).toFixed(0)} B/allocation); ` +
        `main store (all projections) ${((mainFull - mainBase) / allocs).toFixed(0)} B/allocation`,
    );
    const avg = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
    console.info(
      `1,000-allocation jobs on a thread: round trip ${avg(roundTrips).toFixed(1)} ms, of which compute + encode ` +
        `${avg(computes).toFixed(1)} ms; main thread submit (append + apply + read back) ` +
        `${avg(submits).toFixed(1)} ms; replica apply of the same records ` +
        `${((full.applying.ms - base.applying.ms) / 50).toFixed(1)} ms per plan`,
    );

    // Schedule latency, small and large, in process and on the thread (computed only, not submitted).
    for (const count of [10, 1_000]) {
      const ids: string[] = [];
      for (let j = 0; j < 20; j++) ids.push(await main.registerJob(`probe-${count}-${j}`, count));
      const inProcess: number[] = [];
      const onThread: number[] = [];
      const inThread: number[] = [];
      const waits: number[] = [];
      const encodes: number[] = [];
      const readyNodes = new ReadyNodes(main.tables.nodes);
      for (const id of ids) {
        const evaluation = main.tables.evals.get(id)!;
        const nowMs = Date.now();
        const t0 = performance.now();
        scheduleGeneric({ tables: main.tables, readyNodes, nowMs, newID: randomUUID }, evaluation, {
          attempt: 0,
        });
        inProcess.push(performance.now() - t0);
        const t1 = performance.now();
        const o = await threads.schedule({
          evaluation,
          minIndex: main.store.appliedIndex,
          nowMs,
          attempt: 0,
        });
        onThread.push(performance.now() - t1);
        inThread.push(o.timings.computeMs);
        waits.push(o.timings.waitMs);
        encodes.push(o.timings.encodeMs);
      }
      // The first few warm the JIT up on each side.
      const warm = (xs: number[]) => avg(xs.slice(5));
      console.info(
        `schedule ${count} allocations: in process ${warm(inProcess).toFixed(2)} ms; on a thread ` +
          `${warm(onThread).toFixed(2)} ms round trip (compute there ${warm(inThread).toFixed(2)} ms, ` +
          `wait ${warm(waits).toFixed(2)} ms, encode ${warm(encodes).toFixed(2)} ms)`,
      );
    }

    // Catch-up: from the snapshot plus what came after it, and from the first record.
    await main.store.snapshot();
    const [latest] = await main.snapshots.indexes();
    const { size } = await stat(main.snapshots.pathOf(latest!));
    console.info(`snapshot at index ${latest}: ${mb(size)}`);
    await main.addNodes(1_000);
    for (const snapshots of [true, false]) {
      const t0 = performance.now();
      const late = await startThreads(main, 1, snapshots);
      const startMs = performance.now() - t0;
      const s = (await late.stats(true))[0]!;
      console.info(
        `catch-up ${snapshots ? "from a snapshot" : "from the first record"} at index ${s.appliedIndex} ` +
          `(${main.tables.allocs.size} allocations): start() ${startMs.toFixed(0)} ms; snapshot ` +
          `${s.startup.snapshotMs.toFixed(0)} ms (index ${s.startup.snapshotIndex}), replay of ` +
          `${s.startup.replayed} records ${s.startup.replayMs.toFixed(0)} ms; heap ${mb(s.heapUsed)}`,
      );
      await late.close();
    }
  }, 600_000);
});
