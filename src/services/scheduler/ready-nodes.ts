import type { NodeRow } from "../../../projections/nodes.ts";
import type { JobSpec } from "../../../streams/jobs.ts";
import { inNodePool } from "../../../streams/node-pools.ts";
import type { Table } from "../../store/table.ts";

/** Nomad's Node.Ready(): a node new allocations may go to. */
export function isReadyNode(n: Pick<NodeRow, "Status" | "DrainStrategy" | "SchedulingEligibility">): boolean {
  return n.Status === "ready" && n.DrainStrategy === null && n.SchedulingEligibility !== "ineligible";
}

/** Whether a change of a node row can change the set of ready nodes. */
export function readinessChanged(before: NodeRow | undefined, after: NodeRow | undefined): boolean {
  if (!before || !after) return true;
  return (
    isReadyNode(before) !== isReadyNode(after) ||
    before.Datacenter !== after.Datacenter ||
    before.NodePool !== after.NodePool ||
    before.ComputedClass !== after.ComputedClass
  );
}

/** go-glob's Glob, which Nomad uses to match job datacenters: `*` matches any run of characters. */
export function globMatch(pattern: string, value: string): boolean {
  if (pattern === "*") return true;
  if (!pattern.includes("*")) return pattern === value;
  const parts = pattern.split("*");
  const first = parts[0]!;
  const last = parts[parts.length - 1]!;
  if (!value.startsWith(first)) return false;
  let at = first.length;
  for (let i = 1; i < parts.length - 1; i++) {
    const found = value.indexOf(parts[i]!, at);
    if (found < 0) return false;
    at = found + parts[i]!.length;
  }
  return value.length - last.length >= at && value.endsWith(last);
}

export function inAnyDatacenter(datacenters: readonly string[], dc: string): boolean {
  for (const pattern of datacenters) if (globMatch(pattern, dc)) return true;
  return false;
}

/**
 * Nomad's `IsInAnyDC(job.Datacenters) && IsInPool(job.NodePool)`: whether the
 * job may have allocations on the node at all, readiness aside. The one
 * place the scheduler decides which nodes a job's allocations may go to.
 */
export function inJobPlacement(
  job: Pick<JobSpec, "Datacenters" | "NodePool">,
  node: Pick<NodeRow, "Datacenter" | "NodePool">,
): boolean {
  return inAnyDatacenter(job.Datacenters, node.Datacenter) && inNodePool(job.NodePool, node.NodePool);
}

/**
 * The ready nodes, sorted by ID, and how many there are per datacenter:
 * what every evaluation starts from. Rebuilt only when a node's readiness
 * changes (the leader's scheduler is told by its node subscription), not
 * on every node row change (client updates touch node rows all the time).
 */
export class ReadyNodes {
  private ids: string[] | undefined;
  /** Ready nodes per datacenter, then per node pool. */
  private perDc = new Map<string, Map<string, number>>();

  constructor(private readonly nodes: Table<NodeRow>) {}

  invalidate(): void {
    this.ids = undefined;
  }

  /** IDs of the ready nodes in ID order. */
  list(): readonly string[] {
    if (this.ids) return this.ids;
    const ids: string[] = [];
    const perDc = new Map<string, Map<string, number>>();
    for (const n of this.nodes.all()) {
      if (!isReadyNode(n)) continue;
      ids.push(n.ID);
      let perPool = perDc.get(n.Datacenter);
      if (!perPool) {
        perPool = new Map();
        perDc.set(n.Datacenter, perPool);
      }
      perPool.set(n.NodePool, (perPool.get(n.NodePool) ?? 0) + 1);
    }
    this.ids = ids;
    this.perDc = perDc;
    return ids;
  }

  /**
   * Ready nodes of `pool` per datacenter among `datacenters` (Nomad's
   * NodesAvailable, from readyNodesInDCsAndPool), and their total.
   */
  available(
    datacenters: readonly string[],
    pool: string | undefined,
  ): { byDc: Record<string, number>; total: number } {
    this.list();
    const byDc: Record<string, number> = {};
    let total = 0;
    for (const [dc, perPool] of this.perDc) {
      if (!inAnyDatacenter(datacenters, dc)) continue;
      let n = 0;
      for (const [nodePool, count] of perPool) if (inNodePool(pool, nodePool)) n += count;
      if (n === 0) continue;
      byDc[dc] = n;
      total += n;
    }
    return { byDc, total };
  }
}
