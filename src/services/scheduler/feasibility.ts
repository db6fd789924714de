import type { JobRow } from "../../../projections/jobs.ts";
import type { NodeRow } from "../../../projections/nodes.ts";
import type { Constraint, TaskGroupSpec } from "../../../streams/jobs.ts";
import { escapes, hasDistinctHostsConstraint, meetsConstraint } from "./constraints.ts";
import { CsiFeasibility, type CsiView } from "./csi-feasibility.ts";
import type { AllocMetric } from "./metrics.ts";
import type { NodeUse } from "./plan.ts";
import { inJobPlacement, isReadyNode } from "./ready-nodes.ts";

const constraintString = (c: Constraint) => `${c.LTarget} ${c.Operand} ${c.RTarget}`;

/** Nomad's reason for a node skipped because its computed class already failed. */
export const CLASS_INELIGIBLE = "computed class ineligible";

/** What is checked of one task group, worked out once per evaluation. */
interface GroupChecks {
  readonly constraints: readonly Constraint[];
  /** Nomad's tgEscapedConstraints: a verdict for one node says nothing of its class. */
  readonly escaped: boolean;
  readonly distinctHosts: boolean;
  /** Computed class → whether the group can run there (Nomad's EvalEligibility.taskGroups). */
  readonly byClass: Map<string, boolean>;
}

/**
 * Nomad's feasibility checks for one evaluation (its FeasibilityWrapper):
 * datacenter, readiness, job and group constraints, task drivers, then
 * distinct_hosts. Verdicts that depend only on what a node's computed class
 * captures are cached per class (Nomad's EvalEligibility), so thousands of
 * identical nodes cost one check; constraints on `unique.` properties escape
 * the cache, and distinct_hosts depends on the plan so it is never cached.
 */
export class Feasibility {
  private readonly jobByClass = new Map<string, boolean>();
  private readonly groups = new Map<string, GroupChecks>();
  private readonly jobEscaped: boolean;
  private readonly jobConstraints: readonly Constraint[];
  private readonly jobDistinctHosts: boolean;
  private csiChecks: CsiFeasibility | undefined;

  /** `csi`: the volume tables, for groups that ask for CSI volumes (none: such groups fit nowhere). */
  constructor(
    private readonly job: JobRow,
    private readonly csi?: CsiView,
  ) {
    this.jobConstraints = job.Constraints ?? [];
    this.jobEscaped = this.jobConstraints.some(escapes);
    this.jobDistinctHosts = hasDistinctHostsConstraint(this.jobConstraints);
  }

  /** Whether some verdict could not be cached by class (Nomad's HasEscaped). */
  get escaped(): boolean {
    if (this.jobEscaped) return true;
    for (const g of this.groups.values()) if (g.escaped) return true;
    return false;
  }

  /** Whether the node is one the job may run on at all: ready, eligible, not draining, in its datacenters and node pool. */
  inPool(node: NodeRow): boolean {
    return isReadyNode(node) && inJobPlacement(this.job, node);
  }

  /**
   * Checks `node` for an allocation of `tg` named `allocName`, counting a
   * refusal in `metric`; distinct_hosts too when given the node's proposed `use`.
   */
  feasible(
    node: NodeRow,
    tg: TaskGroupSpec,
    use: NodeUse | undefined,
    metric: AllocMetric,
    allocName: string,
  ): boolean {
    if (!this.constraintsFeasible(node, tg, metric)) return false;
    if (!this.volumesFeasible(node, tg, allocName, metric)) return false;
    if (use && !this.distinctHosts(node, tg, use, metric)) return false;
    return true;
  }

  /** Whether `tg` asks for CSI volumes: a check per node, after the class-cached ones (Nomad's "available" checks). */
  asksForVolumes(tg: TaskGroupSpec): boolean {
    return CsiFeasibility.asksFor(tg);
  }

  /** Nomad's CSIVolumeChecker for an allocation of `tg` named `allocName` on `node`, counting a refusal. */
  volumesFeasible(node: NodeRow, tg: TaskGroupSpec, allocName: string, metric: AllocMetric): boolean {
    if (!CsiFeasibility.asksFor(tg)) return true;
    this.csiChecks ??= new CsiFeasibility(this.csi ?? NO_CSI, this.job.Namespace, this.job.ID);
    return this.csiChecks.feasible(node, tg, allocName, metric);
  }

  /** The checks a node's computed class decides (Nomad's wrapped job and group checkers), counting a refusal. */
  constraintsFeasible(node: NodeRow, tg: TaskGroupSpec, metric: AllocMetric): boolean {
    return this.jobFeasible(node, metric) && this.groupFeasible(node, tg, this.groupChecks(tg), metric);
  }

  /** Whether every verdict of {@link constraintsFeasible} for `tg` holds for the node's whole computed class. */
  cacheable(tg: TaskGroupSpec): boolean {
    return !this.jobEscaped && !this.groupChecks(tg).escaped;
  }

  /** Whether a distinct_hosts constraint applies to `tg` (its own or the job's). */
  hasDistinctHosts(tg: TaskGroupSpec): boolean {
    return this.jobDistinctHosts || this.groupChecks(tg).distinctHosts;
  }

  private groupChecks(tg: TaskGroupSpec): GroupChecks {
    let g = this.groups.get(tg.Name);
    if (!g) {
      const constraints = groupConstraints(tg);
      g = {
        constraints,
        escaped: constraints.some(escapes),
        distinctHosts: hasDistinctHostsConstraint(tg.Constraints),
        byClass: new Map(),
      };
      this.groups.set(tg.Name, g);
    }
    return g;
  }

  private jobFeasible(node: NodeRow, metric: AllocMetric): boolean {
    const cls = node.ComputedClass;
    const cacheable = !this.jobEscaped && cls !== "";
    if (cacheable) {
      const cached = this.jobByClass.get(cls);
      if (cached === false) metric.filterNode(node.NodeClass, CLASS_INELIGIBLE);
      if (cached !== undefined) return cached;
    }
    let ok = true;
    for (const c of this.jobConstraints) {
      if (!meetsConstraint(c, node)) {
        metric.filterNode(node.NodeClass, constraintString(c));
        ok = false;
        break;
      }
    }
    if (cacheable) this.jobByClass.set(cls, ok);
    return ok;
  }

  private groupFeasible(node: NodeRow, tg: TaskGroupSpec, g: GroupChecks, metric: AllocMetric): boolean {
    const cls = node.ComputedClass;
    const cacheable = !g.escaped && cls !== "";
    if (cacheable) {
      const cached = g.byClass.get(cls);
      if (cached === false) metric.filterNode(node.NodeClass, CLASS_INELIGIBLE);
      if (cached !== undefined) return cached;
    }
    // Nomad's order: drivers first (the cheaper check), then constraints.
    let ok = hasDrivers(node, tg);
    if (!ok) metric.filterNode(node.NodeClass, "missing drivers");
    else {
      for (const c of g.constraints) {
        if (!meetsConstraint(c, node)) {
          metric.filterNode(node.NodeClass, constraintString(c));
          ok = false;
          break;
        }
      }
    }
    if (cacheable) g.byClass.set(cls, ok);
    return ok;
  }

  /** Nomad's DistinctHostsIterator, against what the node would run with the plan. */
  distinctHosts(node: NodeRow, tg: TaskGroupSpec, use: NodeUse, metric: AllocMetric): boolean {
    const g = this.groupChecks(tg);
    const taken =
      (this.jobDistinctHosts && use.count(this.job.ID) > 0) ||
      (g.distinctHosts && use.count(this.job.ID, tg.Name) > 0);
    if (taken) metric.filterNode(node.NodeClass, "distinct_hosts");
    return !taken;
  }

  /**
   * Nomad's EvalEligibility.GetClasses: per computed class, whether the job
   * could run there. A Map, not an object: a cluster may have a class per
   * node (node meta outside `unique.`), and an object keyed by thousands of
   * such names costs V8 a hidden class per key wherever it is built or
   * copied (a scheduler thread's outcome deserialized on the main thread
   * took milliseconds); a Map is a hash table wherever it goes.
   */
  classEligibility(): Map<string, boolean> {
    const out = new Map<string, boolean>();
    for (const g of this.groups.values()) {
      for (const [cls, ok] of g.byClass) {
        if (ok) out.set(cls, true);
        else if (!out.has(cls)) out.set(cls, false);
      }
    }
    for (const [cls, ok] of this.jobByClass) {
      if (ok) {
        if (!out.has(cls)) out.set(cls, true);
      } else out.set(cls, false);
    }
    return out;
  }
}

/** No volume tables: every volume is missing. */
const NO_CSI: CsiView = {
  volume: () => undefined,
  plugin: () => undefined,
  alloc: () => undefined,
  allocsOnNode: () => [],
  writers: () => [],
};

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
