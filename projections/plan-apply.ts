import type { ApplyContext } from "../src/store/projection.ts";
import type { Table } from "../src/store/table.ts";
import {
  ALLOC_STATE_FIELD_CLIENT_STATUS,
  ALLOC_UNKNOWN,
  type AllocationSpec,
  type AllocDeploymentStatus,
  type AllocJob,
  type AllocPlacement,
  type AllocState,
  type AllocsPlanApplied,
  isServerTerminal,
  isTerminalAlloc,
  needsToReconnect,
} from "../streams/allocs.ts";
import type { TaskGroupSpec } from "../streams/jobs.ts";
import { allocRowFromSpec, copyAllocRow } from "./alloc-row.ts";
import type { AllocRow } from "./allocs.ts";
import { nodeLiveUsage } from "./allocs-node-usage.ts";
import { otherWriter, requestedVolumeID, volumeWriterKey, type WrittenVolume } from "./csi-volume-writers.ts";
import { goTime } from "./go-time.ts";
import type { JobRow } from "./jobs.ts";
import { versionKey } from "./jobs.ts";
import { heldOffer, hostIPOf, placementPortCollision, withNetworkOffer } from "./networks.ts";
import type { NodeRow } from "./nodes.ts";
import {
  assignPreemptions,
  type PartPreemptions,
  placementNodes,
  preemptedBy,
  preemptedDescription,
} from "./plan-preemptions.ts";
import {
  addUsage,
  allocUsage,
  exhaustedDimension,
  groupAllocation,
  nodeCapacity,
  type Usage,
} from "./resources.ts";

/** One node's part of a plan that apply refused, and why. */
export interface RefusedNode {
  readonly NodeID: string;
  readonly Reason: string;
  /** The allocations placed, updated or stopped on it that were not applied. */
  readonly AllocIDs: readonly string[];
}

/** The second check's verdict on a plan, kept so the worker (and an auditor) can see what did not apply. */
export interface PlanRefusalRow {
  readonly ID: string;
  readonly EvalID: string;
  readonly Nodes: readonly RefusedNode[];
  /** Entries refused on their own (an ID already taken, an allocation no longer current). */
  readonly Allocs: readonly { readonly ID: string; readonly Reason: string }[];
  readonly CreateIndex: number;
  readonly ModifyIndex: number;
}

export interface PlanTables {
  readonly allocs: Table<AllocRow>;
  readonly nodes: Table<NodeRow>;
  readonly refusals: Table<PlanRefusalRow>;
  readonly versions?: Table<JobRow>;
  /** csi_volumes: a placement must not write a single-writer volume another job writes. */
  readonly csiVolumes?: { get(key: string): WrittenVolume | undefined };
}

/** The key refusals of a plan record are kept under. */
export const planRefusalKey = (plan: Pick<AllocsPlanApplied, "PlanID">, index: number) =>
  plan.PlanID || `index-${index}`;

interface NodePart {
  placed: AllocationSpec[];
  placements: AllocPlacement[];
  updated: AllocationSpec[];
  inPlace: AllocRow[];
  stopped: string[];
  preempted: string[];
  disconnected: { row: AllocRow; followup: string }[];
  reconnected: AllocRow[];
  preemptions?: PartPreemptions;
}

/**
 * The list a part has no entry of: one shared, frozen array, replaced by a
 * list of its own on the part's first entry (`added`). A plan record's
 * parts are mostly one placement each: eight arrays per part were most of
 * what grouping allocated.
 */
const NONE = Object.freeze([]) as never[];

const emptyPart = (): NodePart => ({
  placed: NONE,
  placements: NONE,
  updated: NONE,
  inPlace: NONE,
  stopped: NONE,
  preempted: NONE,
  disconnected: NONE,
  reconnected: NONE,
});

/** `list` with `entry` at its end: the part's own list (NONE is never written). */
function added<T>(list: T[], entry: T): T[] {
  if (list === NONE) return [entry];
  list.push(entry);
  return list;
}

/**
 * Applies a plan result (Nomad's plan applier check plus UpsertPlanResults).
 * The whole-plan preconditions of the full-spec fields refuse the record.
 * Then each node's part is checked again against the tables as they are now
 * (node ready for new placements, everything it would run still fits, the
 * updated allocations still current): a part that no longer holds is refused
 * and recorded, the others apply. Pure and deterministic: the order is the
 * record's.
 */
export function applyPlan(ctx: ApplyContext, t: PlanTables, plan: AllocsPlanApplied, at: number): void {
  const { allocs, nodes } = t;
  // Whole-plan preconditions of the full-spec fields, before any change.
  for (const a of plan.Placed) {
    if (allocs.has(a.ID)) {
      ctx.reject(409, `allocation ${a.ID} already exists`);
      return;
    }
    if (a.Job === null) {
      ctx.reject(400, `attempting to upsert allocation "${a.ID}" without a job`);
      return;
    }
    const node = nodes.get(a.NodeID);
    if (!node) {
      ctx.reject(409, `node ${a.NodeID} not found: allocation ${a.ID} cannot be placed`);
      return;
    }
    if (node.Status !== "ready" || node.DrainStrategy !== null) {
      ctx.reject(409, `node ${a.NodeID} is not ready for placements (status ${node.Status})`);
      return;
    }
  }
  for (const a of plan.Updated) {
    if (!allocs.has(a.ID)) {
      ctx.reject(404, `allocation ${a.ID} not found: cannot update it in place`);
      return;
    }
  }
  for (const d of [...plan.Stopped, ...plan.Preempted]) {
    if (!allocs.has(d.ID)) {
      ctx.reject(404, `alloc ${d.ID} doesn't exist`);
      return;
    }
  }
  const compact = (plan.Placements?.length ?? 0) + (plan.InPlace?.length ?? 0);
  let job: JobRow | undefined;
  if (compact > 0) {
    const ref = plan.Job;
    job = ref && t.versions ? t.versions.get(versionKey(ref.Namespace, ref.ID, ref.Version)) : undefined;
    if (!job) {
      ctx.reject(
        400,
        `plan refers to job version ${ref ? `${ref.Namespace}/${ref.ID}@${ref.Version}` : "(none)"}, which does not exist`,
      );
      return;
    }
  }

  // Group every entry by the node it changes.
  const parts = new Map<string, NodePart>();
  const part = (nodeID: string) => {
    let p = parts.get(nodeID);
    if (!p) {
      p = emptyPart();
      parts.set(nodeID, p);
    }
    return p;
  };
  const refusedAllocs: { ID: string; Reason: string }[] = [];
  const current = (id: string): AllocRow | undefined => {
    const a = allocs.get(id);
    if (!a || isServerTerminal(a)) {
      refusedAllocs.push({ ID: id, Reason: a ? "allocation was stopped" : "allocation no longer exists" });
      return undefined;
    }
    return a;
  };
  const taken = new Set<string>();
  for (const a of plan.Placed) {
    const q = part(a.NodeID);
    q.placed = added(q.placed, a);
  }
  for (const p of plan.Placements ?? []) {
    if (allocs.has(p.ID) || taken.has(p.ID)) {
      refusedAllocs.push({ ID: p.ID, Reason: "allocation ID already exists" });
      continue;
    }
    taken.add(p.ID);
    const q = part(p.NodeID);
    q.placements = added(q.placements, p);
  }
  for (const a of plan.Updated) {
    const q = part(allocs.get(a.ID)!.NodeID);
    q.updated = added(q.updated, a);
  }
  for (const id of plan.InPlace ?? []) {
    const a = current(id);
    if (!a) continue;
    const q = part(a.NodeID);
    q.inPlace = added(q.inPlace, a);
  }
  for (const d of plan.Stopped) {
    const q = part(allocs.get(d.ID)!.NodeID);
    q.stopped = added(q.stopped, d.ID);
  }
  for (const d of plan.Preempted) {
    const q = part(allocs.get(d.ID)!.NodeID);
    q.preempted = added(q.preempted, d.ID);
  }
  for (const d of plan.Disconnected ?? []) {
    const a = current(d.ID);
    if (!a) continue;
    const q = part(a.NodeID);
    q.disconnected = added(q.disconnected, { row: a, followup: d.FollowupEvalID });
  }
  for (const id of plan.Reconnected ?? []) {
    const a = current(id);
    if (!a) continue;
    const q = part(a.NodeID);
    q.reconnected = added(q.reconnected, a);
  }

  if (plan.Preemptions) assignPreemptions(plan, allocs, placementNodes(parts.values()), part);

  // The second check, node by node.
  const refusedNodes: RefusedNode[] = [];
  const accepted: NodePart[] = [];
  // Eligibility is re-checked only for records that say when they were
  // computed: older logs replay exactly as they applied.
  const eligibility = plan.SnapshotIndex !== undefined;
  for (const [nodeID, p] of parts) {
    const reason = checkNode(t, nodeID, p, job, eligibility);
    if (reason === undefined) accepted.push(p);
    else refusedNodes.push({ NodeID: nodeID, Reason: reason, AllocIDs: idsOf(p) });
  }

  const stops = new Map(plan.Stopped.map((d) => [d.ID, d]));
  const preempts = new Map(plan.Preempted.map((d) => [d.ID, d]));
  const nowNs = at * 1e6;
  for (const p of accepted) {
    for (const id of p.stopped) {
      const d = stops.get(id)!;
      const stored = allocs.get(id)!;
      const row = copyAllocRow(stored);
      row.DesiredStatus = "stop";
      row.DesiredDescription = d.DesiredDescription;
      row.ClientStatus = d.ClientStatus || stored.ClientStatus;
      // Marked lost once, whether the heartbeat path or a plan got there first.
      if (d.ClientStatus === "lost" && stored.ClientStatus !== "lost")
        row.AllocStates = withState(stored.AllocStates, "lost", at);
      row.FollowupEvalID = d.FollowupEvalID || stored.FollowupEvalID;
      row.ModifyTime = d.ModifyTime;
      row.ModifyIndex = ctx.index;
      row.AllocModifyIndex = ctx.index;
      ctx.put(allocs, row);
    }
    for (const { row, by } of p.preemptions?.evictions ?? []) {
      const evicted = copyAllocRow(row);
      evicted.DesiredStatus = "evict";
      evicted.DesiredDescription = preemptedDescription(by);
      evicted.PreemptedByAllocation = by;
      evicted.ModifyTime = nowNs;
      evicted.ModifyIndex = ctx.index;
      evicted.AllocModifyIndex = ctx.index;
      ctx.put(allocs, evicted);
    }
    for (const id of p.preempted) {
      const d = preempts.get(id)!;
      const stored = allocs.get(id)!;
      const row = copyAllocRow(stored);
      row.DesiredStatus = "evict";
      row.DesiredDescription = `Preempted by alloc ID ${d.PreemptedByAllocation}`;
      row.PreemptedByAllocation = d.PreemptedByAllocation;
      row.ModifyTime = d.ModifyTime;
      row.ModifyIndex = ctx.index;
      row.AllocModifyIndex = ctx.index;
      ctx.put(allocs, row);
    }
    for (const spec of p.updated) {
      const stored = allocs.get(spec.ID)!;
      const serverSetsClient = spec.ClientStatus === "lost" || spec.ClientStatus === "unknown";
      const row = allocRowFromSpec(spec);
      row.Job = spec.Job ?? stored.Job;
      // The client owns its task states and, unless the server gives the
      // allocation up, its status.
      row.TaskStates = stored.TaskStates;
      row.ClientStatus = serverSetsClient ? spec.ClientStatus : stored.ClientStatus;
      row.ClientDescription = serverSetsClient ? spec.ClientDescription : stored.ClientDescription;
      row.CreateIndex = stored.CreateIndex;
      row.ModifyIndex = ctx.index;
      row.AllocModifyIndex = ctx.index;
      ctx.put(allocs, row);
      linkPrevious(ctx, allocs, spec);
    }
    for (const { ID } of p.inPlace) {
      const stored = allocs.get(ID)!;
      const tg = groupOf(job!, stored.TaskGroup);
      const held = tg ? heldOffer(stored) : undefined;
      const base = tg ? groupAllocation(tg) : undefined;
      // Nomad keeps the ports an allocation holds through an in-place update.
      const resources =
        base && held && tg ? withNetworkOffer(base, tg, held, hostIPOf(nodes.get(stored.NodeID))) : base;
      const deploymentID = plan.DeploymentID ?? "";
      const row = copyAllocRow(stored);
      row.Job = job as AllocJob;
      row.AllocatedResources = resources?.AllocatedResources ?? stored.AllocatedResources;
      row.TaskResources = resources?.TaskResources ?? stored.TaskResources;
      row.SharedResources = resources?.SharedResources ?? stored.SharedResources;
      row.Resources = resources?.Resources ?? stored.Resources;
      row.DesiredDescription = "";
      row.EvalID = plan.EvalID;
      row.DeploymentID = deploymentID;
      row.DeploymentStatus = deploymentID === stored.DeploymentID ? stored.DeploymentStatus : null;
      // Nomad signs every allocation the plan updates again, with the active key.
      row.SigningKeyID = plan.SigningKeyID || stored.SigningKeyID;
      row.ModifyTime = nowNs;
      row.ModifyIndex = ctx.index;
      row.AllocModifyIndex = ctx.index;
      ctx.put(allocs, row);
    }
    for (const spec of p.placed) {
      const row = allocRowFromSpec(spec);
      row.DeploymentStatus = stampDeployment(spec.DeploymentStatus, ctx.index);
      row.CreateIndex = ctx.index;
      row.ModifyIndex = ctx.index;
      row.AllocModifyIndex = ctx.index;
      ctx.put(allocs, row);
      linkPrevious(ctx, allocs, spec);
    }
    const evicting = p.preemptions ? preemptedBy(p.preemptions) : NO_EVICTIONS;
    for (const placement of p.placements) {
      const row = placedRow(placement, plan, job!, nodes.get(placement.NodeID)!, nowNs, ctx.index, evicting);
      ctx.put(allocs, row);
      linkPrevious(ctx, allocs, row);
    }
    for (const { row, followup } of p.disconnected) {
      const stored = allocs.get(row.ID)!;
      const already = stored.ClientStatus === "unknown";
      const unknown = copyAllocRow(stored);
      unknown.ClientStatus = "unknown";
      unknown.ClientDescription = ALLOC_UNKNOWN;
      // The heartbeat path may have recorded the disconnect already: one entry per disconnect.
      if (!already) unknown.AllocStates = withState(stored.AllocStates, "unknown", at);
      unknown.FollowupEvalID = followup || stored.FollowupEvalID;
      unknown.ModifyTime = nowNs;
      unknown.ModifyIndex = ctx.index;
      unknown.AllocModifyIndex = ctx.index;
      ctx.put(allocs, unknown);
    }
    for (const row of p.reconnected) {
      const stored = allocs.get(row.ID)!;
      // Exactly one reconnect entry per disconnect, whoever records it first.
      if (!needsToReconnect(stored) || stored.ClientStatus === "unknown") continue;
      const back = copyAllocRow(stored);
      back.AllocStates = withState(stored.AllocStates, stored.ClientStatus, at);
      back.ModifyTime = nowNs;
      back.ModifyIndex = ctx.index;
      back.AllocModifyIndex = ctx.index;
      ctx.put(allocs, back);
    }
  }
  // Attribute updates change no resources: they apply wherever the allocation is.
  for (const f of plan.Followups ?? []) {
    const stored = allocs.get(f.ID);
    if (!stored) continue;
    const row = copyAllocRow(stored);
    row.FollowupEvalID = f.FollowupEvalID;
    row.ModifyIndex = ctx.index;
    row.AllocModifyIndex = ctx.index;
    ctx.put(allocs, row);
  }
  if (refusedNodes.length > 0 || refusedAllocs.length > 0) {
    ctx.put(t.refusals, {
      ID: planRefusalKey(plan, ctx.index),
      EvalID: plan.EvalID,
      Nodes: refusedNodes,
      Allocs: refusedAllocs,
      CreateIndex: ctx.index,
      ModifyIndex: ctx.index,
    });
  }
}

/** Why a node's part cannot apply, or undefined when it can (Nomad's evaluateNodePlan). */
function checkNode(
  t: PlanTables,
  nodeID: string,
  p: NodePart,
  job: JobRow | undefined,
  eligibility: boolean,
): string | undefined {
  const adds = p.placed.length + p.placements.length + p.updated.length + p.inPlace.length;
  const node = t.nodes.get(nodeID);
  if (p.disconnected.length > 0 && node?.Status !== "disconnected") {
    return `node is ${node?.Status ?? "gone"}, not disconnected: cannot mark its allocations unknown`;
  }
  if (adds === 0 && p.reconnected.length === 0) return undefined;
  if (!node) return "node does not exist";
  if (p.preemptions?.problem) return p.preemptions.problem;
  const placing = p.placed.length + p.placements.length > 0;
  if (placing && (node.Status !== "ready" || node.DrainStrategy !== null))
    return "node is not ready for placements";
  // Nomad lets in-place updates and stops through on an ineligible node, not new allocations.
  if (placing && eligibility && node.SchedulingEligibility === "ineligible") return "node is not eligible";
  if (!placing && (node.Status === "down" || node.Status === "disconnected")) {
    return `node is ${node.Status}: its allocations cannot be updated`;
  }
  if (adds === 0) return undefined;
  // What the node would run: its live allocations, minus what the plan stops
  // or replaces on it, plus what the plan puts there.
  // Most parts only place: no set or map of what leaves or is replaced then.
  const extra = p.preemptions?.leaving;
  const leaving: ReadonlySet<string> =
    p.stopped.length + p.preempted.length + (extra?.length ?? 0) === 0
      ? NOTHING_LEAVES
      : new Set<string>([...p.stopped, ...p.preempted, ...(extra ?? [])]);
  // The kept total, corrected by what the plan touches here: O(the plan's
  // part), not O(the node's allocations). Exact, as summing them was.
  const used = nodeLiveUsage(t.allocs, nodeID);
  for (const id of leaving) {
    const a = countedOn(t.allocs, nodeID, id);
    if (a) addUsage(used, allocUsage(a), -1);
  }
  if (p.updated.length + p.inPlace.length > 0) {
    const replaced = new Map<string, Readonly<Usage>>();
    for (const a of p.updated) replaced.set(a.ID, allocUsage(a));
    for (const a of p.inPlace) {
      const tg = job ? groupOf(job, a.TaskGroup) : undefined;
      replaced.set(a.ID, tg ? groupAllocation(tg).usage : allocUsage(a));
    }
    for (const [id, usage] of replaced) {
      const a = leaving.has(id) ? undefined : countedOn(t.allocs, nodeID, id);
      if (!a) continue;
      addUsage(used, allocUsage(a), -1);
      addUsage(used, usage);
    }
  }
  for (const a of p.placed) addUsage(used, allocUsage(a));
  for (const placement of p.placements) {
    const tg = groupOf(job!, placement.TaskGroup);
    if (!tg) return `task group ${placement.TaskGroup} is not in the job`;
    addUsage(used, groupAllocation(tg).usage);
  }
  const dimension = exhaustedDimension(nodeCapacity(node), used);
  if (dimension) return `resources exhausted: ${dimension}`;
  // Which collision is reported depends on the order, which must be the
  // same live and after a snapshot restore: key order, read only when the
  // plan places something with ports here.
  const ports = placementPortCollision(
    node,
    new AllocsOnNode(t.allocs, nodeID),
    leaving,
    p.placed,
    p.placements,
  );
  return ports ?? csiWriterConflict(t, p, job, leaving);
}

const NOTHING_LEAVES: ReadonlySet<string> = new Set();
const NO_EVICTIONS: ReadonlyMap<string, readonly string[]> = new Map();

/*
 * Module functions and a class rather than closures made per node part:
 * tsx names every closure it compiles, a property write per creation.
 */

/** The allocation `id` when it is live on `nodeID` (counted in the node's kept total). */
function countedOn(allocs: Table<AllocRow>, nodeID: string, id: string): AllocRow | undefined {
  const a = allocs.get(id);
  return a && a.NodeID === nodeID && !isTerminalAlloc(a) ? a : undefined;
}

/** The node's allocations in key order, looked up only if iterated. */
class AllocsOnNode implements Iterable<AllocRow> {
  constructor(
    private readonly allocs: Table<AllocRow>,
    private readonly nodeID: string,
  ) {}

  [Symbol.iterator](): Iterator<AllocRow> {
    return this.allocs.by("node", this.nodeID)[Symbol.iterator]();
  }
}

/**
 * A placement that would write a single-writer CSI volume that another
 * job's allocation holds the write claim of, or writes while live (its
 * client may not have claimed it yet): the scheduler's check again, at
 * apply, so plans computed at once never place two writers.
 */
function csiWriterConflict(
  t: PlanTables,
  p: NodePart,
  job: JobRow | undefined,
  leaving: ReadonlySet<string>,
): string | undefined {
  if (!t.csiVolumes) return undefined;
  // Asked group by group, without a list of what each placement asks: most
  // groups have no volumes, and this runs for every node part a plan places on.
  for (const a of p.placed) {
    const tg = a.Job?.TaskGroups.find((g) => g.Name === a.TaskGroup) as TaskGroupSpec | undefined;
    const conflict = volumeConflict(t, tg, a.Name, a.Namespace, a.JobID, leaving);
    if (conflict !== undefined) return conflict;
  }
  if (job) {
    for (const a of p.placements) {
      const conflict = volumeConflict(t, groupOf(job, a.TaskGroup), a.Name, job.Namespace, job.ID, leaving);
      if (conflict !== undefined) return conflict;
    }
  }
  return undefined;
}

/** csiWriterConflict for one placement of group `tg`. */
function volumeConflict(
  t: PlanTables,
  tg: TaskGroupSpec | undefined,
  name: string,
  namespace: string,
  jobID: string,
  leaving: ReadonlySet<string>,
): string | undefined {
  const volumes = tg?.Volumes;
  if (!volumes) return undefined;
  for (const v of Object.values(volumes)) {
    if (v?.Type !== "csi" || v.ReadOnly === true) continue;
    const id = requestedVolumeID(v, name);
    const key = volumeWriterKey(namespace, id);
    // No such volume: nothing to exceed (and records from before volumes apply as they did).
    const volume = t.csiVolumes!.get(key);
    if (!volume) continue;
    const other = otherWriter(volume, key, v.AccessMode ?? "", namespace, jobID, t.allocs, leaving);
    if (other !== undefined)
      return `CSI volume ${id} has exhausted its available writer claims: allocation ${other} writes it`;
  }
  return undefined;
}

function idsOf(p: NodePart): string[] {
  return [
    ...p.placed.map((a) => a.ID),
    ...p.placements.map((a) => a.ID),
    ...p.updated.map((a) => a.ID),
    ...p.inPlace.map((a) => a.ID),
    ...p.stopped,
    ...p.preempted,
    ...(p.preemptions?.evictions.map((e) => e.row.ID) ?? []),
    ...p.disconnected.map((d) => d.row.ID),
    ...p.reconnected.map((a) => a.ID),
  ];
}

/** A loop, not find with a closure: asked three times for every placement. */
function groupOf(job: JobRow, name: string): TaskGroupSpec | undefined {
  for (const tg of job.TaskGroups) if (tg.Name === name) return tg;
  return undefined;
}

/** Nomad's AllocMetric of a placement: what the placement recorded of its search, Nomad's zero values elsewhere. */
function placedMetrics(p: AllocPlacement, nodeID: string): AllocRow["Metrics"] {
  const m = p.Metrics;
  return {
    NodesEvaluated: p.NodesEvaluated ?? 0,
    NodesFiltered: m?.NodesFiltered ?? 0,
    NodesInPool: m?.NodesInPool ?? 0,
    NodesAvailable: m?.NodesAvailable ?? null,
    ClassFiltered: m?.ClassFiltered ?? null,
    ConstraintFiltered: m?.ConstraintFiltered ?? null,
    NodesExhausted: m?.NodesExhausted ?? 0,
    ClassExhausted: m?.ClassExhausted ?? null,
    DimensionExhausted: m?.DimensionExhausted ?? null,
    QuotaExhausted: null,
    ResourcesExhausted: null,
    Scores: null,
    ScoreMetaData:
      m?.ScoreMetaData ??
      (p.Score === undefined ? null : [{ NodeID: nodeID, Scores: null, NormScore: p.Score }]),
    AllocationTime: 0,
    CoalescedFailures: 0,
  } as AllocRow["Metrics"];
}

/**
 * A new allocation's DesiredTransition: none, one object for all of them
 * (rows are never changed in place; a transition is a new object, see
 * mergeTransition) rather than an empty one kept with each row.
 */
const NO_TRANSITION: AllocRow["DesiredTransition"] = Object.freeze({});

/**
 * A compact placement made whole: Nomad's Allocation as the generic
 * scheduler builds it. Its fields are ALLOC_ROW_KEYS in that order
 * (alloc-row.ts): copyAllocRow's literal then gives changed rows this
 * literal's hidden class.
 */
function placedRow(
  p: AllocPlacement,
  plan: AllocsPlanApplied,
  job: JobRow,
  node: NodeRow,
  nowNs: number,
  index: number,
  preempted: ReadonlyMap<string, readonly string[]>,
): AllocRow {
  const tg = groupOf(job, p.TaskGroup)!;
  const shared = groupAllocation(tg);
  const resources = p.Ports || p.TaskNetworks ? withNetworkOffer(shared, tg, p, hostIPOf(node)) : shared;
  return {
    CreateIndex: index,
    ModifyIndex: index,
    AllocModifyIndex: index,
    ID: p.ID,
    Namespace: job.Namespace,
    EvalID: plan.EvalID,
    Name: p.Name,
    // The node row's own string, equal to the record's: the record's copy
    // (decoded with the record) is then garbage at once, not kept and
    // promoted with the row.
    NodeID: node.ID,
    NodeName: node.Name,
    JobID: job.ID,
    Job: job as AllocJob,
    TaskGroup: p.TaskGroup,
    Resources: resources.Resources,
    SharedResources: resources.SharedResources,
    TaskResources: resources.TaskResources,
    AllocatedResources: resources.AllocatedResources,
    Metrics: placedMetrics(p, node.ID),
    DesiredStatus: "run",
    DesiredDescription: "",
    DesiredTransition: NO_TRANSITION,
    ClientStatus: "pending",
    ClientDescription: "",
    TaskStates: null,
    AllocStates: null,
    PreviousAllocation: p.PreviousAllocation ?? "",
    NextAllocation: "",
    DeploymentID: plan.DeploymentID ?? "",
    DeploymentStatus: p.Canary
      ? { Healthy: null, Timestamp: "0001-01-01T00:00:00Z", Canary: true, ModifyIndex: index }
      : null,
    RescheduleTracker: p.RescheduleTracker ?? null,
    NetworkStatus: null,
    FollowupEvalID: "",
    PreemptedAllocations: preempted.get(p.ID) ?? null,
    PreemptedByAllocation: "",
    SigningKeyID: plan.SigningKeyID ?? "",
    CreateTime: nowNs,
    ModifyTime: nowNs,
  };
}

function linkPrevious(
  ctx: ApplyContext,
  allocs: Table<AllocRow>,
  spec: Pick<AllocationSpec, "ID" | "PreviousAllocation">,
): void {
  if (!spec.PreviousAllocation) return;
  const prev = allocs.get(spec.PreviousAllocation);
  if (!prev) return;
  const row = copyAllocRow(prev);
  row.NextAllocation = spec.ID;
  row.ModifyIndex = ctx.index;
  ctx.put(allocs, row);
}

function stampDeployment(status: AllocDeploymentStatus | null, index: number): AllocDeploymentStatus | null {
  return status ? { ...status, ModifyIndex: index } : null;
}

export function withState(states: readonly AllocState[] | null, value: string, at: number): AllocState[] {
  return [...(states ?? []), { Field: ALLOC_STATE_FIELD_CLIENT_STATUS, Value: value, Time: goTime(at) }];
}
