import { randomBytes, randomUUID } from "node:crypto";
import { getPriority } from "node:os";
import { afterEach, describe, expect, it } from "vitest";
import type { AllocRow } from "../../../../projections/allocs.ts";
import { createProjections } from "../../../../projections/index.ts";
import { allocUsage } from "../../../../projections/resources.ts";
import { unpackPlain } from "../../../../src/codec/envelope-codec.ts";
import { identityClaims } from "../../../../src/identity/claims.ts";
import { jwtOf, signIdentity, signingInput } from "../../../../src/identity/jwt.ts";
import { rootKeyMaterial } from "../../../../src/keyring/root-key-material.ts";
import { scheduleGeneric } from "../../../../src/services/scheduler/generic-scheduler.ts";
import { planCause } from "../../../../src/services/scheduler/plan-applier.ts";
import { ReadyNodes } from "../../../../src/services/scheduler/ready-nodes.ts";
import type { ScheduleOutcomeMessage } from "../../../../src/services/scheduler/threads/messages.ts";
import { placedByGroup, planWritables } from "../../../../src/services/scheduler/threads/plan-message.ts";
import {
  replicaProjections,
  tablesOf,
} from "../../../../src/services/scheduler/threads/replica-projections.ts";
import { SchedulerThreads } from "../../../../src/services/scheduler/threads/scheduler-threads.ts";
import { submitThreadPlan } from "../../../../src/services/scheduler/threads/submit-thread-plan.ts";
import { tablesHash } from "../../../../src/services/scheduler/threads/tables-hash.ts";
import { isEncoded, writeEvents } from "../../../../src/store/writer.ts";
import type { AllocsPlanApplied } from "../../../../streams/allocs.ts";
import { useTempDirs } from "../../../store/helpers.ts";
import { ACTOR, MainStore, quiet } from "./fixture.ts";

const tempDir = useTempDirs();
const opened: { close(): Promise<void> }[] = [];
afterEach(async () => {
  for (const o of opened.splice(0).reverse()) await o.close();
});

async function mainStore(): Promise<MainStore> {
  const main = await MainStore.open(await tempDir());
  opened.push(main);
  return main;
}

async function threadsFor(main: MainStore, workers: number, nice?: number): Promise<SchedulerThreads> {
  const threads = new SchedulerThreads({
    workers,
    store: main.store,
    snapshotDir: main.snapshotDir,
    logger: quiet,
    nice,
  });
  opened.push(threads);
  return main.startThreads(threads);
}

const REPLICA_TABLES = tablesOf(replicaProjections(createProjections().all));

function mainHash(main: MainStore): string {
  return tablesHash(REPLICA_TABLES, (n) => main.store.table(n));
}

/** Placements of plan records as name → node, the part of a plan the scheduler decides. */
function placementsOf(records: readonly AllocsPlanApplied[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const r of records) for (const p of r.Placements ?? []) out[p.Name] = p.NodeID;
  return out;
}

function submit(main: MainStore, outcome: ScheduleOutcomeMessage) {
  return submitThreadPlan(
    (records) => writeEvents(main.store, Date.now(), ACTOR, records),
    main.codec,
    main.tables,
    outcome,
  );
}

describe("scheduler threads' priority", () => {
  it.runIf(process.platform === "linux")(
    "run behind the main thread for a core when asked: their nice value is raised, the main thread's is not",
    async () => {
      const main = await mainStore();
      await main.addNodes(3);
      const before = getPriority(0);
      const threads = await threadsFor(main, 2, 5);
      for (const s of await threads.stats()) expect(s.nice).toBe(Math.max(before, 5));
      // Per thread: this (the main) thread keeps its own.
      expect(getPriority(0)).toBe(before);
      expect(getPriority()).toBe(before);
      // And level with it by default.
      const level = await threadsFor(main, 1);
      for (const s of await level.stats()) expect(s.nice).toBe(before);
    },
  );
});

describe.each([1, 2])("scheduler threads (%i workers)", (workers) => {
  it("replicas start from the main store's snapshot and hold its tables at its index", async () => {
    const main = await mainStore();
    await main.addNodes(50);
    // Placed before the snapshot: the replica shares each version's job among its allocations again.
    await main.placeInProcess("before-snapshot", 5);
    await main.placeInProcess("before-snapshot", 8);
    await main.store.snapshot();
    // Records after the snapshot are replayed from the log.
    await main.addNodes(20);
    const threads = await threadsFor(main, workers);
    const stats = await threads.stats();
    for (const s of stats) {
      expect(s.startup.snapshotIndex).toBeGreaterThan(0);
      expect(s.startup.replayed).toBeGreaterThan(0);
      expect(s.appliedIndex).toBe(main.store.appliedIndex);
      expect(s.rows.nodes).toBe(70);
      // The audit trail is not replicated.
      expect(s.rows.history).toBeUndefined();
    }
    const index = main.store.appliedIndex;
    for (const h of await threads.hashes(index)) expect(h).toEqual({ index, hash: mainHash(main) });
    // And they follow what is applied after.
    await main.addNodes(3);
    const later = main.store.appliedIndex;
    for (const h of await threads.hashes(later)) expect(h).toEqual({ index: later, hash: mainHash(main) });
  });

  it("computes the plan the in-process scheduler computes, which the main thread appends", async () => {
    const main = await mainStore();
    await main.addNodes(40);
    const evalID = await main.registerJob("web", 30);
    const threads = await threadsFor(main, workers);
    const evaluation = main.tables.evals.get(evalID)!;
    const nowMs = Date.now();

    const inProcess = scheduleGeneric(
      { tables: main.tables, readyNodes: new ReadyNodes(main.tables.nodes), nowMs, newID: randomUUID },
      evaluation,
      { attempt: 0 },
    );
    const index = main.store.appliedIndex;
    const outcome = await threads.schedule({ evaluation, minIndex: index, nowMs, attempt: 0 });
    expect(outcome.atIndex).toBe(index);
    expect(outcome.noOp).toBe(false);
    expect(outcome.failedTGAllocs).toBeNull();
    expect(outcome.queuedAllocs).toEqual(inProcess.queuedAllocs);
    const expected: Record<string, string> = {};
    for (const p of inProcess.plan.placements) expected[p.Name] = p.NodeID;

    const cause = planCause(main.tables, evalID);
    const records = outcome.planRecords.map((b) => unpackPlain(b) as AllocsPlanApplied);
    expect(placementsOf(records)).toEqual(expected);
    // The encoded path writes exactly what the codec writes for the same drafts.
    const stamp = { at: 1_700_000_000_000, by: ACTOR };
    const hex = (b: Uint8Array) => Buffer.from(b).toString("hex");
    const written = planWritables(main.codec, outcome, cause).map((w) =>
      isEncoded(w) ? w.encode(stamp) : main.codec.encode({ ...w, ...stamp }),
    );
    expect(written.map(hex)).toEqual(
      records.map((data) =>
        hex(main.codec.encode({ type: "AllocsPlanApplied", v: 1, cause, data, ...stamp })),
      ),
    );

    const result = await submit(main, outcome);
    expect(result).toMatchObject({ fullCommit: true, progress: true, placedByGroup: { g: 30 } });
    const last = result.index;
    const allocs = main.store.table<AllocRow>("allocs").by("job", "default\u0000web");
    expect(Object.fromEntries(allocs.map((a) => [a.Name, a.NodeID]))).toEqual(expected);
    expect(placedByGroup(outcome, main.tables.allocs).placedByGroup).toEqual({ g: 30 });
    for (const h of await threads.hashes(last)) expect(h).toEqual({ index: last, hash: mainHash(main) });
  });

  it("plans computed at one index race; apply refuses the loser, which re-plans at the new index", async () => {
    const main = await mainStore();
    // Two nodes of 8,000 MHz: room for one job of 10 × 1,500 MHz, not two.
    await main.addNodes(2);
    const a = await main.registerJob("a", 10, 1_500);
    const b = await main.registerJob("b", 10, 1_500);
    const threads = await threadsFor(main, workers);
    const index = main.store.appliedIndex;
    const nowMs = Date.now();
    const ask = (id: string, minIndex: number, attempt: number) =>
      threads.schedule({ evaluation: main.tables.evals.get(id)!, minIndex, nowMs, attempt });
    const [pa, pb] = await Promise.all([ask(a, index, 0), ask(b, index, 0)]);
    expect([pa.atIndex, pb.atIndex]).toEqual([index, index]);
    expect(pb.failedTGAllocs).toBeNull();
    const ra = await submit(main, pa);
    expect(ra.fullCommit).toBe(true);
    const rb = await submit(main, pb);
    expect(rb.fullCommit).toBe(false);
    expect(rb.refusedNodes.length).toBeGreaterThan(0);
    // Nomad's RefreshIndex: computed again no earlier than what the refused plan was checked against.
    const again = await ask(b, rb.index, 1);
    expect(again.atIndex).toBeGreaterThanOrEqual(rb.index);
    expect(again.failedTGAllocs).not.toBeNull();
    for (const node of main.tables.nodes.all()) {
      const cpu = main.tables.allocs
        .by("node", node.ID)
        .filter((x) => x.DesiredStatus === "run")
        .reduce((n, x) => n + allocUsage(x).cpu, 0);
      expect(cpu).toBeLessThanOrEqual(8_000);
    }
  });

  it("sends the requests of one turn to a thread in one message, each answered with its own plan", async () => {
    const main = await mainStore();
    await main.addNodes(20);
    const jobs = ["t0", "t1", "t2", "t3", "t4", "t5"];
    const sizes = new Map(jobs.map((id, i) => [id, i + 1]));
    const evals: string[] = [];
    for (const id of jobs) evals.push(await main.registerJob(id, sizes.get(id)!));
    const threads = await threadsFor(main, workers);
    const before = threads.forwarding;
    const index = main.store.appliedIndex;
    const nowMs = Date.now();
    const outcomes = await Promise.all(
      evals.map((id) =>
        threads.schedule({ evaluation: main.tables.evals.get(id)!, minIndex: index, nowMs, attempt: 0 }),
      ),
    );
    const after = threads.forwarding;
    expect(after.scheduleRequests - before.scheduleRequests).toBe(jobs.length);
    // One message per thread at most (the least busy thread takes each request in turn).
    expect(after.scheduleMessages - before.scheduleMessages).toBeLessThanOrEqual(workers);
    for (const [i, outcome] of outcomes.entries()) {
      expect(outcome.evalID).toBe(evals[i]);
      expect(outcome.atIndex).toBeGreaterThanOrEqual(index);
      expect(Object.values(outcome.placed).flat()).toHaveLength(sizes.get(jobs[i]!)!);
    }
  });

  it("waits for the index it is asked to compute at", async () => {
    const main = await mainStore();
    await main.addNodes(5);
    const threads = await threadsFor(main, workers);
    const evalID = await main.registerJob("late", 3);
    // Asked for an index not yet written: the replica computes once it has applied it.
    const minIndex = main.store.appliedIndex + 1;
    const asked = threads.schedule({
      evaluation: main.tables.evals.get(evalID)!,
      minIndex,
      nowMs: Date.now(),
      attempt: 0,
    });
    await new Promise((r) => setTimeout(r, 50));
    await main.addNodes(1);
    const outcome = await asked;
    expect(outcome.atIndex).toBeGreaterThanOrEqual(minIndex);
    expect(outcome.timings.waitMs).toBeGreaterThan(10);
    expect(Object.values(outcome.placed).flat()).toHaveLength(3);
  });

  it("signs workload identities with the key it is sent, as the event loop would", async () => {
    const main = await mainStore();
    const threads = await threadsFor(main, workers);
    const { signingKey } = await rootKeyMaterial("key-1", randomBytes(32));
    const claims = (task: string) =>
      identityClaims({ ID: "a1", Namespace: "default", JobID: "web" }, null, task, 1);
    const inputs = ["web", "sidecar"].map((task) => signingInput("key-1", claims(task)));
    const signatures = await threads.sign(signingKey, inputs);
    expect(signatures.map((sig, i) => jwtOf(inputs[i]!, sig))).toEqual(
      ["web", "sidecar"].map((task) => signIdentity("key-1", signingKey, claims(task))),
    );
  });

  it("replicas started while the store keeps applying end up at its index", async () => {
    const main = await mainStore();
    await main.addNodes(100);
    const threads = new SchedulerThreads({ workers, store: main.store, logger: quiet });
    opened.push(threads);
    // Writes land while the replicas replay the log (no snapshot) and as they go live.
    let writing = true;
    const writes = (async () => {
      for (let i = 0; writing || i < 5; i++) await main.registerJob(`busy-${i}`, 2);
    })();
    await main.startThreads(threads);
    writing = false;
    await writes;
    const index = main.store.appliedIndex;
    for (const h of await threads.hashes(index)) expect(h).toEqual({ index, hash: mainHash(main) });
  });
});

describe("a lost scheduler thread", () => {
  it("fails its requests and is replaced by a fresh replica", async () => {
    const main = await mainStore();
    await main.addNodes(10);
    const threads = await threadsFor(main, 1);
    // A record past the next one: the replica would have a gap, so the thread goes.
    threads.applied([{ index: main.store.appliedIndex + 5, bytes: new Uint8Array([0xc0]) }]);
    await threads.whenReady();
    await main.addNodes(2);
    const index = main.store.appliedIndex;
    expect(await threads.hashes(index)).toEqual([{ index, hash: mainHash(main) }]);
  });
});

describe.each([1, 2])("records held for a later post (%i workers)", (workers) => {
  async function holding(main: MainStore, hold: { recordsHoldMs?: number; recordsHoldBytes?: number }) {
    const threads = new SchedulerThreads({ workers, store: main.store, logger: quiet, ...hold });
    opened.push(threads);
    return main.startThreads(threads);
  }
  const turn = () => new Promise((r) => setImmediate(r));

  it("posts records of several writes together, with the request that follows them", async () => {
    const main = await mainStore();
    await main.addNodes(5);
    const evalID = await main.registerJob("held", 2);
    const threads = await holding(main, { recordsHoldMs: 60_000 });
    const before = threads.forwarding;
    await main.addNodes(1);
    await main.addNodes(1);
    await turn();
    // Two writes, two applied batches, each in its own turn: nothing posted yet.
    expect(threads.forwarding.messages).toBe(before.messages);
    const index = main.store.appliedIndex;
    const outcome = await threads.schedule({
      evaluation: main.tables.evals.get(evalID)!,
      minIndex: index,
      nowMs: Date.now(),
      attempt: 0,
    });
    expect(outcome.atIndex).toBeGreaterThanOrEqual(index);
    const after = threads.forwarding;
    // One message per thread carried both writes' records, two each (the request rode on one of them).
    expect(after.messages - before.messages).toBe(workers);
    expect(after.records - before.records).toBe(4 * workers);
  });

  it("sends held records before a hash question, which then waits for no timer", async () => {
    const main = await mainStore();
    await main.addNodes(3);
    const threads = await holding(main, { recordsHoldMs: 60_000 });
    await main.addNodes(2);
    const index = main.store.appliedIndex;
    for (const h of await threads.hashes(index)) expect(h).toEqual({ index, hash: mainHash(main) });
  });

  it("posts held records within the hold time, and at the end of the turn past the byte bound", async () => {
    const main = await mainStore();
    await main.addNodes(3);
    const timed = await holding(main, { recordsHoldMs: 20 });
    let before = timed.forwarding.messages;
    await main.addNodes(1);
    await new Promise((r) => setTimeout(r, 200));
    expect(timed.forwarding.messages - before).toBe(workers);
    await timed.close();

    const bounded = await holding(main, { recordsHoldMs: 60_000, recordsHoldBytes: 1 });
    before = bounded.forwarding.messages;
    await main.addNodes(1);
    await turn();
    expect(bounded.forwarding.messages - before).toBe(workers);
  });
});
