import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pino } from "pino";
import type { HistoryEntry, HistoryRow } from "../../projections/history.ts";
import { createProjections } from "../../projections/index.ts";
import type { AllocationSpec, ClientAllocUpdate } from "../../streams/allocs.ts";
import { newAllocation } from "../../streams/allocs.ts";
import type { Envelope } from "../../streams/event-schema.ts";
import { GARBAGE_COLLECTED_VERSION } from "../../streams/gc.ts";
import { allSchemas } from "../../streams/index.ts";
import { EnvelopeCodec } from "../codec/envelope-codec.ts";
import { loadConfig } from "../config.ts";
import { openLog } from "../log/open-log.ts";
import { type RunningServer, startServer } from "../server.ts";
import { Store } from "../store/store.ts";
import { readyNodeDrafts } from "./bench-nodes.ts";
import { minimalAllocJob } from "./minimal-alloc-job.ts";
import { percentile } from "./percentile.ts";

export interface HistoryBenchOptions {
  /** Allocations, each given `transitionsPerAlloc` client updates. */
  readonly allocs: number;
  readonly transitionsPerAlloc: number;
  /** Transitions of the one allocation whose history is read (at least transitionsPerAlloc). */
  readonly hotTransitions: number;
  /** Client updates per AllocClientUpdated record. */
  readonly allocsPerRecord: number;
  /** How many times the hot allocation's history is read. */
  readonly reads: number;
  /**
   * End every allocation complete and garbage-collect it, as a long-lived
   * cluster's allocations come and go: what is left in the heap is then
   * history's, not the allocations' rows.
   */
  readonly collect?: boolean;
}

export interface HistoryBenchFigures {
  readonly transitions: number;
  readonly writeSeconds: number;
  /** A fresh server on an empty log, after full collections. */
  readonly emptyHeapMB: number;
  readonly emptyRssMB: number;
  /** The same server restarted on the written log (from its shutdown snapshot), after full collections. */
  readonly restartedHeapMB: number;
  readonly restartedRssMB: number;
  readonly heapGrowthMB: number;
  readonly restartSeconds: number;
  /** Allocations in the restarted server's table (0 when they were collected). */
  readonly liveAllocs: number;
  /** Entries in the hot allocation's history, and the time to read it whole over HTTP. */
  readonly hotEntries: number;
  readonly readWholeP50Ms: number;
  readonly readWholeP99Ms: number;
  /** The newest 20 entries (`reverse=true&per_page=20`). */
  readonly readNewestPageP50Ms: number;
  readonly readNewestPageP99Ms: number;
  /** 1 when the answer after the restart equals the entries computed by a replay (each change's, concatenated). */
  readonly sameAnswer: number;
}

const actor = { kind: "server", id: "bench" } as const;
/** Small allocations, so that a few nodes hold many. */
const ALLOCS_PER_NODE = 500;
const RECORDS_PER_APPEND = 64;

/**
 * History at scale: `allocs × transitionsPerAlloc` allocation transitions
 * written straight to a server's log (client updates, encoded by the
 * server's codec, no HTTP), then the server restarted on it: its heap over
 * an empty server's, and the read latency of one allocation's history.
 * Run it with --expose-gc (in a fresh process).
 */
export async function benchHistory(
  options: HistoryBenchOptions,
  progress: (what: string) => void = () => {},
): Promise<HistoryBenchFigures> {
  const emptyDir = await mkdtemp(join(tmpdir(), "chronomad-bench-history-empty-"));
  const dir = await mkdtemp(join(tmpdir(), "chronomad-bench-history-"));
  try {
    const emptyServer = await serve(emptyDir);
    const empty = await settledMemory();
    await emptyServer.close();

    progress("writing the log");
    const started = performance.now();
    const { hot, transitions } = await writeLog(join(dir, "log"), options, progress);
    const writeSeconds = (performance.now() - started) / 1000;

    progress("computing the expected answer (a replay of the log)");
    const expected = await entriesOf(join(dir, "log"), `allocation\u0000${hot}`);

    progress("first start: the whole log replayed, the history store built");
    const first = await serve(dir);
    await first.close();

    progress("restarting");
    const restartStarted = performance.now();
    const second = await serve(dir);
    const restartSeconds = (performance.now() - restartStarted) / 1000;
    const restarted = await settledMemory();
    const liveAllocs = second.store.table("allocs").size;
    progress("reading");
    const url = `http://${second.address}/v1/allocation/${hot}/history`;
    const whole: number[] = [];
    const newest: number[] = [];
    let answer: unknown;
    for (let i = 0; i < options.reads; i++) {
      let t = performance.now();
      answer = await (await fetch(url)).json();
      whole.push(performance.now() - t);
      t = performance.now();
      await (await fetch(`${url}?reverse=true&per_page=20`)).arrayBuffer();
      newest.push(performance.now() - t);
    }
    await second.close();
    const mb = (n: number) => Math.round((n / 1024 / 1024) * 10) / 10;
    const ms = (xs: number[], p: number) => Math.round(percentile(xs, p) * 100) / 100;
    return {
      transitions,
      writeSeconds: Math.round(writeSeconds * 10) / 10,
      emptyHeapMB: mb(empty.heapUsed),
      emptyRssMB: mb(empty.rss),
      restartedHeapMB: mb(restarted.heapUsed),
      restartedRssMB: mb(restarted.rss),
      heapGrowthMB: mb(restarted.heapUsed - empty.heapUsed),
      restartSeconds: Math.round(restartSeconds * 10) / 10,
      hotEntries: expected.length,
      liveAllocs,
      readWholeP50Ms: ms(whole, 0.5),
      readWholeP99Ms: ms(whole, 0.99),
      readNewestPageP50Ms: ms(newest, 0.5),
      readNewestPageP99Ms: ms(newest, 0.99),
      sameAnswer: JSON.stringify(answer) === JSON.stringify(expected) ? 1 : 0,
    };
  } finally {
    await rm(dir, { recursive: true, force: true });
    await rm(emptyDir, { recursive: true, force: true });
  }
}

/**
 * The log, written straight to a file log with the server's codec: ready
 * nodes, the allocations placed on them, then the client updates. Returns
 * the ID of the allocation given `hotTransitions`.
 */
async function writeLog(
  dir: string,
  options: HistoryBenchOptions,
  progress: (what: string) => void,
): Promise<{ hot: string; transitions: number }> {
  const log = await openLog(`file:${dir}`, { logger: pino({ level: "silent" }), fsync: "never" });
  const codec = new EnvelopeCodec(allSchemas);
  let pending: Uint8Array[] = [];
  const put = async (e: Envelope) => {
    pending.push(codec.encode(e));
    if (pending.length >= RECORDS_PER_APPEND) {
      await log.append(pending);
      pending = [];
    }
  };
  const at = 1_763_800_000_000;
  const allocs: AllocationSpec[] = [];
  for (let n = 0; allocs.length < options.allocs; n++) {
    const { id, drafts } = readyNodeDrafts(n);
    for (const d of drafts) await put({ ...d, at, by: actor } as Envelope);
    const onNode = Math.min(ALLOCS_PER_NODE, options.allocs - allocs.length);
    for (let start = 0; start < onNode; start += 250) {
      const placed: AllocationSpec[] = [];
      for (let i = start; i < Math.min(onNode, start + 250); i++)
        placed.push(allocation(id, allocs.length + placed.length));
      await put({
        type: "AllocsPlanApplied",
        v: 1,
        at,
        by: actor,
        data: { EvalID: "", Placed: placed, Updated: [], Stopped: [], Preempted: [] },
      });
      allocs.push(...placed);
    }
  }
  let transitions = 0;
  const total = options.allocs * options.transitionsPerAlloc;
  let reported = 0;
  for (let round = 0; round < options.transitionsPerAlloc; round++) {
    for (let i = 0; i < allocs.length; i += options.allocsPerRecord) {
      const batch = allocs.slice(i, i + options.allocsPerRecord);
      await put(updateRecord(batch, round));
      transitions += batch.length;
    }
    if (transitions - reported >= total / 10) {
      reported = transitions;
      progress(`${transitions.toLocaleString("en")} transitions written`);
    }
  }
  const hot = allocs[0]!;
  for (let round = options.transitionsPerAlloc; round < options.hotTransitions; round++) {
    await put(updateRecord([hot], round));
    transitions++;
  }
  if (options.collect) {
    for (let i = 0; i < allocs.length; i += options.allocsPerRecord) {
      const batch = allocs.slice(i, i + options.allocsPerRecord);
      await put(updateRecord(batch, options.hotTransitions, "complete"));
      transitions += batch.length;
    }
    for (let i = 0; i < allocs.length; i += 1_000) {
      const AllocIDs = allocs.slice(i, i + 1_000).map((a) => a.ID);
      await put({
        type: "GarbageCollected",
        v: GARBAGE_COLLECTED_VERSION,
        at: at + options.hotTransitions + 1,
        by: actor,
        data: { Reason: "forced", EvalIDs: [], AllocIDs, Jobs: [] },
      });
    }
  }
  if (pending.length > 0) await log.append(pending);
  await log.close();
  return { hot: hot.ID, transitions };
}

/** One object's entries as the projection computes them: each change's, concatenated in log order. */
async function entriesOf(logDir: string, key: string): Promise<HistoryEntry[]> {
  const log = await openLog(`file:${logDir}`, { logger: pino({ level: "silent" }), fsync: "never" });
  const store = new Store({
    log,
    codec: new EnvelopeCodec(allSchemas),
    projections: createProjections().all,
    logger: pino({ level: "silent" }),
  });
  const entries: HistoryEntry[] = [];
  store.change$.subscribe((c) => {
    if (c.table === "history" && c.key === key && c.after !== undefined)
      for (const e of (c.after as HistoryRow).Latest) entries.push(e);
  });
  await store.start({ until: log.lastIndex() });
  await store.stop();
  await log.close();
  return entries;
}

async function serve(dir: string): Promise<RunningServer> {
  const args = ["--http-addr", "127.0.0.1:0", "--data-dir", dir, "--log-level", "silent", "--fsync", "never"];
  // Nodes written straight to the log heartbeat no one: long TTLs keep them ready for the run.
  args.push("--min-heartbeat-ttl", "1h", "--heartbeat-grace", "1h", "--failover-heartbeat-ttl", "1h");
  return startServer(await loadConfig(args, {}), { logger: pino({ level: "silent" }) });
}

function allocation(nodeID: string, i: number): AllocationSpec {
  const job = `web-${i % 50}`;
  return newAllocation({
    ID: `00000000-0000-4000-8000-${String(i).padStart(12, "0")}`,
    Namespace: "default",
    JobID: job,
    TaskGroup: "frontend",
    NodeID: nodeID,
    CreateTime: 1_763_800_000_000 * 1e6,
    Job: minimalAllocJob(job, [{ Name: "frontend", Count: 1 }]),
    AllocatedResources: {
      Tasks: { web: { Cpu: { CpuShares: 10 }, Memory: { MemoryMB: 16 } } },
      Shared: { DiskMB: 10, Networks: [] },
    },
  });
}

/** One client update per allocation, each changing its description: one history entry each. */
function updateRecord(
  allocs: readonly AllocationSpec[],
  round: number,
  status: "running" | "complete" = "running",
): Envelope {
  const at = 1_763_800_000_000 + round;
  const updates: ClientAllocUpdate[] = allocs.map((a) => ({
    ID: a.ID,
    NodeID: a.NodeID,
    ClientStatus: status,
    ClientDescription: `round ${round}`,
    TaskStates: { web: { State: status === "running" ? "running" : "dead", Failed: false, Restarts: 0 } },
    DeploymentStatus: null,
    NetworkStatus: null,
    ModifyTime: at * 1e6,
  }));
  return { type: "AllocClientUpdated", v: 1, at, by: actor, data: { Allocs: updates } };
}

/** Heap and RSS after full collections, once what the last work left behind is gone. */
async function settledMemory(): Promise<{ heapUsed: number; rss: number }> {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (!gc) throw new Error("the history benchmark needs --expose-gc");
  for (let i = 0; i < 4; i++) {
    gc();
    await new Promise((r) => setTimeout(r, 50));
  }
  const { heapUsed, rss } = process.memoryUsage();
  return { heapUsed, rss };
}
