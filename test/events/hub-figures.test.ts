import { randomUUID } from "node:crypto";
import { GCProfiler, getHeapStatistics, setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { pino } from "pino";
import { describe, it } from "vitest";
import { createProjections, type Projections } from "../../projections/index.ts";
import { readyNodeDrafts } from "../../src/bench/bench-nodes.ts";
import { minimalAllocJob } from "../../src/bench/minimal-alloc-job.ts";
import { EnvelopeCodec } from "../../src/codec/envelope-codec.ts";
import { EventHub } from "../../src/events/event-hub.ts";
import { changeEvents, changesLine, frameLine } from "../../src/events/frames.ts";
import { TOPICS } from "../../src/events/topics.ts";
import { MemoryLog } from "../../src/log/memory-log.ts";
import type { Change } from "../../src/store/projection.ts";
import { type AppliedBatch, Store } from "../../src/store/store.ts";
import { type Draft, writeEvents } from "../../src/store/writer.ts";
import { type AllocationSpec, type ClientAllocUpdate, newAllocation } from "../../streams/allocs.ts";
import type { Envelope } from "../../streams/event-schema.ts";
import { allSchemas } from "../../streams/index.ts";
import { FakeStore } from "./fake-store.ts";

/**
 * What the event hub costs the main thread per applied change, with no
 * subscriber and with one: a placement burst's changes (plan records of
 * 1,000 placements on 5,000 nodes, then the clients' updates, 64 a record)
 * are captured once from a real store, then fed to a hub alone, so the
 * apply itself is not in the figures. Heavy: run on demand,
 * CHRONOMAD_HUB_FIGURES=1 npx vitest run test/events/hub-figures.test.ts
 */
const enabled = process.env.CHRONOMAD_HUB_FIGURES === "1";
const NODES = 5_000;
const PLANS = Number(process.env.CHRONOMAD_HUB_FIGURES_PLANS ?? 20);
const PER_PLAN = 1_000;
const PER_WINDOW = 64;
const ROUNDS = Number(process.env.CHRONOMAD_HUB_FIGURES_ROUNDS ?? 5);

const logger = pino({ level: "silent" });
const actor = { kind: "server", id: "figures" } as const;

function gc(): void {
  setFlagsFromString("--expose-gc");
  (runInNewContext("gc") as () => void)();
}

/** The burst's change$ and applied$ emissions, in order. */
async function capture(): Promise<{ log: MemoryLog; start: number; stream: (Change | AppliedBatch)[] }> {
  const log = new MemoryLog();
  const store = new Store({
    log,
    codec: new EnvelopeCodec(allSchemas),
    projections: createProjections().all,
    logger,
  });
  await store.start();
  const nodes: string[] = [];
  for (let start = 0; start < NODES; start += 500) {
    const drafts: Draft[] = [];
    for (let i = start; i < start + 500; i++) {
      const { id, drafts: node } = readyNodeDrafts(i);
      nodes.push(id);
      drafts.push(...node);
    }
    await writeEvents(store, Date.now(), actor, drafts);
  }
  const start = store.appliedIndex;
  const stream: (Change | AppliedBatch)[] = [];
  store.change$.subscribe((c) => stream.push(c));
  store.applied$.subscribe((b) => stream.push(b));
  const placed: AllocationSpec[] = [];
  let n = 0;
  for (let p = 0; p < PLANS; p++) {
    const allocs: AllocationSpec[] = [];
    for (let i = 0; i < PER_PLAN; i++, n++) allocs.push(allocation(nodes[n % NODES]!, n));
    placed.push(...allocs);
    const plan: Envelope = {
      type: "AllocsPlanApplied",
      v: 1,
      at: Date.now(),
      by: actor,
      data: { EvalID: "", Placed: allocs, Updated: [], Stopped: [], Preempted: [] },
    };
    await store.waitFor((await store.append([plan])).last);
  }
  for (let w = 0; w < placed.length; w += PER_WINDOW) {
    const at = Date.now();
    const updates = placed.slice(w, w + PER_WINDOW).map((a) => running(a, at));
    const window: Envelope = { type: "AllocClientUpdated", v: 1, at, by: actor, data: { Allocs: updates } };
    await store.waitFor((await store.append([window])).last);
  }
  await store.stop();
  return { log, start, stream };
}

function allocation(nodeID: string, i: number): AllocationSpec {
  const job = `web-${i % 50}`;
  return newAllocation({
    ID: randomUUID(),
    Namespace: "default",
    JobID: job,
    TaskGroup: "frontend",
    NodeID: nodeID,
    CreateTime: Date.now() * 1e6,
    Job: minimalAllocJob(job, [{ Name: "frontend", Count: 1 }]),
    AllocatedResources: {
      Tasks: { web: { Cpu: { CpuShares: 50 }, Memory: { MemoryMB: 64 } } },
      Shared: { DiskMB: 30, Networks: [] },
    },
  });
}

function running(a: AllocationSpec, at: number): ClientAllocUpdate {
  return {
    ID: a.ID,
    NodeID: a.NodeID,
    ClientStatus: "running",
    ClientDescription: "Tasks are running",
    TaskStates: {
      web: {
        State: "running",
        Failed: false,
        Restarts: 0,
        StartedAt: new Date(at).toISOString(),
        Events: [{ Type: "Started", Time: at * 1e6, DisplayMessage: "Task started by client" }],
      },
    },
    DeploymentStatus: null,
    NetworkStatus: null,
    ModifyTime: at * 1e6,
  };
}

type Mode = "detached" | "0 subscribers" | "1 subscriber" | "1 subscriber, changes=all";

interface Run {
  readonly cpuMs: number;
  readonly allocated: number;
  readonly scavenges: number;
  readonly gcMs: number;
}

function run(mode: Mode, start: number, stream: readonly (Change | AppliedBatch)[]): Run {
  const store = new FakeStore(start);
  // The server's other change$ and applied$ subscribers: the subjects' fan-out is not the hub's.
  store.changes.subscribe(() => {});
  store.applied.subscribe(() => {});
  const hub =
    mode === "detached"
      ? undefined
      : new EventHub({
          store: store as unknown as Store,
          codec: new EnvelopeCodec(allSchemas),
          createProjections: () => ({ all: [] }) as unknown as Projections,
          logger,
        });
  // The connection's work per frame (event-stream-connection.ts), topic `*`.
  if (mode === "1 subscriber")
    hub!.framesAfter(start).subscribe((f) => {
      if (f.Events.length > 0) frameLine(f, f.Events);
    });
  if (mode === "1 subscriber, changes=all")
    hub!.framesAfter(start).subscribe((f) => {
      const all = changeEvents(f);
      changesLine(
        f,
        all.map((_, i) => i),
      );
    });
  gc();
  const profiler = new GCProfiler();
  profiler.start();
  const used0 = getHeapStatistics().used_heap_size;
  const cpu0 = process.cpuUsage();
  for (const x of stream) {
    if ("table" in x) store.changes.next(x);
    else store.applied.next(x);
  }
  const cpu = process.cpuUsage(cpu0);
  const used1 = getHeapStatistics().used_heap_size;
  const { statistics } = profiler.stop();
  let freed = 0;
  let scavenges = 0;
  let gcUs = 0;
  for (const s of statistics) {
    freed += s.beforeGC.heapStatistics.usedHeapSize - s.afterGC.heapStatistics.usedHeapSize;
    if (s.gcType === "Scavenge") scavenges++;
    gcUs += s.cost;
  }
  hub?.stop();
  return {
    cpuMs: (cpu.user + cpu.system) / 1000,
    allocated: used1 - used0 + freed,
    scavenges,
    gcMs: gcUs / 1000,
  };
}

/**
 * The burst applied again by a store of its own from the log, hub attached
 * or not: GC over the apply, and what the hub still holds after it (the
 * heap after full collections, minus the detached run's).
 */
async function applied(mode: Mode, log: MemoryLog, start: number): Promise<Run & { retained: number }> {
  const store = new Store({
    log,
    codec: new EnvelopeCodec(allSchemas),
    projections: createProjections().all,
    logger,
  });
  await store.start({ until: start });
  // The server's other change$ subscribers: the store builds its Change objects for them anyway.
  store.change$.subscribe(() => {});
  const hub =
    mode === "detached"
      ? undefined
      : new EventHub({
          store,
          codec: new EnvelopeCodec(allSchemas),
          createProjections: () => createProjections(),
          logger,
        });
  if (mode === "1 subscriber")
    hub!.framesAfter(start).subscribe((f) => {
      if (f.Events.length > 0) frameLine(f, f.Events);
    });
  gc();
  const profiler = new GCProfiler();
  profiler.start();
  const used0 = getHeapStatistics().used_heap_size;
  const cpu0 = process.cpuUsage();
  await store.advanceTo(log.lastIndex());
  const cpu = process.cpuUsage(cpu0);
  const used1 = getHeapStatistics().used_heap_size;
  const { statistics } = profiler.stop();
  gc();
  gc();
  const retained = getHeapStatistics().used_heap_size;
  hub?.stop();
  await store.stop();
  return { ...summed(statistics, used1 - used0, cpu), retained };
}

function summed(statistics: GCStatistics[], grown: number, cpu: NodeJS.CpuUsage): Run {
  let freed = 0;
  let scavenges = 0;
  let gcUs = 0;
  for (const s of statistics) {
    freed += s.beforeGC.heapStatistics.usedHeapSize - s.afterGC.heapStatistics.usedHeapSize;
    if (s.gcType === "Scavenge") scavenges++;
    gcUs += s.cost;
  }
  return { cpuMs: (cpu.user + cpu.system) / 1000, allocated: grown + freed, scavenges, gcMs: gcUs / 1000 };
}

type GCStatistics = ReturnType<GCProfiler["stop"]>["statistics"][number];

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

describe.skipIf(!enabled)("event hub figures", () => {
  it("CPU and bytes per applied change, hub detached, with 0 and 1 subscriber", {
    timeout: 600_000,
  }, async () => {
    const { start, stream } = await capture();
    const changes = stream.filter((x): x is Change => "table" in x);
    const published = changes.filter((c) => TOPICS[c.table] !== undefined).length;
    const modes: Mode[] = ["detached", "0 subscribers", "1 subscriber", "1 subscriber, changes=all"];
    const runs = new Map<Mode, Run[]>(modes.map((m) => [m, []]));
    for (const m of modes) run(m, start, stream); // warm-up
    for (let r = 0; r < ROUNDS; r++) for (const m of modes) runs.get(m)!.push(run(m, start, stream));
    const base = runs.get("detached")!;
    const lines = [
      `${changes.length} changes (${published} published), ${stream.length - changes.length} batches, ${ROUNDS} rounds, medians; the hub's = mode - detached`,
    ];
    for (const m of modes) {
      const rs = runs.get(m)!;
      const cpu = median(rs.map((x) => x.cpuMs));
      const bytes = median(rs.map((x) => x.allocated));
      lines.push(
        `${m.padEnd(26)} cpu ${cpu.toFixed(1)} ms (${((1000 * (cpu - median(base.map((x) => x.cpuMs)))) / changes.length).toFixed(2)} µs/change), ` +
          `allocated ${(bytes / 1048576).toFixed(1)} MiB (${((bytes - median(base.map((x) => x.allocated))) / changes.length).toFixed(0)} B/change), ` +
          `scavenges ${median(rs.map((x) => x.scavenges))}, gc ${median(rs.map((x) => x.gcMs)).toFixed(1)} ms; ` +
          `cpu runs ${rs.map((x) => x.cpuMs.toFixed(0)).join(", ")}`,
      );
    }
    process.stdout.write(`\n${lines.join("\n")}\n`);
  });

  it("the burst applied through a store, hub detached, with 0 and 1 subscriber", {
    timeout: 900_000,
  }, async () => {
    const { log, start, stream } = await capture();
    const changes = stream.filter((x): x is Change => "table" in x).length;
    stream.length = 0;
    const modes: Mode[] = ["detached", "0 subscribers", "1 subscriber"];
    const runs = new Map<Mode, (Run & { retained: number })[]>(modes.map((m) => [m, []]));
    for (let r = 0; r < ROUNDS; r++) for (const m of modes) runs.get(m)!.push(await applied(m, log, start));
    const base = runs.get("detached")!;
    const lines = [`${changes} changes applied, ${ROUNDS} rounds, medians`];
    for (const m of modes) {
      const rs = runs.get(m)!;
      lines.push(
        `${m.padEnd(14)} cpu ${median(rs.map((x) => x.cpuMs)).toFixed(0)} ms (${rs.map((x) => x.cpuMs.toFixed(0)).join(", ")}), ` +
          `allocated ${(median(rs.map((x) => x.allocated)) / 1048576).toFixed(1)} MiB, ` +
          `scavenges ${median(rs.map((x) => x.scavenges))}, gc ${median(rs.map((x) => x.gcMs)).toFixed(0)} ms (${rs.map((x) => x.gcMs.toFixed(0)).join(", ")}), ` +
          `held after ${((median(rs.map((x) => x.retained)) - median(base.map((x) => x.retained))) / 1048576).toFixed(1)} MiB`,
      );
    }
    process.stdout.write(`\n${lines.join("\n")}\n`);
  });
});
