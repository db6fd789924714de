import { EventEmitter } from "node:events";
import { GCProfiler, getHeapStatistics, setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import type { FastifyRequest } from "fastify";
import { pino } from "pino";
import { Subject } from "rxjs";
import { describe, expect, it } from "vitest";
import { runBlocking } from "../../src/api/blocking-query.ts";
import type { ApiContext } from "../../src/api/context.ts";
import { EnvelopeCodec } from "../../src/codec/envelope-codec.ts";
import { MemoryLog } from "../../src/log/memory-log.ts";
import type { Projection } from "../../src/store/projection.ts";
import { Store } from "../../src/store/store.ts";
import { Table } from "../../src/store/table.ts";
import { Watches } from "../../src/store/watches.ts";
import { allSchemas } from "../../streams/index.ts";
import type { NamespaceEvent } from "../../streams/namespaces.ts";

/**
 * The figures docs/architecture.md ("Client RPC cost") quotes for long
 * polls' watches: 5,000 polls of the Node.GetClientAllocs kind (a filtered
 * watch on the allocs' node index), batches that touch every node. Run on
 * demand only:
 * CHRONOMAD_WATCH_FIGURES=1 npx vitest run test/store/watches-figures.test.ts
 */
const enabled = process.env.CHRONOMAD_WATCH_FIGURES === "1";
if (!enabled) console.warn("watch figures skipped: set CHRONOMAD_WATCH_FIGURES=1 to take them");

const NODES = Number(process.env.CHRONOMAD_WATCH_FIGURES_NODES ?? 5_000);
const ROUNDS = 10;

interface Row {
  readonly ID: string;
  readonly NodeID: string;
  readonly AllocModifyIndex: number;
  readonly CreateIndex: number;
  readonly ModifyIndex: number;
}

/** As Node.GetClientAllocs' filter: only the server's changes of a node's allocations. */
function changesMap(before: unknown, after: unknown): boolean {
  const b = before as Row | undefined;
  const a = after as Row | undefined;
  return !b || !a || b.AllocModifyIndex !== a.AllocModifyIndex || b.NodeID !== a.NodeID;
}

/** One allocation per node; a NamespaceUpserted named "server" bumps every AllocModifyIndex, any other name only ModifyIndex (a client's update). */
async function setUp() {
  const allocs = new Table<Row>({ name: "allocs", key: (r) => r.ID, indexes: { node: (r) => r.NodeID } });
  const projection: Projection = {
    name: "allocs",
    version: 1,
    tables: [allocs],
    handles: new Set(["NamespaceUpserted"]),
    evolve(ctx, event) {
      const e = event as NamespaceEvent;
      const server = e.type === "NamespaceUpserted" && e.data.Namespace.Name === "server";
      for (let i = 0; i < NODES; i++) {
        const ID = `alloc-${i}`;
        const old = allocs.get(ID);
        const AllocModifyIndex = server || !old ? ctx.index : old.AllocModifyIndex;
        const CreateIndex = old?.CreateIndex ?? ctx.index;
        ctx.put(allocs, { ID, NodeID: `node-${i}`, AllocModifyIndex, CreateIndex, ModifyIndex: ctx.index });
      }
    },
  };
  const store = new Store({
    log: new MemoryLog(),
    codec: new EnvelopeCodec(allSchemas),
    projections: [projection],
    logger: pino({ level: "silent" }),
    applySliceMs: Number.POSITIVE_INFINITY,
  });
  await store.start();
  const watches = new Watches(store);
  const closing$ = new Subject<"closing">();
  const ctx = { watches, closing$ } as unknown as ApiContext;
  const by = { kind: "server", id: "figures" } as const;
  const write = async (Name: string) => {
    const Namespace = { Name, Description: "", Quota: "", Meta: null, Capabilities: null };
    return (await store.write({ type: "NamespaceUpserted", v: 1, at: 1, by, data: { Namespace } })).index;
  };
  return { store, allocs, ctx, closing$, write };
}

interface Cost {
  cpuUs: number;
  bytes: number;
  scavenges: number;
}

/** CPU (user + system, all threads) and bytes allocated (heap growth plus what GCs freed) of `phase`. */
async function measure(phase: () => Promise<void>): Promise<Cost> {
  // Collected first, so what the phase's GCs free is the phase's own.
  setFlagsFromString("--expose-gc");
  (runInNewContext("gc") as () => void)();
  const profiler = new GCProfiler();
  profiler.start();
  const used0 = getHeapStatistics().used_heap_size;
  const cpu0 = process.cpuUsage();
  await phase();
  const cpu = process.cpuUsage(cpu0);
  const used1 = getHeapStatistics().used_heap_size;
  const { statistics } = profiler.stop();
  let freed = 0;
  for (const gc of statistics)
    freed += gc.beforeGC.heapStatistics.usedHeapSize - gc.afterGC.heapStatistics.usedHeapSize;
  const scavenges = statistics.filter((gc) => gc.gcType === "Scavenge").length;
  return { cpuUs: cpu.user + cpu.system, bytes: used1 - used0 + freed, scavenges };
}

const turn = () => new Promise<void>((resolve) => setImmediate(resolve));

/** The whole scenario, in a store of its own; returns the report's lines. */
async function scenario(): Promise<string[]> {
  const { allocs, ctx, closing$, write } = await setUp();
  let index = await write("server");
  const per = (c: Cost, n: number) =>
    `${(c.cpuUs / n).toFixed(2)} µs, ${Math.round(c.bytes / n)} B (${c.scavenges} scavenges)`;
  const minus = (a: Cost, b: Cost): Cost => ({
    cpuUs: a.cpuUs - b.cpuUs,
    bytes: a.bytes - b.bytes,
    scavenges: a.scavenges - b.scavenges,
  });

  // The batches alone, nothing watching: what the others are measured above.
  const applyServer = await measure(async () => {
    for (let r = 0; r < ROUNDS; r++) index = await write("server");
  });
  const applyClient = await measure(async () => {
    for (let r = 0; r < ROUNDS; r++) index = await write("client");
  });

  const read = (node: string) => () => {
    const rows = allocs.by("node", node);
    const out: Record<string, number> = {};
    let max = 0;
    for (const a of rows) {
      out[a.ID] = a.AllocModifyIndex;
      if (a.ModifyIndex > max) max = a.ModifyIndex;
    }
    return { index: Math.max(rows.length === 0 ? allocs.index : max, 1), body: out };
  };
  let answered = 0;
  let stopped = false;
  const sockets = Array.from({ length: NODES }, () =>
    Object.assign(new EventEmitter(), { destroyed: false }),
  );
  const poll = async (i: number, from: number) => {
    const node = `node-${i}`;
    const socket = sockets[i]!;
    let minIndex = from;
    while (!stopped) {
      const request = { raw: { socket } } as unknown as FastifyRequest;
      const watch = [{ table: "allocs", index: "node", value: node, changes: changesMap }];
      const result = await runBlocking(ctx, request, { minIndex, waitMs: 600_000 }, watch, read(node));
      minIndex = result.index;
      answered++;
    }
  };

  const polls: Promise<void>[] = [];
  const arm = await measure(async () => {
    for (let i = 0; i < NODES; i++) polls.push(poll(i, index));
    await turn();
  });
  expect(answered).toBe(0);

  // Matched by every poll's bucket, refused by every filter: no wake.
  const filtered = await measure(async () => {
    for (let r = 0; r < ROUNDS; r++) index = await write("client");
    await turn();
  });
  expect(answered).toBe(0);

  const woken = await measure(async () => {
    for (let r = 1; r <= ROUNDS; r++) {
      index = await write("server");
      while (answered < r * NODES) await turn();
      // The last answers' polls armed again.
      await turn();
    }
  });
  expect(answered).toBe(ROUNDS * NODES);

  stopped = true;
  closing$.complete();
  await Promise.all(polls);
  const changes = ROUNDS * NODES;
  return [
    `apply alone, per change: server ${per(applyServer, changes)}; client ${per(applyClient, changes)}`,
    `per arm (a poll's first run, waiting): ${per(arm, NODES)}`,
    `per change matched, filtered out (less apply alone): ${per(minus(filtered, applyClient), changes)}`,
    `per wake (the read, answer, poll again; less apply alone): ${per(minus(woken, applyServer), changes)}`,
  ];
}

describe.skipIf(!enabled)("long poll watch figures", () => {
  it(`${NODES} Node.GetClientAllocs-like long polls, ${ROUNDS} batches touching every node`, async () => {
    // The first run warms the code up (and the pool's sizes); the second is the one reported.
    await scenario();
    console.info((await scenario()).join("\n"));
  });
});
