import { randomUUID } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pino } from "pino";
import type { AllocationSpec, ClientAllocUpdate } from "../../streams/allocs.ts";
import { newAllocation } from "../../streams/allocs.ts";
import type { Envelope } from "../../streams/event-schema.ts";
import { loadConfig } from "../config.ts";
import { FrameBuilder } from "../events/frames.ts";
import { startServer } from "../server.ts";
import type { Draft } from "../store/writer.ts";
import { writeEvents } from "../store/writer.ts";
import { readyNodeDrafts } from "./bench-nodes.ts";
import { epochMs, type FrameCounts } from "./event-stream-subscriber.ts";
import { minimalAllocJob } from "./minimal-alloc-job.ts";

/**
 * The server side of the event-stream benchmark, forked by it: a real
 * server whose memory is not shared with the subscribers, plus the writer
 * that feeds its log, driven over IPC. A second FrameBuilder on the store's
 * changes is the reference every subscriber's frames are checked against.
 */

export type Command =
  | { readonly op: "setup"; readonly nodes: number }
  | { readonly op: "write"; readonly records: number; readonly allocsPerRecord: number }
  | { readonly op: "expected"; readonly after: number; readonly upTo: number }
  | { readonly op: "memory" }
  | { readonly op: "cpu" }
  | { readonly op: "stop" };

export type Request = Command & { readonly id: number };

export interface Written {
  readonly first: number;
  readonly last: number;
  /** Epoch milliseconds (sub-millisecond) when the append resolved: durable, not yet applied. */
  readonly resolvedAt: number;
}

export interface Memory {
  readonly rss: number;
  readonly heapUsed: number;
  readonly external: number;
}

export type Reply = { readonly id: number; readonly error?: string; readonly value?: unknown };

const send = (message: unknown) => process.send!(message);
const actor = { kind: "server", id: "bench" } as const;

async function main(): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), "chronomad-bench-events-"));
  const args = ["--http-addr", "127.0.0.1:0", "--data-dir", dir, "--log-level", "silent"];
  // Measured is delivery, not the disk. Nodes written straight to the log
  // heartbeat no one: long TTLs keep them ready for the run.
  args.push("--fsync", "never", "--min-heartbeat-ttl", "1h", "--heartbeat-grace", "1h");
  args.push("--failover-heartbeat-ttl", "1h");
  const config = await loadConfig(args, {});
  const server = await startServer(config, { logger: pino({ level: "silent" }) });
  // Subscribed after the server's EventHub, so it has a frame before any subscriber can.
  const reference: FrameCounts = { indexes: [], events: [] };
  const builder = new FrameBuilder((f) => {
    reference.indexes.push(f.Index);
    reference.events.push(f.Events.length);
  });
  server.store.change$.subscribe((c) => builder.add(c));
  server.store.applied$.subscribe(() => builder.flush());

  let allocs: AllocationSpec[] = [];
  let next = 0;

  const handle = async (req: Request): Promise<unknown> => {
    switch (req.op) {
      case "setup":
        allocs = await setup(server.store, req.nodes);
        return server.store.appliedIndex;
      case "write": {
        const at = Date.now();
        const envelopes: Envelope[] = [];
        for (let r = 0; r < req.records; r++) {
          const updates: ClientAllocUpdate[] = [];
          for (let a = 0; a < req.allocsPerRecord; a++)
            updates.push(clientUpdate(allocs[next++ % allocs.length]!, at));
          envelopes.push({ type: "AllocClientUpdated", v: 1, at, by: actor, data: { Allocs: updates } });
        }
        const { first, last } = await server.store.append(envelopes);
        const written: Written = { first, last, resolvedAt: epochMs() };
        for (let i = first; i <= last; i++) {
          const outcome = await server.store.waitFor(i);
          if (outcome.status !== "applied") throw new Error(`record ${i} was not applied: ${outcome.status}`);
        }
        return written;
      }
      case "expected": {
        const from = reference.indexes.findIndex((i) => i > req.after);
        const to = reference.indexes.findLastIndex((i) => i <= req.upTo);
        if (from < 0 || to < from) return { indexes: [], events: [] } satisfies FrameCounts;
        return {
          indexes: reference.indexes.slice(from, to + 1),
          events: reference.events.slice(from, to + 1),
        } satisfies FrameCounts;
      }
      case "memory":
        return await settledMemory();
      case "cpu": {
        const { user, system } = process.cpuUsage();
        return (user + system) / 1000;
      }
      case "stop":
        await server.close();
        await rm(dir, { recursive: true, force: true });
        setImmediate(() => process.exit(0));
        return null;
    }
  };
  process.on("message", (req: Request) => {
    handle(req).then(
      (value) => send({ id: req.id, value } satisfies Reply),
      (err: Error) => send({ id: req.id, error: err.stack ?? err.message } satisfies Reply),
    );
  });
  // The parent going away (a failed bench) must not leave this server running.
  process.on("disconnect", () => process.exit(1));
  send({ id: 0, value: `http://${server.address}` } satisfies Reply);
}

/** `nodes` ready nodes with one running-to-be allocation each, written before anyone subscribes. */
async function setup(store: Parameters<typeof writeEvents>[0], count: number): Promise<AllocationSpec[]> {
  const allocs: AllocationSpec[] = [];
  for (let start = 0; start < count; start += 500) {
    const drafts: Draft[] = [];
    const placed: AllocationSpec[] = [];
    for (let i = start; i < Math.min(count, start + 500); i++) {
      const { id, drafts: node } = readyNodeDrafts(i);
      drafts.push(...node);
      placed.push(allocation(id, i));
    }
    drafts.push({
      type: "AllocsPlanApplied",
      v: 1,
      data: { EvalID: "", Placed: placed, Updated: [], Stopped: [], Preempted: [] },
    });
    const { outcomes } = await writeEvents(store, Date.now(), actor, drafts);
    const refused = outcomes.find((o) => o.status !== "applied");
    if (refused) throw new Error(`benchmark setup was not applied: ${JSON.stringify(refused)}`);
    allocs.push(...placed);
  }
  return allocs;
}

function allocation(nodeID: string, i: number): AllocationSpec {
  const job = `web-${i % 50}`;
  return newAllocation({
    ID: randomUUID(),
    Namespace: "default",
    JobID: job,
    TaskGroup: "frontend",
    NodeID: nodeID,
    NodeName: `bench-${i}`,
    CreateTime: Date.now() * 1e6,
    // Left out of allocation events (it has its own topic), but a placement needs it.
    Job: minimalAllocJob(job, [{ Name: "frontend", Count: 1 }]),
    AllocatedResources: {
      Tasks: { web: { Cpu: { CpuShares: 500 }, Memory: { MemoryMB: 256 } } },
      Shared: { DiskMB: 300, Networks: [{ Mode: "host", IP: "10.0.0.1", DynamicPorts: [] }] },
    },
  });
}

/** A client's report as Node.UpdateAlloc carries it: a task running, with its recent events. */
function clientUpdate(a: AllocationSpec, at: number): ClientAllocUpdate {
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
        Events: [
          { Type: "Received", Time: at * 1e6, DisplayMessage: "Task received by client" },
          { Type: "Started", Time: at * 1e6, DisplayMessage: "Task started by client" },
        ],
      },
    },
    DeploymentStatus: null,
    NetworkStatus: null,
    ModifyTime: at * 1e6,
  };
}

/** Memory after full collections, once what the last requests left behind is gone. */
async function settledMemory(): Promise<Memory> {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (!gc) throw new Error("the benchmark server needs --expose-gc");
  for (let i = 0; i < 4; i++) {
    gc();
    await new Promise((r) => setTimeout(r, 50));
  }
  const m = process.memoryUsage();
  return { rss: m.rss, heapUsed: m.heapUsed, external: m.external };
}

main().catch((err: Error) => {
  process.stderr.write(`event-stream bench server: ${err.stack ?? err.message}\n`);
  process.exit(1);
});
