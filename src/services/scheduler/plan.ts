import type { AllocRow } from "../../../projections/allocs.ts";
import type { JobRow } from "../../../projections/jobs.ts";
import { allocNetworkUse, offerNetworkUse, type PortSet } from "../../../projections/networks.ts";
import { addUsage, allocUsage, groupUsage, type Usage } from "../../../projections/resources.ts";
import {
  type AllocFollowup,
  type AllocPlacement,
  type AllocStopDiff,
  type ClientStatus,
  isTerminalAlloc,
} from "../../../streams/allocs.ts";
import type { DeploymentSpec, DeploymentStatusUpdate } from "../../../streams/deployments.ts";
import type { TaskGroupSpec } from "../../../streams/jobs.ts";
import type { Table } from "../../store/table.ts";

/** A placement the plan makes, with what the compact record needs. */
export interface PlannedAlloc extends AllocPlacement {
  readonly tg: TaskGroupSpec;
}

/**
 * Nomad's Plan, in memory: what one evaluation wants changed. It also
 * answers "what would this node run if the plan applied" (Nomad's
 * ProposedAllocs), which placement decisions are made against.
 */
export class Plan {
  readonly placements: PlannedAlloc[] = [];
  readonly stops = new Map<string, AllocStopDiff & { readonly NodeID: string }>();
  readonly inPlace: string[] = [];
  readonly disconnected: AllocFollowup[] = [];
  readonly reconnected: string[] = [];
  readonly followups: AllocFollowup[] = [];
  /** Nomad's NodePreemptions: allocations evicted to make room, with the placement that evicts each. */
  readonly preemptions = new Map<string, { readonly alloc: AllocRow; readonly by: string }>();
  deployment: DeploymentSpec | null = null;
  deploymentUpdates: DeploymentStatusUpdate[] = [];
  deploymentID = "";
  private readonly perNode = new Map<string, NodeUse>();
  /**
   * Placements on nodes not in `perNode` when they were made, by node, in
   * the order made: what `proposed` adds when it first builds such a node's
   * use. It used to scan every placement of the plan for each node it met,
   * which for a job of a thousand placements was a thousand steps a node.
   */
  private readonly placedUnseen = new Map<string, PlannedAlloc[]>();
  /** Told of every stop the plan takes (+1) or takes back (-1): property sets follow them (property-set.ts). */
  readonly stopWatchers: ((a: AllocRow, delta: 1 | -1) => void)[] = [];
  /** Placements holding ports, per node (read by network-index.ts when it first gathers a node's ports). */
  readonly portPlacements = new Map<string, PlannedAlloc[]>();

  constructor(
    readonly evalID: string,
    readonly job: JobRow | undefined,
    readonly allocs: Table<AllocRow>,
    private readonly nowNs: number,
  ) {}

  isNoOp(): boolean {
    return (
      this.placements.length === 0 &&
      this.stops.size === 0 &&
      this.inPlace.length === 0 &&
      this.disconnected.length === 0 &&
      this.reconnected.length === 0 &&
      this.followups.length === 0 &&
      this.deployment === null &&
      this.deploymentUpdates.length === 0
    );
  }

  /** Nomad's AppendStoppedAlloc. */
  appendStop(
    a: AllocRow,
    description: string,
    clientStatus: ClientStatus | "" = "",
    followupEvalID = "",
  ): void {
    if (this.stops.has(a.ID)) return;
    this.stops.set(a.ID, {
      ID: a.ID,
      NodeID: a.NodeID,
      DesiredDescription: description,
      ClientStatus: clientStatus,
      FollowupEvalID: followupEvalID,
      ModifyTime: this.nowNs,
    });
    const use = this.perNode.get(a.NodeID);
    if (use && !isTerminalAlloc(a)) use.remove(a);
    for (const w of this.stopWatchers) w(a, 1);
  }

  /** Nomad's PopUpdate: takes back a stop (a replacement that could not be placed). */
  popStop(a: AllocRow): void {
    if (!this.stops.delete(a.ID)) return;
    const use = this.perNode.get(a.NodeID);
    if (use && !isTerminalAlloc(a)) {
      use.add(a.JobID, a.TaskGroup, allocUsage(a));
      use.ports?.addAlloc(allocNetworkUse(a));
    }
    for (const w of this.stopWatchers) w(a, -1);
  }

  /** Nomad's AppendPreemptedAlloc: `a` is evicted for the placement `byAllocID`. */
  appendPreemption(a: AllocRow, byAllocID: string): void {
    if (this.preemptions.has(a.ID) || this.stops.has(a.ID)) return;
    this.preemptions.set(a.ID, { alloc: a, by: byAllocID });
    this.perNode.get(a.NodeID)?.remove(a);
  }

  /** The node's live allocations the plan neither stops nor preempts (what a preemption may choose from). */
  liveAllocsOn(nodeID: string): AllocRow[] {
    const out: AllocRow[] = [];
    for (const a of this.allocs.by("node", nodeID)) {
      if (!isTerminalAlloc(a) && !this.stops.has(a.ID) && !this.preemptions.has(a.ID)) out.push(a);
    }
    return out;
  }

  appendPlacement(p: PlannedAlloc): void {
    this.placements.push(p);
    const use = this.perNode.get(p.NodeID);
    if (use) use.add(this.job?.ID ?? "", p.TaskGroup, groupUsage(p.tg));
    else {
      const unseen = this.placedUnseen.get(p.NodeID);
      if (unseen) unseen.push(p);
      else this.placedUnseen.set(p.NodeID, [p]);
    }
    if (p.Ports || p.TaskNetworks) {
      use?.ports?.addAlloc(offerNetworkUse(p));
      const onNode = this.portPlacements.get(p.NodeID);
      if (onNode) onNode.push(p);
      else this.portPlacements.set(p.NodeID, [p]);
    }
  }

  /** What `nodeID` would run if the plan applied. */
  proposed(nodeID: string): NodeUse {
    let use = this.perNode.get(nodeID);
    if (use) return use;
    use = new NodeUse();
    for (const a of this.allocs.by("node", nodeID)) {
      if (isTerminalAlloc(a) || this.stops.has(a.ID) || this.preemptions.has(a.ID)) continue;
      use.add(a.JobID, a.TaskGroup, allocUsage(a), a.ID);
    }
    const unseen = this.placedUnseen.get(nodeID);
    if (unseen) {
      for (const p of unseen) use.add(this.job?.ID ?? "", p.TaskGroup, groupUsage(p.tg), p.ID);
      this.placedUnseen.delete(nodeID);
    }
    this.perNode.set(nodeID, use);
    return use;
  }
}

/** One node's proposed load: its resources in use and its allocations per job and group. */
export class NodeUse {
  readonly used: Usage = { cpu: 0, memoryMB: 0, diskMB: 0 };
  /** The node's ports in use, once a group asking for ports was ranked on it (network-index.ts portsOn). */
  ports: PortSet | undefined = undefined;
  private readonly jobs = new Map<string, Map<string, number>>();

  add(jobID: string, tg: string, usage: Readonly<Usage>, _id?: string): void {
    addUsage(this.used, usage);
    let groups = this.jobs.get(jobID);
    if (!groups) {
      groups = new Map();
      this.jobs.set(jobID, groups);
    }
    groups.set(tg, (groups.get(tg) ?? 0) + 1);
  }

  remove(a: AllocRow): void {
    addUsage(this.used, allocUsage(a), -1);
    this.ports?.removeAlloc(allocNetworkUse(a));
    const groups = this.jobs.get(a.JobID);
    const n = groups?.get(a.TaskGroup) ?? 0;
    if (groups && n > 0) groups.set(a.TaskGroup, n - 1);
  }

  /** Allocations of `jobID` (of group `tg`, when given) on the node. */
  count(jobID: string, tg?: string): number {
    const groups = this.jobs.get(jobID);
    if (!groups) return 0;
    if (tg !== undefined) return groups.get(tg) ?? 0;
    let n = 0;
    for (const c of groups.values()) n += c;
    return n;
  }
}
