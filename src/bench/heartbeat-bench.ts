import { randomUUID } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pino } from "pino";
import { newAllocation } from "../../streams/allocs.ts";
import { loadConfig } from "../config.ts";
import { type RunningServer, startServer } from "../server.ts";
import { writeEvents } from "../store/writer.ts";
import { load } from "./http-load.ts";
import type { LoadCall } from "./http-load-worker.ts";
import { minimalAllocJob } from "./minimal-alloc-job.ts";
import { type CallingNode, heartbeatCall, registerCall } from "./node-rpc-calls.ts";
import { percentile } from "./percentile.ts";

export interface HeartbeatFigures {
  readonly nodes: number;
  readonly heartbeats_per_s: number;
  readonly heartbeat_p50_ms: number;
  readonly heartbeat_p99_ms: number;
  /** Log records written while the heartbeats ran: 0, since a heartbeat that changes nothing is not logged. */
  readonly heartbeat_log_records: number;
  readonly alloc_updates: number;
  /** Log records per 1,000 client alloc updates arriving at a steady pace (50 clients in flight). */
  readonly alloc_update_events_per_1000: number;
  readonly alloc_update_p99_ms: number;
  /** The same, with all 1,000 updates arriving at once. */
  readonly alloc_update_burst_events_per_1000: number;
}

type Node = CallingNode;

/**
 * Client heartbeats over real HTTP against a server with `nodes` registered
 * nodes (Node.UpdateStatus from a load generator in a worker thread), and
 * how many log records the 50 ms coalescing turns 1,000 Node.UpdateAlloc
 * calls into.
 */
export async function benchHeartbeats(
  options: { nodes?: number; concurrency?: number; durationMs?: number; warmupMs?: number } = {},
): Promise<HeartbeatFigures> {
  const count = options.nodes ?? 5_000;
  const dir = await mkdtemp(join(tmpdir(), "chronomad-bench-heartbeat-"));
  const config = await loadConfig(
    ["--http-addr", "127.0.0.1:0", "--data-dir", dir, "--log-level", "silent"],
    {},
  );
  const server = await startServer(config, { logger: pino({ level: "silent" }) });
  const url = `http://${server.address}`;
  try {
    const nodes = Array.from({ length: count }, () => ({ id: randomUUID(), secret: randomUUID() }));
    await load(url, nodes.map(registerCall), { concurrency: 64 });
    await load(url, nodes.map(heartbeatCall), { concurrency: 64 });

    const before = server.log.lastIndex();
    const beats = await load(url, nodes.map(heartbeatCall), {
      concurrency: options.concurrency ?? 16,
      durationMs: options.durationMs ?? 5_000,
      warmupMs: options.warmupMs ?? 1_000,
    });
    const heartbeatRecords = server.log.lastIndex() - before;

    // 1,000 updates, or half the nodes each (paced, then burst) in a small run.
    const updates = Math.min(1_000, Math.floor(count / 2));
    const paced = await allocUpdates(server, url, nodes.slice(0, updates), 50);
    const burst = await allocUpdates(server, url, nodes.slice(updates, 2 * updates), updates);
    return {
      nodes: count,
      heartbeats_per_s: Math.round(beats.latencies.length / beats.seconds),
      heartbeat_p50_ms: percentile([...beats.latencies], 0.5),
      heartbeat_p99_ms: percentile([...beats.latencies], 0.99),
      heartbeat_log_records: heartbeatRecords,
      alloc_updates: updates,
      alloc_update_events_per_1000: Math.round((paced.records / updates) * 1000),
      alloc_update_p99_ms: paced.p99,
      alloc_update_burst_events_per_1000: Math.round((burst.records / updates) * 1000),
    };
  } finally {
    await server.close();
    await rm(dir, { recursive: true, force: true });
  }
}

/** Places one allocation on each node (as the plan applier will), then has each node report it running. */
async function allocUpdates(server: RunningServer, url: string, nodes: readonly Node[], concurrency: number) {
  const now = Date.now();
  const allocs = nodes.map((n) =>
    newAllocation({
      ID: randomUUID(),
      Namespace: "default",
      JobID: `job-${n.id.slice(0, 8)}`,
      TaskGroup: "web",
      NodeID: n.id,
      Job: minimalAllocJob(`job-${n.id.slice(0, 8)}`, [{ Name: "web", Count: 1 }]),
      CreateTime: now * 1e6,
    }),
  );
  const { outcomes } = await writeEvents(server.store, now, { kind: "server", id: "bench" }, [
    {
      type: "AllocsPlanApplied",
      v: 1,
      data: { EvalID: "", Placed: allocs, Updated: [], Stopped: [], Preempted: [] },
    },
  ]);
  if (outcomes[0]?.status !== "applied") throw new Error(`placing the benchmark allocations failed`);
  const calls: LoadCall[] = allocs.map((a, i) => ({
    path: "/v1/rpc/Node.UpdateAlloc",
    token: nodes[i]!.secret,
    body: JSON.stringify({
      Alloc: [{ ID: a.ID, NodeID: a.NodeID, ClientStatus: "running", TaskStates: {} }],
    }),
  }));
  const before = server.log.lastIndex();
  const result = await load(url, calls, { concurrency });
  return { records: server.log.lastIndex() - before, p99: percentile([...result.latencies], 0.99) };
}
