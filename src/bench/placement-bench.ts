import { createHash } from "node:crypto";
import type { EvaluationRow } from "../../projections/evals.ts";
import type { JobRow } from "../../projections/jobs.ts";
import {
  genericSteps,
  scheduleGeneric,
  scheduleGenericSliced,
} from "../services/scheduler/generic-scheduler.ts";
import type { SchedulerContext } from "../services/scheduler/scheduler-context.ts";
import { clockStride, SLICE_MS, type Steps } from "../services/scheduler/slices.ts";
import { c2mJob } from "./c2m-job.ts";
import { PlacementWorld } from "./placement-world.ts";
import { startStallMonitor } from "./stall-monitor.ts";

export interface PlacementFigures {
  readonly nodes: number;
  readonly big_job_allocs: number;
  /** Computing the plan of the big job alone: no log, no apply, no HTTP. */
  readonly big_job_compute_ms: number;
  readonly big_job_compute_placements_per_s: number;
  /** Process CPU time of that computation (less sensitive than wall time to a shared machine). */
  readonly big_job_compute_cpu_ms: number;
  /** The same computation in slices: its wall time, and the longest the event loop waited meanwhile. */
  readonly big_job_sliced_ms: number;
  readonly big_job_sliced_max_stall_ms: number;
  /** The longest slice itself, in wall and in process CPU time (the CPU figure holds on a busy machine). */
  readonly big_job_longest_slice_ms: number;
  readonly big_job_longest_slice_cpu_ms: number;
  /** The big job evaluated again once placed (every allocation kept): the reconciler over all of them. */
  readonly reeval_compute_ms: number;
  readonly reeval_sliced_max_stall_ms: number;
  readonly reeval_longest_slice_cpu_ms: number;
  /** A new version of the big job that replaces every allocation (stop and place each). */
  readonly update_compute_ms: number;
  readonly update_sliced_max_stall_ms: number;
  readonly update_longest_slice_cpu_ms: number;
  readonly many_jobs: number;
  readonly many_jobs_allocs_each: number;
  readonly many_jobs_compute_placements_per_s: number;
  readonly many_jobs_compute_cpu_ms: number;
  /** A digest of the big job's placements (node of each, in order): equal runs placed alike. */
  readonly placements_digest: string;
}

export interface PlacementBenchOptions {
  readonly nodes?: number;
  readonly bigJobAllocs?: number;
  readonly jobs?: number;
  readonly allocsPerJob?: number;
  /** Runs of each measurement; the best is kept (the machine is shared). */
  readonly runs?: number;
}

/**
 * The scheduler's own cost, apart from the write path: plans computed
 * against `nodes` idle ready nodes (IDs fixed, so two runs place alike),
 * nothing appended except the big job's first plan (to evaluate it again).
 */
export async function benchPlacement(options: PlacementBenchOptions = {}): Promise<PlacementFigures> {
  const nodes = options.nodes ?? 5_000;
  const bigJobAllocs = options.bigJobAllocs ?? 10_000;
  const jobs = options.jobs ?? 1_000;
  const perJob = options.allocsPerJob ?? 10;
  const runs = options.runs ?? 3;
  const world = await PlacementWorld.start();
  try {
    await world.addNodes(nodes);
    const big = await world.registerJob(c2mJob("big", bigJobAllocs));
    const ctx = () => world.ctx();

    let computeMs = Number.POSITIVE_INFINITY;
    let computeCpuMs = Number.POSITIVE_INFINITY;
    let digest = "";
    for (let run = 0; run < runs; run++) {
      const t0 = performance.now();
      const c0 = process.cpuUsage();
      const outcome = scheduleGeneric(ctx(), big, { attempt: 0 });
      computeCpuMs = Math.min(computeCpuMs, cpuMs(c0));
      computeMs = Math.min(computeMs, performance.now() - t0);
      if (outcome.plan.placements.length !== bigJobAllocs)
        throw new Error(`placed ${outcome.plan.placements.length} of ${bigJobAllocs}`);
      digest = createHash("sha256")
        .update(outcome.plan.placements.map((p) => p.NodeID).join(","))
        .digest("hex")
        .slice(0, 16);
    }
    let slicedMs = Number.POSITIVE_INFINITY;
    let stallMs = Number.POSITIVE_INFINITY;
    for (let run = 0; run < runs; run++) {
      const monitor = await startStallMonitor();
      const t0 = performance.now();
      await scheduleGenericSliced(ctx(), big, { attempt: 0 });
      slicedMs = Math.min(slicedMs, performance.now() - t0);
      stallMs = Math.min(stallMs, await monitor.stop());
    }
    const bigSlices = await bestSlices(runs, () => genericSteps(ctx(), big, { attempt: 0 }));

    await world.apply(scheduleGeneric(ctx(), big, { attempt: 0 }));
    if (world.tables.allocs.countBy("job", "default\u0000big") !== bigJobAllocs)
      throw new Error("the big job's plan did not apply");
    const reeval: EvaluationRow = {
      ...big,
      ID: "00000000-0000-4000-a000-000000000001",
      TriggeredBy: "node-update",
    };
    const reevalFigures = await measure(
      runs,
      ctx,
      (c) => scheduleGeneric(c, reeval, { attempt: 0 }),
      (c) => scheduleGenericSliced(c, reeval, { attempt: 0 }),
    );
    const reevalSlices = await bestSlices(runs, () => genericSteps(ctx(), reeval, { attempt: 0 }));
    const stored = world.tables.jobs.get("default\u0000big")!;
    const newer: JobRow = {
      ...stored,
      Version: stored.Version + 1,
      JobModifyIndex: stored.JobModifyIndex + 1,
      ModifyIndex: stored.ModifyIndex + 1,
      TaskGroups: stored.TaskGroups.map((tg) => ({
        ...tg,
        Tasks: tg.Tasks.map((t) => ({ ...t, Config: { ...t.Config, image: "alpine:3.20" } })),
      })),
    };
    const update: EvaluationRow = { ...big, ID: "00000000-0000-4000-a000-000000000002" };
    const updateFigures = await measure(
      runs,
      ctx,
      (c) => scheduleGeneric(c, update, { attempt: 0, job: newer }),
      (c) => scheduleGenericSliced(c, update, { attempt: 0, job: newer }),
    );
    const updateSlices = await bestSlices(runs, () =>
      genericSteps(ctx(), update, { attempt: 0, job: newer }),
    );

    const small: EvaluationRow[] = [];
    for (let i = 0; i < jobs; i++) small.push(await world.registerJob(c2mJob(`small-${i}`, perJob)));
    let manySeconds = Number.POSITIVE_INFINITY;
    let manyCpuMs = Number.POSITIVE_INFINITY;
    for (let run = 0; run < runs; run++) {
      const t0 = performance.now();
      const c0 = process.cpuUsage();
      for (const e of small) scheduleGeneric(ctx(), e, { attempt: 0 });
      manyCpuMs = Math.min(manyCpuMs, cpuMs(c0));
      manySeconds = Math.min(manySeconds, (performance.now() - t0) / 1000);
    }

    return {
      nodes,
      big_job_allocs: bigJobAllocs,
      big_job_compute_ms: round(computeMs),
      big_job_compute_placements_per_s: Math.round(bigJobAllocs / (computeMs / 1000)),
      big_job_compute_cpu_ms: round(computeCpuMs),
      big_job_sliced_ms: round(slicedMs),
      big_job_sliced_max_stall_ms: round(stallMs),
      big_job_longest_slice_ms: bigSlices.wallMs,
      big_job_longest_slice_cpu_ms: bigSlices.cpuMs,
      reeval_compute_ms: reevalFigures.ms,
      reeval_sliced_max_stall_ms: reevalFigures.stallMs,
      reeval_longest_slice_cpu_ms: reevalSlices.cpuMs,
      update_compute_ms: updateFigures.ms,
      update_sliced_max_stall_ms: updateFigures.stallMs,
      update_longest_slice_cpu_ms: updateSlices.cpuMs,
      many_jobs: jobs,
      many_jobs_allocs_each: perJob,
      many_jobs_compute_placements_per_s: Math.round((jobs * perJob) / manySeconds),
      many_jobs_compute_cpu_ms: round(manyCpuMs),
      placements_digest: digest,
    };
  } finally {
    await world.stop();
  }
}

/** The best of `runs` of a computation at once, and the best longest stall of it in slices. */
async function measure(
  runs: number,
  ctx: () => SchedulerContext,
  once: (c: SchedulerContext) => unknown,
  sliced: (c: SchedulerContext) => Promise<unknown>,
): Promise<{ ms: number; stallMs: number }> {
  let ms = Number.POSITIVE_INFINITY;
  let stallMs = Number.POSITIVE_INFINITY;
  for (let run = 0; run < runs; run++) {
    const t0 = performance.now();
    once(ctx());
    ms = Math.min(ms, performance.now() - t0);
    const monitor = await startStallMonitor();
    await sliced(ctx());
    stallMs = Math.min(stallMs, await monitor.stop());
  }
  return { ms: round(ms), stallMs: round(stallMs) };
}

/**
 * runSliced's loop (same slice length, same clock reads), timing each slice
 * in wall and CPU time; the best run's longest slice of each kind.
 */
export async function bestSlices(
  runs: number,
  steps: () => Steps<unknown>,
): Promise<{ wallMs: number; cpuMs: number }> {
  let wallMs = Number.POSITIVE_INFINITY;
  let cpu = Number.POSITIVE_INFINITY;
  for (let run = 0; run < runs; run++) {
    const s = steps();
    let longestWall = 0;
    let longestCpu = 0;
    let start = performance.now();
    let startCpu = process.cpuUsage();
    const close = () => {
      longestWall = Math.max(longestWall, performance.now() - start);
      longestCpu = Math.max(longestCpu, cpuMs(startCpu));
    };
    let n = 0;
    let look = 1;
    for (;;) {
      if (s.next().done) break;
      if (++n < look) continue;
      const now = performance.now();
      if (now < start + SLICE_MS) {
        look = n + clockStride(now - start, n, SLICE_MS);
        continue;
      }
      close();
      await new Promise<void>((resolve) => setImmediate(resolve));
      start = performance.now();
      startCpu = process.cpuUsage();
      n = 0;
      look = 1;
    }
    close();
    wallMs = Math.min(wallMs, longestWall);
    cpu = Math.min(cpu, longestCpu);
  }
  return { wallMs: round(wallMs), cpuMs: round(cpu) };
}

function cpuMs(since: NodeJS.CpuUsage): number {
  const used = process.cpuUsage(since);
  return (used.user + used.system) / 1000;
}

const round = (n: number) => Math.round(n * 100) / 100;
