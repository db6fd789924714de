import type { JobRow } from "../../../projections/jobs.ts";
import type { NodeRow } from "../../../projections/nodes.ts";
import type { Constraint, TaskGroupSpec } from "../../../streams/jobs.ts";
import { escapes, meetsConstraint } from "./constraints.ts";
import type { AllocMetric } from "./metrics.ts";
import type { NodeUse } from "./plan.ts";
import { inJobPlacement, isReadyNode } from "./ready-nodes.ts";

const constraintString = (c: Constraint) => `${c.LTarget} ${c.Operand} ${c.RTarget}`;

/**
 * Nomad's feasibility checks for one evaluation: datacenter, readiness,
 * job and group constraints, task drivers, distinct_hosts. Verdicts that
 * depend only on what a node's computed class captures are cached per class
 * (Nomad's EvalEligibility), so thousands of identical nodes cost one check;
 * constraints on `unique.` properties escape the cache.
 */
export class Feasibility {
  private readonly jobByClass = new Map<string, boolean>();
  private readonly groupByClass = new Map<string, Map<string, boolean>>();
  private readonly jobEscaped: boolean;
  private readonly groupEscaped = new Map<string, boolean>();
  private readonly jobConstraints: readonly Constraint[];

  constructor(private readonly job: JobRow) {
    this.jobConstraints = job.Constraints ?? [];
    this.jobEscaped = this.jobConstraints.some(escapes);
  }

  /** Whether some verdict could not be cached by class (Nomad's HasEscaped). */
  get escaped(): boolean {
    return this.jobEscaped || [...this.groupEscaped.values()].some((e) => e);
  }

  /** Whether the node is one the job may run on at all: ready, eligible, not draining, in its datacenters and node pool. */
  inPool(node: NodeRow): boolean {
    return isReadyNode(node) && inJobPlacement(this.job, node);
  }

  /** Checks `node` for `tg`, counting a refusal in `metric`. */
  feasible(node: NodeRow, tg: TaskGroupSpec, use: NodeUse | undefined, metric: AllocMetric): boolean {
    if (!this.jobFeasible(node, metric)) return false;
    if (!this.groupFeasible(node, tg, metric)) return false;
    if (use && !this.distinctHosts(tg, use, metric)) return false;
    return true;
  }

  private jobFeasible(node: NodeRow, metric: AllocMetric): boolean {
    const cls = node.ComputedClass;
    if (!this.jobEscaped && cls) {
      const cached = this.jobByClass.get(cls);
      if (cached !== undefined) {
        if (!cached) metric.filterClass(cls);
        return cached;
      }
    }
    let ok = true;
    for (const c of this.jobConstraints) {
      if (!meetsConstraint(c, node)) {
        metric.filterConstraint(constraintString(c));
        ok = false;
        break;
      }
    }
    if (!this.jobEscaped && cls) this.jobByClass.set(cls, ok);
    return ok;
  }

  private groupFeasible(node: NodeRow, tg: TaskGroupSpec, metric: AllocMetric): boolean {
    let escaped = this.groupEscaped.get(tg.Name);
    if (escaped === undefined) {
      escaped = groupConstraints(tg).some(escapes);
      this.groupEscaped.set(tg.Name, escaped);
    }
    const cls = node.ComputedClass;
    let byClass = this.groupByClass.get(tg.Name);
    if (!byClass) {
      byClass = new Map();
      this.groupByClass.set(tg.Name, byClass);
    }
    if (!escaped && cls) {
      const cached = byClass.get(cls);
      if (cached !== undefined) {
        if (!cached) metric.filterClass(cls);
        return cached;
      }
    }
    let ok = true;
    for (const c of groupConstraints(tg)) {
      if (!meetsConstraint(c, node)) {
        metric.filterConstraint(constraintString(c));
        ok = false;
        break;
      }
    }
    if (ok && !hasDrivers(node, tg)) {
      metric.filterConstraint("missing drivers");
      ok = false;
    }
    if (!escaped && cls) byClass.set(cls, ok);
    return ok;
  }

  /** Nomad's DistinctHostsIterator, against what the node would run with the plan. */
  private distinctHosts(tg: TaskGroupSpec, use: NodeUse, metric: AllocMetric): boolean {
    const jobLevel = this.jobConstraints.some((c) => c.Operand === "distinct_hosts" && c.RTarget !== "false");
    const groupLevel = (tg.Constraints ?? []).some(
      (c) => c.Operand === "distinct_hosts" && c.RTarget !== "false",
    );
    if (jobLevel && use.count(this.job.ID) > 0) {
      metric.filterConstraint("distinct_hosts");
      return false;
    }
    if (groupLevel && use.count(this.job.ID, tg.Name) > 0) {
      metric.filterConstraint("distinct_hosts");
      return false;
    }
    return true;
  }

  /** Nomad's EvalEligibility.GetClasses: per computed class, whether the job could run there. */
  classEligibility(): Record<string, boolean> {
    const out: Record<string, boolean> = {};
    for (const byClass of this.groupByClass.values()) {
      for (const [cls, ok] of byClass) {
        if (ok) out[cls] = true;
        else if (!(cls in out)) out[cls] = false;
      }
    }
    for (const [cls, ok] of this.jobByClass) {
      if (ok) {
        if (!(cls in out)) out[cls] = true;
      } else out[cls] = false;
    }
    return out;
  }
}

function groupConstraints(tg: TaskGroupSpec): Constraint[] {
  const all = [...(tg.Constraints ?? [])];
  for (const t of tg.Tasks) all.push(...(t.Constraints ?? []));
  return all;
}

/** Nomad's DriverChecker: each task's driver is detected and healthy (or its `driver.<name>` attribute is true). */
export function hasDrivers(node: NodeRow, tg: TaskGroupSpec): boolean {
  for (const task of tg.Tasks) {
    const driver = task.Driver;
    const info = node.Drivers?.[driver] as { Detected?: boolean; Healthy?: boolean } | undefined;
    if (info) {
      if (!(info.Detected && info.Healthy)) return false;
      continue;
    }
    const attr = node.Attributes[`driver.${driver}`];
    if (attr === undefined || !["1", "t", "T", "true", "TRUE", "True"].includes(attr)) return false;
  }
  return true;
}
