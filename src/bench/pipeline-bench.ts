import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { filter } from "rxjs";
import type { EvaluationRow } from "../../projections/evals.ts";
import type { PlanRefusalRow } from "../../projections/plan-apply.ts";
import { isTerminalEvalStatus } from "../../streams/evals.ts";
import type { RunningServer } from "../server.ts";
import { DEFAULT_DEPTH, SchedulerService } from "../services/scheduler/scheduler-service.ts";
import { CORE_SCHEDULER, SCHEDULER_TYPES } from "../services/scheduler/worker-pool.ts";
import { startBenchServer } from "./bench-server.ts";
import { c2mJob } from "./c2m-job.ts";
import { mainThreadCpuUs } from "./main-thread-cpu.ts";
import { idle, placed, putJob, readyNodes } from "./scheduler-bench.ts";

export interface PipelineFigures {
  readonly nodes: number;
  readonly jobs: number;
  readonly allocs_each: number;
  readonly workers: number;
  /** Evaluations each worker keeps in flight. */
  readonly depth: number;
  /** From the broker's resumption until every evaluation is terminal and every allocation placed. */
  readonly seconds: number;
  readonly evals_per_s: number;
  readonly placements_per_s: number;
  /** The server process's CPU time (user + system) per evaluation: less sensitive to a shared machine than the wall time. */
  readonly cpu_ms_per_eval: number;
  /** The main thread's part of it (Linux only, 10 ms ticks; NaN elsewhere). */
  readonly main_thread_cpu_ms_per_eval: number;
  /** Evaluations the workers processed in the drain: what the figures below are per. */
  readonly evaluations: number;
  /**
   * The scheduler's appends in the drain: its plan queue's, as `/v1/metrics`
   * counts them (chronomad.scheduler.plan_queue.appends). Each carries the
   * records (plans, blocked follow-ups, outcomes) of every evaluation that
   * finished a step while the one ahead was written. Each is one durable
   * write: with the file log, the drain's group commits (fdatasyncs) were
   * as many as these appends plus the broker's resumption.
   */
  readonly appends: number;
  /** `appends` per evaluation, to three significant digits (about 0.03 without nodes: a batch of ~30). */
  readonly appends_per_eval: number;
  /** Its inverse: evaluations per append, the batch the group commit achieved. */
  readonly evals_per_append: number;
  /** The plan queue's records per evaluation. */
  readonly records_per_eval: number;
  /** Log appends in the drain that were not the scheduler's (the write that resumed the broker). */
  readonly other_appends: number;
  /** Plan records the apply refused in part (two workers raced for a node). */
  readonly plan_refusals: number;
}

export interface PipelineBenchOptions {
  readonly nodes?: number;
  readonly jobs?: number;
  readonly allocsPerJob?: number;
  readonly workers?: number;
  readonly depth?: number;
  readonly fsync?: "always" | "never";
}

/**
 * The scheduler's pipeline alone (dequeue, plan, append, apply, ack): jobs
 * are registered with the eval broker paused, then the broker resumes and
 * the drain is timed, counting the scheduler's appends (its plan queue's)
 * and the evaluations processed. Registration throughput
 * (the HTTP write path) is not part of the figure.
 */
export async function benchPipeline(options: PipelineBenchOptions = {}): Promise<PipelineFigures> {
  const nodes = options.nodes ?? 1_000;
  const jobs = options.jobs ?? 1_000;
  const perJob = options.allocsPerJob ?? 10;
  const workers = options.workers ?? 4;
  const depth = options.depth ?? DEFAULT_DEPTH;
  const dir = await mkdtemp(join(tmpdir(), "chronomad-bench-pipeline-"));
  const server = await startBenchServer(["--data-dir", dir, "--fsync", options.fsync ?? "always"]);
  const url = `http://${server.address}`;
  try {
    const scheduler = schedulerOf(server);
    scheduler.setWorkerConfig({
      NumSchedulers: workers,
      EnabledSchedulers: [...SCHEDULER_TYPES, CORE_SCHEDULER],
    });
    scheduler.setDepth(depth);
    if (nodes > 0) await readyNodes(server, nodes);
    await pause(url, true);
    const ids = Array.from({ length: jobs }, (_, i) => `p-${String(i).padStart(5, "0")}`);
    let next = 0;
    const client = async () => {
      while (next < ids.length) await putJob(url, { Job: c2mJob(ids[next++]!, perJob) });
    };
    await Promise.all(Array.from({ length: 16 }, client));
    await server.store.caughtUp();

    const drained = untilNoneOpen(server);
    const counted = countAppends(server);
    const queued0 = scheduler.pipelineStats().planQueue;
    const evals0 = scheduler.counters.evals;
    const refusalsBefore = server.store.table<PlanRefusalRow>("plan_refusals").size;
    const t0 = performance.now();
    const markFrom = process.hrtime.bigint();
    const cpu0 = process.cpuUsage();
    const main0 = mainThreadCpuUs();
    await pause(url, false);
    // Without nodes each evaluation ends complete with a blocked follow-up: nothing to place.
    if (nodes > 0) for (const id of ids) await placed(server, id, perJob);
    await drained;
    const seconds = (performance.now() - t0) / 1000;
    const cpu = process.cpuUsage(cpu0);
    const mainUs = mainThreadCpuUs() - main0;
    // For profiles (--cpu-prof): the drain's window on the profiler's monotonic clock, in µs.
    if (process.env.PIPELINE_BENCH_WINDOW)
      process.stderr.write(`window ${markFrom / 1000n} ${process.hrtime.bigint() / 1000n}\n`);
    // The plan queue counts an append once it is applied and its waiters
    // answered, a few turns after the evaluations' rows changed: read once
    // every evaluation is acked, which waits for that.
    await idle(server);
    const logAppends = counted.stop().appends;
    const queued = scheduler.pipelineStats().planQueue;
    return {
      nodes,
      jobs,
      allocs_each: perJob,
      workers,
      depth,
      seconds: Math.round(seconds * 1000) / 1000,
      evals_per_s: Math.round(jobs / seconds),
      placements_per_s: nodes > 0 ? Math.round((jobs * perJob) / seconds) : 0,
      cpu_ms_per_eval: Math.round(((cpu.user + cpu.system) / 1000 / jobs) * 100) / 100,
      main_thread_cpu_ms_per_eval: Math.round((mainUs / 1000 / jobs) * 100) / 100,
      ...drainWrites({
        evaluations: scheduler.counters.evals - evals0,
        appends: queued.appends - queued0.appends,
        records: queued.records - queued0.records,
        logAppends,
      }),
      plan_refusals: server.store.table<PlanRefusalRow>("plan_refusals").size - refusalsBefore,
    };
  } finally {
    await server.close();
    await rm(dir, { recursive: true, force: true });
  }
}

function schedulerOf(server: RunningServer): SchedulerService {
  const s = server.services.find((x) => x instanceof SchedulerService);
  if (!s) throw new Error("the server runs no scheduler");
  return s as SchedulerService;
}

async function pause(url: string, on: boolean): Promise<void> {
  const res = await fetch(`${url}/v1/operator/scheduler/configuration`, {
    method: "PUT",
    body: JSON.stringify({ SchedulerAlgorithm: "binpack", PauseEvalBroker: on }),
  });
  if (!res.ok) throw new Error(`pausing the broker failed: ${res.status} ${await res.text()}`);
}

/** What the drain wrote, counted. */
export interface DrainCounts {
  /** Evaluations the workers processed (SchedulerService.counters.evals). */
  readonly evaluations: number;
  /** The plan queue's appends and the records they carried. */
  readonly appends: number;
  readonly records: number;
  /** Every append to the log, the plan queue's included. */
  readonly logAppends: number;
}

type DrainFigures = Pick<
  PipelineFigures,
  "evaluations" | "appends" | "appends_per_eval" | "evals_per_append" | "records_per_eval" | "other_appends"
>;

/**
 * The write figures of a drain. Per evaluation processed, not per job, and
 * to significant digits: a batched pipeline appends a few hundredths of a
 * time per evaluation, which two decimals rounded to 0.03 or 0.04 (a third
 * apart) and which looked like a miscount.
 */
export function drainWrites(c: DrainCounts): DrainFigures {
  const per = (n: number, d: number) => (d > 0 ? Number((n / d).toPrecision(3)) : 0);
  return {
    evaluations: c.evaluations,
    appends: c.appends,
    appends_per_eval: per(c.appends, c.evaluations),
    evals_per_append: c.appends > 0 ? Math.round((c.evaluations / c.appends) * 10) / 10 : 0,
    records_per_eval: per(c.records, c.evaluations),
    other_appends: c.logAppends - c.appends,
  };
}

/** Counts the log's appends from now until `stop` (the log is wrapped, then restored). */
function countAppends(server: RunningServer): { stop(): { appends: number } } {
  const log = server.log;
  const original = log.append;
  let appends = 0;
  log.append = (batch) => {
    appends++;
    return original.call(log, batch);
  };
  return {
    stop() {
      log.append = original;
      return { appends };
    },
  };
}

/**
 * Resolves once no evaluation is pending. The server runs in this process,
 * so what this costs counts in the figure: one walk of the table now, then
 * a count kept from the table's changes (a walk every 2 ms took a quarter
 * of the main thread during the drain).
 */
function untilNoneOpen(server: RunningServer): Promise<void> {
  const isOpen = (e: EvaluationRow | undefined) =>
    e !== undefined && !isTerminalEvalStatus(e.Status) && e.Status !== "blocked";
  let open = 0;
  for (const e of server.store.table<EvaluationRow>("evals").all()) if (isOpen(e)) open++;
  if (open === 0) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const sub = server.store.change$.pipe(filter((c) => c.table === "evals")).subscribe({
      next: (c) => {
        open += Number(isOpen(c.after as EvaluationRow | undefined));
        open -= Number(isOpen(c.before as EvaluationRow | undefined));
        if (open > 0) return;
        sub.unsubscribe();
        resolve();
      },
      error: reject,
    });
  });
}
