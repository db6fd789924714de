import type { EvaluationRow } from "../../projections/evals.ts";
import {
  genericSteps,
  scheduleGeneric,
  scheduleGenericSliced,
} from "../services/scheduler/generic-scheduler.ts";
import { c2mJob } from "./c2m-job.ts";
import { bestSlices } from "./placement-bench.ts";
import { PlacementWorld } from "./placement-world.ts";
import { startStallMonitor } from "./stall-monitor.ts";

/** One job's plan computed against the cluster. */
export interface JobPlacementFigures {
  readonly allocs: number;
  readonly compute_ms: number;
  readonly compute_cpu_ms: number;
  readonly placements_per_s: number;
  /** Nodes scored per placement, on average (Nomad's NodesEvaluated). */
  readonly nodes_evaluated_per_alloc: number;
  /** The same computation in slices: the longest the event loop waited meanwhile. */
  readonly sliced_max_stall_ms: number;
  /** The longest slice in process CPU time (holds on a busy machine, where wall times do not). */
  readonly longest_slice_cpu_ms: number;
  /** Where the allocations went, per datacenter. */
  readonly by_datacenter: Readonly<Record<string, number>>;
}

export interface PreferencesFigures {
  readonly nodes: number;
  readonly datacenters: number;
  /** A job that only asks for a count. */
  readonly count_only: JobPlacementFigures;
  /** The same job with a spread over datacenters (targets 50/30, the rest implicit) and an affinity to a node class. */
  readonly spread_affinity: JobPlacementFigures;
}

export interface PreferencesBenchOptions {
  readonly nodes?: number;
  readonly allocs?: number;
  /** Runs of each measurement; the best is kept (the machine is shared). */
  readonly runs?: number;
}

const DATACENTERS = ["dc1", "dc2", "dc3", "dc4"];

/**
 * The scheduler's cost for a job with a spread and an affinity, next to the
 * same job asking only for a count: plans computed against `nodes` ready
 * nodes in four datacenters (a fifth of them of class `large`), nothing
 * applied. With affinities or spreads Nomad scores max(count, 100) nodes per
 * placement instead of log2(nodes): the figure shows what that costs.
 */
export async function benchPreferences(options: PreferencesBenchOptions = {}): Promise<PreferencesFigures> {
  const nodes = options.nodes ?? 5_000;
  const allocs = options.allocs ?? 1_000;
  const runs = options.runs ?? 1;
  const world = await PlacementWorld.start();
  try {
    await world.addNodes(nodes, (i) => ({
      Datacenter: DATACENTERS[i % DATACENTERS.length]!,
      NodeClass: i % 5 === 0 ? "large" : "standard",
    }));
    const plain = { ...c2mJob("count-only", allocs), Datacenters: DATACENTERS };
    const preferring = {
      ...c2mJob("spread-affinity", allocs),
      Datacenters: DATACENTERS,
      Spreads: [
        {
          // biome-ignore lint/suspicious/noTemplateCurlyInString: Nomad's interpolation syntax
          Attribute: "${node.datacenter}",
          Weight: 100,
          SpreadTarget: [
            { Value: "dc1", Percent: 50 },
            { Value: "dc2", Percent: 30 },
          ],
        },
      ],
      // biome-ignore lint/suspicious/noTemplateCurlyInString: Nomad's interpolation syntax
      Affinities: [{ LTarget: "${node.class}", Operand: "=", RTarget: "large", Weight: 50 }],
    };
    const countOnly = await measure(world, await world.registerJob(plain), allocs, runs);
    const spreadAffinity = await measure(world, await world.registerJob(preferring), allocs, runs);
    return {
      nodes,
      datacenters: DATACENTERS.length,
      count_only: countOnly,
      spread_affinity: spreadAffinity,
    };
  } finally {
    await world.stop();
  }
}

async function measure(
  world: PlacementWorld,
  evaluation: EvaluationRow,
  allocs: number,
  runs: number,
): Promise<JobPlacementFigures> {
  let ms = Number.POSITIVE_INFINITY;
  let cpu = Number.POSITIVE_INFINITY;
  let stall = Number.POSITIVE_INFINITY;
  let evaluated = 0;
  const byDc: Record<string, number> = {};
  for (let run = 0; run < runs; run++) {
    const t0 = performance.now();
    const c0 = process.cpuUsage();
    const outcome = scheduleGeneric(world.ctx(), evaluation, { attempt: 0 });
    const used = process.cpuUsage(c0);
    cpu = Math.min(cpu, (used.user + used.system) / 1000);
    ms = Math.min(ms, performance.now() - t0);
    const placements = outcome.plan.placements;
    if (placements.length !== allocs) throw new Error(`placed ${placements.length} of ${allocs}`);
    evaluated = placements.reduce((n, p) => n + (p.NodesEvaluated ?? 0), 0) / allocs;
    for (const k of Object.keys(byDc)) delete byDc[k];
    for (const p of placements) {
      const dc = world.tables.nodes.get(p.NodeID)?.Datacenter ?? "?";
      byDc[dc] = (byDc[dc] ?? 0) + 1;
    }
    const monitor = await startStallMonitor();
    await scheduleGenericSliced(world.ctx(), evaluation, { attempt: 0 });
    stall = Math.min(stall, await monitor.stop());
  }
  const slices = await bestSlices(runs, () => genericSteps(world.ctx(), evaluation, { attempt: 0 }));
  return {
    allocs,
    compute_ms: round(ms),
    compute_cpu_ms: round(cpu),
    placements_per_s: Math.round(allocs / (ms / 1000)),
    nodes_evaluated_per_alloc: round(evaluated),
    sliced_max_stall_ms: round(stall),
    longest_slice_cpu_ms: slices.cpuMs,
    by_datacenter: byDc,
  };
}

const round = (n: number) => Math.round(n * 100) / 100;

/** The figures as one level of numbers (the bench command's table): `count_only_compute_ms`, `spread_affinity_in_dc1`, ... */
export function flatPreferencesFigures(f: PreferencesFigures): Record<string, number> {
  const out: Record<string, number> = { nodes: f.nodes, datacenters: f.datacenters };
  for (const [name, job] of [
    ["count_only", f.count_only],
    ["spread_affinity", f.spread_affinity],
  ] as const) {
    for (const [k, v] of Object.entries(job)) {
      if (typeof v === "number") out[`${name}_${k}`] = v;
    }
    for (const dc of Object.keys(job.by_datacenter).sort()) out[`${name}_in_${dc}`] = job.by_datacenter[dc]!;
  }
  return out;
}
