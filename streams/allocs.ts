import type { DeploymentSpec, DeploymentStatusUpdate } from "./deployments.ts";
import { type Envelope, schemas } from "./event-schema.ts";
import type { JobVersionRef } from "./jobs.ts";
import type { JsonObject } from "./nodes.ts";

export type DesiredStatus = "run" | "stop" | "evict";
export type ClientStatus = "pending" | "running" | "complete" | "failed" | "lost" | "unknown";
export const CLIENT_STATUSES: readonly ClientStatus[] = [
  "pending",
  "running",
  "complete",
  "failed",
  "lost",
  "unknown",
];

/** Nomad's AllocStateField enum: the only field it tracks is the client status. */
export const ALLOC_STATE_FIELD_CLIENT_STATUS = 0;

export interface AllocState {
  readonly Field: number;
  readonly Value: string;
  /** RFC 3339. */
  readonly Time: string;
}

export interface DesiredTransition {
  readonly Migrate?: boolean | null;
  readonly Reschedule?: boolean | null;
  readonly ForceReschedule?: boolean | null;
  readonly NoShutdownDelay?: boolean | null;
}

/** The task group fields the control plane reads; the rest of Nomad's TaskGroup is carried as is. */
export interface AllocTaskGroup {
  readonly Name: string;
  readonly Count?: number;
  /** Nanoseconds (Nomad 1.3–1.7 `max_client_disconnect`); null or absent when unset. */
  readonly MaxClientDisconnect?: number | null;
  /** Nomad 1.8+ `disconnect` block; LostAfter (ns) plays the role of MaxClientDisconnect. */
  readonly Disconnect?: { readonly LostAfter?: number | null } | null;
  readonly ReschedulePolicy?: ReschedulePolicy | null;
  readonly [field: string]: unknown;
}

export interface ReschedulePolicy {
  readonly Attempts?: number;
  /** Nanoseconds. */
  readonly Interval?: number;
  readonly Unlimited?: boolean;
  readonly [field: string]: unknown;
}

/**
 * The job as the allocation carries it (Nomad's Allocation.Job snapshot).
 * Only the fields read here are typed; the rest is stored as sent.
 */
export interface AllocJob {
  readonly ID: string;
  readonly Namespace: string;
  readonly Type: string;
  readonly Priority: number;
  readonly Version: number;
  readonly CreateIndex: number;
  readonly ModifyIndex: number;
  readonly JobModifyIndex: number;
  readonly TaskGroups: readonly AllocTaskGroup[];
  readonly [field: string]: unknown;
}

export interface AllocDeploymentStatus {
  readonly Healthy: boolean | null;
  readonly Timestamp: string;
  readonly Canary: boolean;
  readonly ModifyIndex: number;
}

export interface RescheduleEvent {
  /** Unix nanoseconds. */
  readonly RescheduleTime: number;
  readonly PrevAllocID: string;
  readonly PrevNodeID: string;
  readonly Delay: number;
}

/**
 * Nomad's Allocation, with Nomad's field names, as the plan applier decides
 * it. CreateIndex, ModifyIndex and AllocModifyIndex are not here: they are
 * the log indexes the projection stamps. Times are Unix nanoseconds.
 */
export interface AllocationSpec {
  readonly ID: string;
  readonly Namespace: string;
  readonly EvalID: string;
  /** `<job>.<group>[<index>]`. */
  readonly Name: string;
  readonly NodeID: string;
  readonly NodeName: string;
  readonly JobID: string;
  /** Required when an allocation is placed; an in-place update may leave it null to keep the stored one. */
  readonly Job: AllocJob | null;
  readonly TaskGroup: string;
  readonly Resources: JsonObject | null;
  readonly SharedResources: JsonObject | null;
  readonly TaskResources: JsonObject | null;
  readonly AllocatedResources: JsonObject | null;
  readonly Metrics: JsonObject | null;
  readonly DesiredStatus: DesiredStatus;
  readonly DesiredDescription: string;
  readonly DesiredTransition: DesiredTransition;
  readonly ClientStatus: ClientStatus;
  readonly ClientDescription: string;
  readonly TaskStates: Readonly<Record<string, JsonObject>> | null;
  readonly AllocStates: readonly AllocState[] | null;
  readonly PreviousAllocation: string;
  readonly NextAllocation: string;
  readonly DeploymentID: string;
  readonly DeploymentStatus: AllocDeploymentStatus | null;
  readonly RescheduleTracker: { readonly Events: readonly RescheduleEvent[] | null } | null;
  readonly NetworkStatus: JsonObject | null;
  readonly FollowupEvalID: string;
  readonly PreemptedAllocations: readonly string[] | null;
  readonly PreemptedByAllocation: string;
  /**
   * The root key that signed its workload identities ("" for none). Nomad's
   * SignedIdentities (task → JWT) is not stored: the JWTs are made again
   * from this key and CreateTime when a client is served them.
   */
  readonly SigningKeyID: string;
  readonly CreateTime: number;
  readonly ModifyTime: number;
}

/** A plan's stop of an allocation (Nomad's normalized AllocsStopped entry). */
export interface AllocStopDiff {
  readonly ID: string;
  readonly DesiredDescription: string;
  /** "" keeps the stored client status; `lost` when the server gives the allocation up. */
  readonly ClientStatus: ClientStatus | "";
  readonly FollowupEvalID: string;
  readonly ModifyTime: number;
}

/** A plan's preemption of an allocation (evicted in favour of another). */
export interface AllocPreemptDiff {
  readonly ID: string;
  readonly PreemptedByAllocation: string;
  readonly ModifyTime: number;
}

/**
 * The allocation part of a plan result (Nomad's ApplyPlanResults): placed
 * allocations, in-place updates of existing ones, stops and preemptions, at
 * one index. Written by the plan applier; apply checks that placements still
 * land on ready nodes and that everything it changes exists.
 *
 * The optional fields are the scheduler's compact form (added without a new
 * version: a record without them means what it always meant). A compact
 * placement carries only what differs per allocation; apply takes the job
 * from the versions table (`Job`), the node name from the nodes table, the
 * resources from the task group, the times from the envelope. Apply checks
 * every node's part again (still ready, still fits) and refuses the parts
 * that no longer hold, recording them under PlanID; the rest applies.
 */
export interface AllocsPlanApplied {
  readonly EvalID: string;
  readonly Placed: readonly AllocationSpec[];
  readonly Updated: readonly AllocationSpec[];
  readonly Stopped: readonly AllocStopDiff[];
  readonly Preempted: readonly AllocPreemptDiff[];
  /** Names this record for its refusals (a retry or another chunk of the same evaluation gets its own). */
  readonly PlanID?: string;
  /**
   * The log index of the tables the scheduler computed the plan against
   * (Nomad's Plan.SnapshotIndex); apply checks it again against the tables
   * at the record's own index. A record that carries it is also refused on
   * nodes that became ineligible for new placements meanwhile (Nomad's
   * evaluateNodePlan); records written before it existed apply as they did.
   */
  readonly SnapshotIndex?: number;
  /** The job version the plan was computed for; compact placements and in-place updates take it. */
  readonly Job?: JobVersionRef | null;
  /** The deployment compact placements and in-place updates join ("" for none). */
  readonly DeploymentID?: string;
  readonly Placements?: readonly AllocPlacement[];
  /** Allocations moved to `Job` in place (same resources, new version). */
  readonly InPlace?: readonly string[];
  /** Allocations on disconnected nodes: `unknown`, with their max-disconnect-timeout evaluation. */
  readonly Disconnected?: readonly AllocFollowup[];
  /** Allocations that reconnected: an AllocState entry with their client status, at most once per disconnect. */
  readonly Reconnected?: readonly string[];
  /** FollowupEvalID set on allocations to be rescheduled later. */
  readonly Followups?: readonly AllocFollowup[];
  /** A deployment the plan creates. */
  readonly Deployment?: DeploymentSpec | null;
  readonly DeploymentUpdates?: readonly DeploymentStatusUpdate[];
  /**
   * The root key that signed the workload identities of this record's compact
   * placements and in-place updates (Nomad's Allocation.SigningKeyID, set
   * by signAllocIdentities for every allocation the plan updates). Absent:
   * placed without identities, in-place updates keep theirs. The JWTs are
   * not here: they are bearer credentials, and the log must be safe to
   * export. They follow from this key, the allocation and its CreateTime
   * (src/identity/claims.ts).
   */
  readonly SigningKeyID?: string;
  /**
   * Nomad's NodePreemptions, compact: allocations a placement of this record
   * evicts (on the placement's node). Apply refuses the placement's node part
   * when one no longer exists or is on another node, or when the placement
   * does not fit with the preempted counted as freed; otherwise they become
   * `evict` with PreemptedByAllocation, and the placement lists them in
   * PreemptedAllocations. One already terminal is left as it is (its
   * resources are free), as Nomad's plan applier drops it.
   */
  readonly Preemptions?: readonly AllocPreemption[];
  /**
   * The evaluations (TriggeredBy `preemption`) for the jobs whose allocations
   * this record preempts, IDs chosen by the writer; one is created only for a
   * job that still exists and lost an allocation to this record.
   */
  readonly PreemptionEvals?: readonly PreemptionEval[];
}

/** One eviction in a plan record: the allocation, and the record's placement that takes its room. */
export interface AllocPreemption {
  readonly ID: string;
  readonly PreemptedByAllocation: string;
}

/** The evaluation a plan record creates for a job it preempts. */
export interface PreemptionEval {
  readonly ID: string;
  readonly Namespace: string;
  readonly JobID: string;
}

/** A placement in compact form: what differs from one allocation of the plan to the next. */
export interface AllocPlacement {
  readonly ID: string;
  readonly Name: string;
  readonly TaskGroup: string;
  readonly NodeID: string;
  /** The node's normalized score, Nomad's Metrics.ScoreMetaData[0].NormScore. */
  readonly Score?: number;
  readonly NodesEvaluated?: number;
  readonly PreviousAllocation?: string;
  readonly RescheduleTracker?: { readonly Events: readonly RescheduleEvent[] };
  readonly Canary?: boolean;
  /**
   * What the search for the node saw (Nomad's AllocMetric), when it has
   * something to explain: the job has affinities, spreads or
   * distinct_property, or nodes were filtered or exhausted. Only the fields
   * that are not Nomad's zero values; absent, the allocation's Metrics has
   * NodesEvaluated and the chosen node's score alone.
   */
  readonly Metrics?: PlacementMetrics;
  /** The group network's ports as given (Nomad's AllocatedResources.Shared.Ports); apply adds Shared.Networks. */
  readonly Ports?: readonly AllocatedPortMapping[];
  /** Task name → the legacy task `resources.network` it was given (Nomad's AllocatedTaskResources.Networks[0]). */
  readonly TaskNetworks?: Readonly<Record<string, NetworkResource>>;
}

/** The parts of Nomad's AllocMetric a placement records (src/services/scheduler/metrics.ts explanation). */
export interface PlacementMetrics {
  readonly NodesFiltered?: number;
  readonly NodesInPool?: number;
  readonly NodesAvailable?: Readonly<Record<string, number>>;
  readonly ClassFiltered?: Readonly<Record<string, number>>;
  readonly ConstraintFiltered?: Readonly<Record<string, number>>;
  readonly NodesExhausted?: number;
  readonly ClassExhausted?: Readonly<Record<string, number>>;
  readonly DimensionExhausted?: Readonly<Record<string, number>>;
  readonly ScoreMetaData?: readonly {
    readonly NodeID: string;
    readonly Scores: Readonly<Record<string, number>>;
    readonly NormScore: number;
  }[];
}

/** Nomad's Port: a label, a static value (0 for a dynamic port until given), the port it maps to, its host network. */
export interface NetworkPort {
  readonly Label: string;
  readonly Value: number;
  readonly To: number;
  readonly HostNetwork: string;
}

/** Nomad's NetworkResource, as a job asks for it and as an allocation is given it. */
export interface NetworkResource {
  readonly Mode: string;
  readonly Device: string;
  readonly CIDR: string;
  readonly IP: string;
  readonly Hostname: string;
  readonly MBits: number;
  readonly DNS: Readonly<Record<string, unknown>> | null;
  readonly ReservedPorts: readonly NetworkPort[] | null;
  readonly DynamicPorts: readonly NetworkPort[] | null;
}

/** Nomad's AllocatedPortMapping: a port given to an allocation, on one host address. */
export interface AllocatedPortMapping {
  readonly Label: string;
  readonly Value: number;
  readonly To: number;
  readonly HostIP: string;
}

export interface AllocFollowup {
  readonly ID: string;
  readonly FollowupEvalID: string;
}

/** What a client is the authority on, for one allocation (Nomad's UpdateAllocsFromClient). */
export interface ClientAllocUpdate {
  readonly ID: string;
  /** The authenticated node that reported it. */
  readonly NodeID: string;
  readonly ClientStatus: ClientStatus;
  readonly ClientDescription: string;
  readonly TaskStates: Readonly<Record<string, JsonObject>> | null;
  readonly DeploymentStatus: AllocDeploymentStatus | null;
  readonly NetworkStatus: JsonObject | null;
  /** Unix nanoseconds, the server's time when the update arrived. */
  readonly ModifyTime: number;
}

/**
 * Node.UpdateAlloc, coalesced: client updates that arrived in one 50 ms
 * window, at most 64 allocations a record (a busier window is several
 * records, one call's updates never split). Refused at apply if any
 * reporting node has become down or disconnected (the batcher then retries
 * without that node's updates).
 */
export interface AllocClientUpdated {
  readonly Allocs: readonly ClientAllocUpdate[];
}

/**
 * The server lost contact with the node and these allocations may still be
 * running there: ClientStatus `unknown` and an AllocState `unknown` entry.
 * Applied only while the node is `disconnected`.
 */
export interface AllocsDisconnected {
  readonly NodeID: string;
  readonly AllocIDs: readonly string[];
  readonly ClientDescription: string;
}

/**
 * The node came back and reported these allocations: an AllocState entry with
 * their current client status closes the `unknown` one, so they are not seen
 * as reconnecting again. Allocations already reconnected are left alone.
 */
export interface AllocsReconnected {
  readonly NodeID: string;
  readonly AllocIDs: readonly string[];
}

/**
 * The server gives these allocations up: desired `stop`, client status `lost`
 * (the node is down, or disconnected without max_client_disconnect, or their
 * disconnect window expired).
 */
export interface AllocsLost {
  readonly NodeID: string;
  readonly AllocIDs: readonly string[];
  readonly DesiredDescription: string;
}

/** Alloc.UpdateDesiredTransition (alloc stop, drains): merged into the stored transitions. */
export interface AllocsDesiredTransitionUpdated {
  readonly Allocs: Readonly<Record<string, DesiredTransition>>;
}

export type AllocEvent =
  | Envelope<"AllocsPlanApplied", AllocsPlanApplied>
  | Envelope<"AllocClientUpdated", AllocClientUpdated>
  | Envelope<"AllocsDisconnected", AllocsDisconnected>
  | Envelope<"AllocsReconnected", AllocsReconnected>
  | Envelope<"AllocsLost", AllocsLost>
  | Envelope<"AllocsDesiredTransitionUpdated", AllocsDesiredTransitionUpdated>;

export const allocSchemas = schemas(
  { type: "AllocsPlanApplied", version: 1 },
  { type: "AllocClientUpdated", version: 1 },
  { type: "AllocsDisconnected", version: 1 },
  { type: "AllocsReconnected", version: 1 },
  { type: "AllocsLost", version: 1 },
  { type: "AllocsDesiredTransitionUpdated", version: 1 },
);

// Nomad's descriptions (scheduler/generic_sched.go), shared by every writer.
export const ALLOC_LOST = "alloc is lost since its node is down";
export const ALLOC_UNKNOWN = "alloc is unknown since its node is disconnected";

/** An allocation with Nomad's defaults for every field the caller leaves out. */
export function newAllocation(
  fields: Pick<AllocationSpec, "ID" | "Namespace" | "JobID" | "TaskGroup" | "NodeID" | "CreateTime"> &
    Partial<AllocationSpec>,
): AllocationSpec {
  return {
    EvalID: "",
    Name: `${fields.JobID}.${fields.TaskGroup}[0]`,
    NodeName: "",
    Job: null,
    Resources: null,
    SharedResources: null,
    TaskResources: null,
    AllocatedResources: null,
    Metrics: null,
    DesiredStatus: "run",
    DesiredDescription: "",
    DesiredTransition: {},
    ClientStatus: "pending",
    ClientDescription: "",
    TaskStates: null,
    AllocStates: null,
    PreviousAllocation: "",
    NextAllocation: "",
    DeploymentID: "",
    DeploymentStatus: null,
    RescheduleTracker: null,
    NetworkStatus: null,
    FollowupEvalID: "",
    PreemptedAllocations: null,
    PreemptedByAllocation: "",
    SigningKeyID: "",
    ModifyTime: fields.CreateTime,
    ...fields,
  };
}

type AllocStatus = Pick<AllocationSpec, "DesiredStatus" | "ClientStatus">;

/** Nomad's ServerTerminalStatus: the scheduler wants it gone. */
export function isServerTerminal(a: Pick<AllocationSpec, "DesiredStatus">): boolean {
  return a.DesiredStatus === "stop" || a.DesiredStatus === "evict";
}

/** Nomad's ClientTerminalStatus: it will not run again (`unknown` is not terminal). */
export function isClientTerminal(a: Pick<AllocationSpec, "ClientStatus">): boolean {
  return a.ClientStatus === "complete" || a.ClientStatus === "failed" || a.ClientStatus === "lost";
}

export function isTerminalAlloc(a: AllocStatus): boolean {
  return isServerTerminal(a) || isClientTerminal(a);
}

/** The allocation's task group in its job snapshot. */
export function allocTaskGroup(a: Pick<AllocationSpec, "Job" | "TaskGroup">): AllocTaskGroup | undefined {
  // A loop, not find with a closure: the allocs table's csi_write index asks it on every new row.
  const groups = a.Job?.TaskGroups;
  if (!groups) return undefined;
  for (const tg of groups) if (tg.Name === a.TaskGroup) return tg;
  return undefined;
}

/** The group's max_client_disconnect in milliseconds, or undefined when the group does not tolerate disconnects. */
export function maxClientDisconnectMs(a: Pick<AllocationSpec, "Job" | "TaskGroup">): number | undefined {
  const tg = allocTaskGroup(a);
  const ns = tg?.MaxClientDisconnect ?? tg?.Disconnect?.LostAfter ?? null;
  return ns !== null && ns > 0 ? ns / 1e6 : undefined;
}

/** Nomad's NeedsToReconnect: the last client-status AllocState entry says `unknown`. */
export function needsToReconnect(a: Pick<AllocationSpec, "AllocStates">): boolean {
  const states = a.AllocStates ?? [];
  for (let i = states.length - 1; i >= 0; i--) {
    const s = states[i]!;
    if (s.Field === ALLOC_STATE_FIELD_CLIENT_STATUS) return s.Value === "unknown";
  }
  return false;
}

/** Nomad's LastUnknown, in Unix milliseconds; undefined when the allocation never went unknown. */
export function lastUnknownMs(a: Pick<AllocationSpec, "AllocStates">): number | undefined {
  let last: number | undefined;
  for (const s of a.AllocStates ?? []) {
    if (s.Field !== ALLOC_STATE_FIELD_CLIENT_STATUS || s.Value !== "unknown") continue;
    const t = Date.parse(s.Time);
    if (!Number.isNaN(t) && (last === undefined || t > last)) last = t;
  }
  return last;
}

/** Nomad's Expired: an `unknown` allocation whose disconnect window has run out at `nowMs`. */
export function disconnectExpired(
  a: Pick<AllocationSpec, "ClientStatus" | "AllocStates" | "Job" | "TaskGroup">,
  nowMs: number,
): boolean {
  if (a.ClientStatus !== "unknown") return false;
  const window = maxClientDisconnectMs(a);
  const since = lastUnknownMs(a);
  if (window === undefined || since === undefined) return false;
  return nowMs >= since + window;
}
