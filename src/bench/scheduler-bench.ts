import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pino } from "pino";
import { filter, firstValueFrom } from "rxjs";
import type { AllocRow } from "../../projections/allocs.ts";
import { createProjections } from "../../projections/index.ts";
import { allSchemas } from "../../streams/index.ts";
import { EnvelopeCodec } from "../codec/envelope-codec.ts";
import type { RunningServer } from "../server.ts";
import { SchedulerService } from "../services/scheduler/scheduler-service.ts";
import { Store } from "../store/store.ts";
import { type Draft, writeEvents } from "../store/writer.ts";
import { readyNodeDrafts } from "./bench-nodes.ts";
import { startBenchServer } from "./bench-server.ts";
import { c2mJob } from "./c2m-job.ts";
import { startStallMonitor } from "./stall-monitor.ts";

export interface SchedulerFigures {
  readonly nodes: number;
  /** One job of `big_job_allocs` allocations, registered over HTTP until every placement is committed. */
  readonly big_job_allocs: number;
  readonly big_job_seconds: number;
  readonly big_job_placements_per_s: number;
  /**
   * The longest the server's event loop was held while the big job was
   * scheduled and applied (the server runs in this process): what a
   * heartbeat arriving then would wait.
   */
  readonly big_job_max_stall_ms: number;
  /** Bytes of plan records (AllocsPlanApplied) per placed allocation. */
  readonly plan_bytes_per_alloc: number;
  /** Every log byte the job's scheduling wrote (job, evaluations, plans) per placed allocation. */
  readonly log_bytes_per_alloc: number;
  readonly many_jobs: number;
  readonly many_jobs_allocs_each: number;
  readonly many_jobs_seconds: number;
  readonly many_jobs_placements_per_s: number;
  readonly many_jobs_max_stall_ms: number;
  /** Replaying the whole run's log into a fresh store. */
  readonly replay_records: number;
  readonly replay_records_per_s: number;
  /** The same replay counted in allocations placed (a plan record carries up to 1,000). */
  readonly replay_placements_per_s: number;
}

export interface SchedulerBenchOptions {
  readonly nodes?: number;
  readonly bigJobAllocs?: number;
  readonly jobs?: number;
  readonly allocsPerJob?: number;
  readonly fsync?: "always" | "never";
}

/**
 * Placements committed per second for one large job, and the time to
 * schedule many small ones, against a real server (file log, HTTP) with
 * `nodes` ready nodes written straight to the log.
 */
export async function benchScheduler(options: SchedulerBenchOptions = {}): Promise<SchedulerFigures> {
  const nodes = options.nodes ?? 5_000;
  const bigJobAllocs = options.bigJobAllocs ?? 10_000;
  const jobs = options.jobs ?? 1_000;
  const perJob = options.allocsPerJob ?? 10;
  const dir = await mkdtemp(join(tmpdir(), "chronomad-bench-scheduler-"));
  const server = await startBenchServer(["--data-dir", dir, "--fsync", options.fsync ?? "always"]);
  const url = `http://${server.address}`;
  try {
    await readyNodes(server, nodes);

    const bigStart = server.log.lastIndex() + 1;
    const bigStalls = await startStallMonitor();
    const t0 = performance.now();
    await putJob(url, { Job: c2mJob("big", bigJobAllocs) });
    await placed(server, "big", bigJobAllocs);
    const bigSeconds = (performance.now() - t0) / 1000;
    const bigStallMs = await bigStalls.stop();
    await idle(server);
    const bytes = await logBytes(server, bigStart);

    const ids = Array.from({ length: jobs }, (_, i) => `small-${String(i).padStart(4, "0")}`);
    const manyStalls = await startStallMonitor();
    const t1 = performance.now();
    let next = 0;
    const worker = async () => {
      while (next < ids.length) await putJob(url, { Job: c2mJob(ids[next++]!, perJob) });
    };
    await Promise.all(Array.from({ length: 16 }, worker));
    for (const id of ids) await placed(server, id, perJob);
    const manySeconds = (performance.now() - t1) / 1000;
    const manyStallMs = await manyStalls.stop();
    await idle(server);

    const replay = await replayLog(server);
    return {
      nodes,
      big_job_allocs: bigJobAllocs,
      big_job_seconds: round(bigSeconds),
      big_job_placements_per_s: Math.round(bigJobAllocs / bigSeconds),
      big_job_max_stall_ms: round(bigStallMs),
      plan_bytes_per_alloc: Math.round(bytes.plan / bigJobAllocs),
      log_bytes_per_alloc: Math.round(bytes.all / bigJobAllocs),
      many_jobs: jobs,
      many_jobs_allocs_each: perJob,
      many_jobs_seconds: round(manySeconds),
      many_jobs_placements_per_s: Math.round((jobs * perJob) / manySeconds),
      many_jobs_max_stall_ms: round(manyStallMs),
      replay_records: replay.records,
      replay_records_per_s: Math.round(replay.records / replay.seconds),
      replay_placements_per_s: Math.round((bigJobAllocs + jobs * perJob) / replay.seconds),
    };
  } finally {
    await server.close();
    if (!process.env.KEEP_BENCH_DIR) await rm(dir, { recursive: true, force: true });
    else process.stderr.write(`kept ${dir}\n`);
  }
}

const round = (n: number) => Math.round(n * 1000) / 1000;

/** `count` ready nodes with room for plenty, written to the log in batches (no client processes). */
export async function readyNodes(server: RunningServer, count: number): Promise<void> {
  const actor = { kind: "server", id: "bench" } as const;
  for (let start = 0; start < count; start += 500) {
    const drafts: Draft[] = [];
    for (let i = start; i < Math.min(count, start + 500); i++) drafts.push(...readyNodeDrafts(i).drafts);
    await writeEvents(server.store, Date.now(), actor, drafts);
  }
}

export async function putJob(url: string, body: unknown): Promise<void> {
  const res = await fetch(`${url}/v1/jobs`, { method: "PUT", body: JSON.stringify(body) });
  const text = await res.text();
  if (!res.ok) throw new Error(`registering a benchmark job failed: ${res.status} ${text}`);
}

/** Resolves once `count` allocations of the job are in the allocs table (woken by applied batches). */
export async function placed(server: RunningServer, jobID: string, count: number): Promise<void> {
  const allocs = server.store.table<AllocRow>("allocs");
  const key = `default\u0000${jobID}`;
  while (allocs.countBy("job", key) < count) {
    await firstValueFrom(server.store.applied$.pipe(filter((b) => b.tables.has("allocs"))));
  }
}

/** Until the scheduler has no evaluation queued or in flight. */
export async function idle(server: RunningServer): Promise<void> {
  const scheduler = server.services.find((s) => s instanceof SchedulerService) as
    | SchedulerService
    | undefined;
  for (let i = 0; i < 100_000; i++) {
    await server.store.caughtUp();
    if (!scheduler || scheduler.idle) return;
    await new Promise((r) => setTimeout(r, 5));
  }
}

async function logBytes(server: RunningServer, from: number): Promise<{ plan: number; all: number }> {
  const codec = new EnvelopeCodec(allSchemas);
  let plan = 0;
  let all = 0;
  for await (const batch of server.log.read(from)) {
    for (const r of batch) {
      all += r.bytes.length;
      if (codec.decode(r.bytes).type === "AllocsPlanApplied") plan += r.bytes.length;
    }
  }
  return { plan, all };
}

async function replayLog(server: RunningServer): Promise<{ records: number; seconds: number }> {
  const fresh = new Store({
    log: server.log,
    codec: new EnvelopeCodec(allSchemas),
    projections: createProjections().all,
    logger: pino({ level: "silent" }),
  });
  const t0 = performance.now();
  await fresh.start({ until: server.log.lastIndex() });
  const seconds = (performance.now() - t0) / 1000;
  if (fresh.hash() !== server.store.hash()) throw new Error("the replayed store differs from the live one");
  await fresh.stop();
  return { records: server.log.lastIndex(), seconds };
}
