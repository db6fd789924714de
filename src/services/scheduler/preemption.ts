import type { AllocRow } from "../../../projections/allocs.ts";
import { addUsage, allocUsage, type Usage } from "../../../projections/resources.ts";
import {
  currentSchedulerConfig,
  type SchedulerConfigRow,
  type SchedulerConfigTable,
} from "../../../projections/scheduler-config.ts";
import type { NodeUse, Plan } from "./plan.ts";
import type { PlacementStack, Selection } from "./stack.ts";

/** Nomad's preemption rule: only allocations of jobs at least this much lower in priority may be evicted. */
export const PRIORITY_DELTA = 10;

/** Nomad's maxParallelPenalty: added per allocation preempted beyond the group's migrate max_parallel. */
export const MAX_PARALLEL_PENALTY = 50;

/**
 * Whether the scheduler of `jobType` may preempt, per the live scheduler
 * configuration (Nomad's PreemptionConfig: system on by default, the others
 * off).
 */
export function preemptionEnabled(config: SchedulerConfigRow, jobType: string): boolean {
  const p = config.PreemptionConfig;
  switch (jobType) {
    case "system":
      return p.SystemSchedulerEnabled;
    case "sysbatch":
      return p.SysBatchSchedulerEnabled;
    case "batch":
      return p.BatchSchedulerEnabled;
    case "service":
      return p.ServiceSchedulerEnabled;
    default:
      return false;
  }
}

/**
 * What the placement stack asks when `ask` does not fit a node whose proposed
 * load is `use` (Nomad's BinPackIterator with eviction on): the node's live
 * allocations the plan leaves, the preemptions the plan already makes
 * counted per job and group. Undefined when nothing can be evicted to fit.
 */
export function preemptionFor(
  plan: Plan,
  priority: number,
  capacity: {
    readonly cpu: number;
    readonly memoryMB: number;
    readonly diskMB: number;
    readonly node: { readonly ID: string };
  },
  use: NodeUse,
  ask: Readonly<Usage>,
): AllocRow[] | undefined {
  const counts = new Map<string, number>();
  const keyOf = (a: AllocRow) => `${a.Namespace}\u0000${a.JobID}\u0000${a.TaskGroup}`;
  for (const { alloc } of plan.preemptions.values())
    counts.set(keyOf(alloc), (counts.get(keyOf(alloc)) ?? 0) + 1);
  return preemptForTaskGroup({
    priority,
    remaining: {
      cpu: capacity.cpu - use.used.cpu,
      memoryMB: capacity.memoryMB - use.used.memoryMB,
      diskMB: capacity.diskMB - use.used.diskMB,
    },
    ask,
    allocs: plan.liveAllocsOn(capacity.node.ID),
    preempted: (a) => counts.get(keyOf(a)) ?? 0,
  });
}

/** Turns preemption on in `stack` when the live configuration allows it for the job's scheduler. */
export function allowPreemption(
  stack: PlacementStack,
  config: SchedulerConfigTable,
  job: { readonly Type: string; readonly Priority: number },
): void {
  if (preemptionEnabled(currentSchedulerConfig(config), job.Type)) stack.enablePreemption(job.Priority);
}

/** Nomad's handlePreemptions: the plan's last placement evicts what its selection preempts. */
export function appendPreemptions(plan: Plan, selection: Selection): void {
  if (!selection.preempted) return;
  const placed = plan.placements[plan.placements.length - 1]!;
  for (const a of selection.preempted) plan.appendPreemption(a, placed.ID);
}

/** One allocation that could be evicted, with what Nomad's allocInfo precomputes. */
interface Candidate {
  readonly alloc: AllocRow;
  readonly priority: number;
  readonly usage: Readonly<Usage>;
  readonly maxParallel: number;
}

export interface PreemptionAsk {
  /** The priority of the job being placed. */
  readonly priority: number;
  /** What the node has left once everything it would run is counted (may be negative). */
  readonly remaining: Readonly<Usage>;
  /** What one allocation of the group takes. */
  readonly ask: Readonly<Usage>;
  /** The node's live allocations, as the plan leaves them (stopped and already preempted ones excluded). */
  readonly allocs: readonly AllocRow[];
  /** Allocations of (namespace, job, group) the plan already preempts (Nomad's SetPreemptions counts). */
  readonly preempted: (a: AllocRow) => number;
}

/**
 * Nomad's Preemptor.PreemptForTaskGroup for CPU, memory and disk: the set of
 * lower-priority allocations whose eviction makes room for `ask`, or
 * undefined when none does. Candidates are taken lowest priority first; in a
 * priority, the one whose resources are closest to what is still needed
 * (with a penalty for groups already preempted beyond their migrate
 * max_parallel), until the ask fits. A last pass drops what the larger
 * choices made unnecessary. Deterministic: ties go to the earlier candidate
 * in `allocs` order.
 */
export function preemptForTaskGroup(req: PreemptionAsk): AllocRow[] | undefined {
  const groups = groupByPriority(req.priority, req.allocs);
  const available: Usage = { ...req.remaining };
  const needed: Usage = { ...req.ask };
  const best: Candidate[] = [];
  let met = false;
  for (const group of groups) {
    const list = group.slice();
    while (list.length > 0 && !met) {
      let closest = -1;
      let bestDistance = Number.POSITIVE_INFINITY;
      for (let i = 0; i < list.length; i++) {
        const c = list[i]!;
        const d = scoreForTaskGroup(needed, c.usage, c.maxParallel, req.preempted(c.alloc));
        if (d < bestDistance) {
          bestDistance = d;
          closest = i;
        }
      }
      // Every distance is finite; the guard keeps the type checker and a NaN honest.
      if (closest < 0) closest = 0;
      const chosen = list[closest]!;
      addUsage(available, chosen.usage);
      met = covers(available, req.ask);
      best.push(chosen);
      // Nomad removes the pick by moving the last candidate into its place.
      list[closest] = list[list.length - 1]!;
      list.pop();
      addUsage(needed, chosen.usage, -1);
    }
    if (met) break;
  }
  if (!met) return undefined;
  return filterSuperset(best, req.remaining, req.ask).map((c) => c.alloc);
}

/** Nomad's filterAndGroupPreemptibleAllocs: candidates at least PRIORITY_DELTA below, grouped by priority, lowest first. */
function groupByPriority(priority: number, allocs: readonly AllocRow[]): Candidate[][] {
  const byPriority = new Map<number, Candidate[]>();
  for (const alloc of allocs) {
    const job = alloc.Job;
    if (!job) continue;
    // Also leaves out the job's own allocations (same priority).
    if (priority - job.Priority < PRIORITY_DELTA) continue;
    const candidate: Candidate = {
      alloc,
      priority: job.Priority,
      usage: allocUsage(alloc),
      maxParallel: migrateMaxParallel(alloc),
    };
    const list = byPriority.get(job.Priority);
    if (list) list.push(candidate);
    else byPriority.set(job.Priority, [candidate]);
  }
  return [...byPriority.entries()].sort((a, b) => a[0] - b[0]).map(([, list]) => list);
}

/** The group's migrate max_parallel from the allocation's job snapshot (0 when it has none). */
function migrateMaxParallel(alloc: AllocRow): number {
  const tg = alloc.Job?.TaskGroups.find((g) => g.Name === alloc.TaskGroup);
  const migrate = tg?.Migrate;
  if (migrate === null || typeof migrate !== "object") return 0;
  const n = (migrate as { MaxParallel?: unknown }).MaxParallel;
  return typeof n === "number" && Number.isFinite(n) ? n : 0;
}

/**
 * Nomad's filterSuperset: the chosen allocations, farthest from the ask
 * first (the largest), taken until the ask fits; the rest are not needed.
 */
function filterSuperset(best: Candidate[], remaining: Readonly<Usage>, ask: Readonly<Usage>): Candidate[] {
  const ranked = best
    .map((c, i) => ({ c, i, d: basicResourceDistance(ask, c.usage) }))
    .sort((a, b) => b.d - a.d || a.i - b.i);
  const available: Usage = { ...remaining };
  const out: Candidate[] = [];
  for (const { c } of ranked) {
    out.push(c);
    addUsage(available, c.usage);
    if (covers(available, ask)) break;
  }
  return out;
}

/** Nomad's scoreForTaskGroup: lower is better. */
export function scoreForTaskGroup(
  ask: Readonly<Usage>,
  used: Readonly<Usage>,
  maxParallel: number,
  alreadyPreempted: number,
): number {
  let penalty = 0;
  if (maxParallel > 0 && alreadyPreempted >= maxParallel) {
    penalty = (alreadyPreempted + 1 - maxParallel) * MAX_PARALLEL_PENALTY;
  }
  return basicResourceDistance(ask, used) + penalty;
}

/** Nomad's basicResourceDistance: how far an allocation's resources are from the ask, per dimension asked for. */
export function basicResourceDistance(ask: Readonly<Usage>, used: Readonly<Usage>): number {
  const memory = ask.memoryMB > 0 ? (ask.memoryMB - used.memoryMB) / ask.memoryMB : 0;
  const cpu = ask.cpu > 0 ? (ask.cpu - used.cpu) / ask.cpu : 0;
  const disk = ask.diskMB > 0 ? (ask.diskMB - used.diskMB) / ask.diskMB : 0;
  return Math.sqrt(memory ** 2 + cpu ** 2 + disk ** 2);
}

/**
 * Nomad's PreemptionScoringIterator score for a node whose option preempts
 * `allocs`: a logistic curve of their net priority (the highest, plus the
 * sum over the highest), 0.5 at 2048, near 1 for a few low-priority ones.
 */
export function preemptionScore(allocs: readonly AllocRow[]): number {
  let sum = 0;
  let max = 0;
  for (const a of allocs) {
    const p = a.Job?.Priority ?? 0;
    if (p > max) max = p;
    sum += p;
  }
  const net = max > 0 ? max + sum / max : 0;
  return 1 / (1 + Math.exp(0.0048 * (net - 2048)));
}

/** Nomad's ComparableResources.Superset for CPU, memory and disk. */
function covers(available: Readonly<Usage>, ask: Readonly<Usage>): boolean {
  return available.cpu >= ask.cpu && available.memoryMB >= ask.memoryMB && available.diskMB >= ask.diskMB;
}
