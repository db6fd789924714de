import { GCProfiler, getHeapStatistics, setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { pino } from "pino";
import { filter } from "rxjs";
import { describe, expect, it } from "vitest";
import { createProjections } from "../../projections/index.ts";
import { EnvelopeCodec } from "../../src/codec/envelope-codec.ts";
import { openFileLogReadOnly } from "../../src/log/file/index.ts";
import { MemoryLog } from "../../src/log/memory-log.ts";
import { Store } from "../../src/store/store.ts";
import { type IndexedRow, Table } from "../../src/store/table.ts";
import type { Envelope } from "../../streams/event-schema.ts";
import { allSchemas } from "../../streams/index.ts";

/**
 * The figures docs/architecture.md ("The cost of applying a plan record")
 * quotes for applying a placement burst's records: a kept log (a load
 * bench run's, `--keep-data`: its log/ directory) replayed into fresh
 * stores with a change$ subscriber, the time and bytes of each record
 * taken by type. Run on demand only:
 * CHRONOMAD_APPLY_FIGURES=/path/to/log npx vitest run test/projections/apply-figures.test.ts
 * (CHRONOMAD_APPLY_FIGURES_RUNS: replays, 5 unless set;
 * CHRONOMAD_APPLY_FIGURES_SUBSCRIBERS: change$ subscribers, 12 unless set).
 */
const dir = process.env.CHRONOMAD_APPLY_FIGURES;
if (!dir) console.warn("apply figures skipped: set CHRONOMAD_APPLY_FIGURES to a kept log directory");
const RUNS = Number(process.env.CHRONOMAD_APPLY_FIGURES_RUNS ?? 5);
const SUBSCRIBERS = Number(process.env.CHRONOMAD_APPLY_FIGURES_SUBSCRIBERS ?? 12);

interface TypeCost {
  records: number;
  /** Placements (plan records) or allocation entries (client updates). */
  entries: number;
  ms: number;
  /** Process CPU (user + system, every thread: GC helpers too), ms: steadier than `ms` on a loaded machine. */
  cpuMs: number;
  /** Bytes allocated, over the records during which no GC ran (the heap only grew). */
  bytes: number;
  entriesMeasured: number;
}

/** How many allocations a record places or reports. */
function entriesOf(e: Envelope): number {
  const data = e.data as { Placed?: unknown[]; Placements?: unknown[]; Allocs?: unknown[] };
  if (e.type === "AllocsPlanApplied") return (data.Placed?.length ?? 0) + (data.Placements?.length ?? 0);
  if (e.type === "AllocClientUpdated") return data.Allocs?.length ?? 0;
  return 0;
}

/**
 * The table alone: a replay's final rows of `name`, in creation order, put
 * into a fresh table of the same spec, three times; process CPU a put.
 * Steadier than the replay's figures on a loaded machine (no decoding, no
 * projections), for changes to Table and its structures.
 */
function tablePuts(store: Store, name: string): string {
  const source = store.table<IndexedRow>(name);
  const rows = [...source.list()];
  const cpu: string[] = [];
  for (let round = 0; round < 3; round++) {
    const fresh = new Table<IndexedRow>(source.spec);
    const start = process.cpuUsage();
    for (const row of rows) fresh.put(row, row.CreateIndex);
    const used = process.cpuUsage(start);
    cpu.push((((used.user + used.system) / rows.length) as number).toFixed(2));
  }
  return `${name} ${rows.length} puts, CPU ${cpu.join(" / ")} µs a put`;
}

/**
 * Node.GetClientAllocs' table read (`allocs.by("node", …)`) of every node,
 * three rounds: process CPU a read. The first round follows the replay's
 * last change of each node's allocations, as a poll woken by a placement;
 * the next ones read sets unchanged since, as the poll's first run after
 * its answer (a client's status updates change no node's set). Then one
 * new row on each node (a copy of one of its allocations under a new ID,
 * put into the table directly, untimed) and every node read again, as a
 * poll woken by a placement: the last figure. It changes the table: run
 * it last.
 */
function nodeReads(store: Store): string {
  const allocs = store.table<IndexedRow & { ID: string }>("allocs");
  const nodes = [...store.table<IndexedRow & { ID: string }>("nodes").all()].map((n) => n.ID);
  const cpu: string[] = [];
  let rows = 0;
  for (let round = 0; round < 3; round++) {
    rows = 0;
    const start = process.cpuUsage();
    for (const id of nodes) rows += allocs.by("node", id).length;
    const used = process.cpuUsage(start);
    cpu.push(((used.user + used.system) / nodes.length).toFixed(2));
  }
  for (const id of nodes) {
    const [some] = allocs.by("node", id);
    if (some) allocs.put({ ...some, ID: `${some.ID.slice(0, 8)}-new` }, some.ModifyIndex);
  }
  const start = process.cpuUsage();
  for (const id of nodes) allocs.by("node", id);
  const used = process.cpuUsage(start);
  cpu.push(`after a new row ${((used.user + used.system) / nodes.length).toFixed(2)}`);
  return `node reads: ${nodes.length} nodes, ${(rows / nodes.length).toFixed(1)} rows a node, CPU ${cpu.join(" / ")} µs a read`;
}

/** One replay of `log` into fresh projections; per record type, from one decode to the next. */
async function replay(
  log: MemoryLog,
  gc: () => void,
): Promise<{ byType: Map<string, TypeCost>; hash: string; puts: string }> {
  const codec = new EnvelopeCodec(allSchemas);
  const decode = codec.decode.bind(codec);
  const byType = new Map<string, TypeCost>();
  let last: { cost: TypeCost; t: number; cpu: NodeJS.CpuUsage; used: number; entries: number } | undefined;
  const close = () => {
    if (!last) return;
    const used = getHeapStatistics().used_heap_size;
    last.cost.ms += performance.now() - last.t;
    const cpu = process.cpuUsage(last.cpu);
    last.cost.cpuMs += (cpu.user + cpu.system) / 1000;
    if (used >= last.used) {
      last.cost.bytes += used - last.used;
      last.cost.entriesMeasured += last.entries;
    }
  };
  // The store decodes each record before applying it: a record's cost runs
  // from its decode to the next one's (the batch's bookkeeping included).
  codec.decode = (bytes: Uint8Array): Envelope => {
    close();
    const used = getHeapStatistics().used_heap_size;
    const t = performance.now();
    const cpu = process.cpuUsage();
    const e = decode(bytes);
    let cost = byType.get(e.type);
    if (!cost) {
      cost = { records: 0, entries: 0, ms: 0, cpuMs: 0, bytes: 0, entriesMeasured: 0 };
      byType.set(e.type, cost);
    }
    const entries = entriesOf(e);
    cost.records++;
    cost.entries += entries;
    last = { cost, t, cpu, used, entries };
    return e;
  };
  const store = new Store({
    log,
    codec,
    projections: createProjections().all,
    logger: pino({ level: "silent" }),
  });
  // As a live server: change$ has a dozen subscribers or more (services,
  // watches, the event hub, the history store), some behind a filter.
  const subs = Array.from({ length: SUBSCRIBERS }, (_, i) =>
    (i % 2 === 0 ? store.change$ : store.change$.pipe(filter((c) => c.table === "nodes"))).subscribe(
      () => {},
    ),
  );
  // Scavenges' count and time: a scavenge copies what survives it, so
  // their time follows the bytes the records leave alive, not those they
  // allocate.
  const profiler = new GCProfiler();
  profiler.start();
  await store.start();
  close();
  const minor = profiler.stop().statistics.filter((g) => g.gcType === "Scavenge");
  // What they copied, steadier than their time on a shared machine: the
  // survivors left in the young generation and the growth of the old one.
  const space = (g: (typeof minor)[number]["afterGC"], name: string) =>
    g.heapSpaceStatistics.find((s) => s.spaceName === name)?.spaceUsedSize ?? 0;
  let copied = 0;
  for (const g of minor)
    copied += space(g.afterGC, "new_space") + space(g.afterGC, "old_space") - space(g.beforeGC, "old_space");
  const scavenges = `${minor.length} scavenges ${(minor.reduce((t, g) => t + g.cost, 0) / 1000).toFixed(0)} ms, copied ${(copied / 2 ** 20).toFixed(0)} MiB`;
  gc();
  const retained = `heap after a full GC ${(getHeapStatistics().used_heap_size / 2 ** 20).toFixed(1)} MiB`;
  for (const sub of subs) sub.unsubscribe();
  const hash = store.hash();
  const puts = `${scavenges}; ${retained}; ${tablePuts(store, "allocs")}; ${tablePuts(store, "evals")}; ${nodeReads(store)}`;
  await store.stop();
  return { byType, hash, puts };
}

describe.skipIf(!dir)("applying a burst's records (figures)", () => {
  it("reports µs and bytes per placement and per client entry", async () => {
    setFlagsFromString("--expose-gc");
    const gc = runInNewContext("gc") as () => void;
    const source = await openFileLogReadOnly(dir!);
    const log = new MemoryLog();
    for await (const batch of source.read(1, { maxBatch: 4096 })) await log.append(batch.map((r) => r.bytes));
    await source.close();
    const hashes = new Set<string>();
    const lines: string[] = [];
    for (let run = 0; run < RUNS; run++) {
      gc();
      const { byType, hash, puts } = await replay(log, gc);
      hashes.add(hash);
      const plan = byType.get("AllocsPlanApplied");
      const client = byType.get("AllocClientUpdated");
      const per = (c: TypeCost | undefined) =>
        c
          ? `${((c.ms * 1000) / c.entries).toFixed(1)} µs (CPU ${((c.cpuMs * 1000) / c.entries).toFixed(1)} µs), ${Math.round(c.bytes / c.entriesMeasured)} B an entry (${c.records} records, ${c.entries} entries, ${c.ms.toFixed(0)} ms)`
          : "none";
      let total = 0;
      for (const c of byType.values()) total += c.ms;
      lines.push(
        `run ${run + 1}: plan ${per(plan)}; client ${per(client)}; all records ${total.toFixed(0)} ms; hash ${hash.slice(0, 12)}; ${puts}`,
      );
    }
    console.log(lines.join("\n"));
    expect(hashes.size).toBe(1);
  }, 600_000);
});
