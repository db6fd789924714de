import { type Envelope, schemas } from "./event-schema.ts";

export type NodeStatus = "initializing" | "ready" | "down" | "disconnected";
export const NODE_STATUSES: readonly NodeStatus[] = ["initializing", "ready", "down", "disconnected"];

export type SchedulingEligibility = "eligible" | "ineligible";

/** A JSON object whose shape Nomad defines but the control plane only stores (resources, drivers, ...). */
export type JsonObject = Readonly<Record<string, unknown>>;

/**
 * Nomad's NodeEvent as the writer builds it. CreateIndex is stamped at apply:
 * it is the index of the record that appended the event.
 */
export interface NodeEventSpec {
  readonly Message: string;
  /** Drain, Driver, Heartbeat, Cluster, Scheduler or Storage. */
  readonly Subsystem: string;
  readonly Details: Readonly<Record<string, string>> | null;
  /** RFC 3339, as Go's time.Time encodes. */
  readonly Timestamp: string;
}

export interface DrainStrategy {
  readonly DrainSpec: {
    /** Nanoseconds; 0 means no deadline, negative means force now. */
    readonly Deadline: number;
    readonly IgnoreSystemJobs: boolean;
  };
  /** RFC 3339; Go's zero time when there is no deadline. */
  readonly ForceDeadline: string;
  readonly StartedAt: string;
}

export interface DrainMetadata {
  readonly StartedAt: string;
  readonly UpdatedAt: string;
  /** draining, complete or canceled. */
  readonly Status: string;
  readonly AccessorID: string;
  readonly Meta: Readonly<Record<string, string>> | null;
}

/**
 * The part of Nomad's Node a client registers: its identity and fingerprint.
 * The SecretID is never here (the event carries only its SHA-256 hash); the
 * fields the server owns (Events, drain, eligibility of a known node, the
 * heartbeat indexes) are kept by the projection.
 */
export interface NodeSpec {
  readonly ID: string;
  readonly Datacenter: string;
  readonly Name: string;
  readonly HTTPAddr: string;
  readonly TLSEnabled: boolean;
  readonly Attributes: Readonly<Record<string, string>>;
  readonly NodeResources: JsonObject | null;
  readonly ReservedResources: JsonObject | null;
  readonly Resources: JsonObject | null;
  readonly Reserved: JsonObject | null;
  readonly Links: Readonly<Record<string, string>> | null;
  readonly Meta: Readonly<Record<string, string>> | null;
  readonly NodeClass: string;
  /** The node pool it registered in (v2; v1 records were all in `default`). */
  readonly NodePool: string;
  readonly CgroupParent: string;
  /** Computed by the writer from the fingerprint; evaluations blocked on a class are unblocked by it. */
  readonly ComputedClass: string;
  readonly Drivers: Readonly<Record<string, JsonObject>> | null;
  readonly CSIControllerPlugins: JsonObject | null;
  readonly CSINodePlugins: JsonObject | null;
  readonly HostVolumes: JsonObject | null;
  readonly HostNetworks: JsonObject | null;
  /** Only used when the node is new: a known node keeps its stored status (Nomad PR 15808). */
  readonly Status: NodeStatus;
  readonly StatusDescription: string;
  /** Only used when the node is new. */
  readonly SchedulingEligibility: SchedulingEligibility;
}

/** Node.Register: a new node, or a known one re-sending its fingerprint. */
export interface NodeRegistered {
  readonly Node: NodeSpec;
  /** Hex SHA-256 of the node's SecretID; the secret itself never reaches the log. */
  readonly SecretIDHash: string;
}

/** Why a node's status changed. */
export type NodeStatusCause = "heartbeat" | "heartbeat-missed" | "operator";

/**
 * Node.UpdateStatus, from a client's heartbeat or the leader's heartbeat
 * expiry. Applied only if the node is still in PreviousStatus, so a decision
 * taken on a state that has moved since is rejected instead of applied.
 */
export interface NodeStatusUpdated {
  readonly NodeID: string;
  readonly Status: NodeStatus;
  readonly PreviousStatus: NodeStatus;
  readonly Cause: NodeStatusCause;
  readonly NodeEvent: NodeEventSpec | null;
}

/** Node.UpdateDrain (`/v1/node/:id/drain`). */
export interface NodeDrainUpdated {
  readonly NodeID: string;
  readonly DrainStrategy: DrainStrategy | null;
  readonly MarkEligible: boolean;
  readonly Meta: Readonly<Record<string, string>> | null;
  /** The accessor of the token that asked; "" when ACLs are off. */
  readonly AccessorID: string;
  readonly NodeEvent: NodeEventSpec | null;
  /**
   * Written by the leader's drainer when nothing is left to migrate (Nomad's
   * drain complete): LastDrain says `complete` rather than `canceled`, and it
   * applies only to a node still draining. Absent in operator writes.
   */
  readonly Complete?: boolean;
}

/** Node.UpdateEligibility (`/v1/node/:id/eligibility`). */
export interface NodeEligibilityUpdated {
  readonly NodeID: string;
  readonly Eligibility: SchedulingEligibility;
  readonly NodeEvent: NodeEventSpec | null;
}

/** Node.Deregister / Node.BatchDeregister (`/v1/node/:id/purge`). */
export interface NodeDeregistered {
  readonly NodeIDs: readonly string[];
}

/** Node.EmitEvents: events a client reports about itself (driver health, ...). */
export interface NodeEventsAppended {
  readonly Events: Readonly<Record<string, readonly NodeEventSpec[]>>;
}

export type NodeStreamEvent =
  | Envelope<"NodeRegistered", NodeRegistered>
  | Envelope<"NodeStatusUpdated", NodeStatusUpdated>
  | Envelope<"NodeDrainUpdated", NodeDrainUpdated>
  | Envelope<"NodeEligibilityUpdated", NodeEligibilityUpdated>
  | Envelope<"NodeDeregistered", NodeDeregistered>
  | Envelope<"NodeEventsAppended", NodeEventsAppended>;

/** Writers append NodeRegistered at this version. */
export const NODE_REGISTERED_VERSION = 2;

export const nodeSchemas = schemas(
  {
    type: "NodeRegistered",
    version: NODE_REGISTERED_VERSION,
    // v2 added Node.NodePool: nodes registered before node pools existed are in `default`.
    upcast: { 1: (data) => withDefaultNodePool(data as NodeRegistered) },
  },
  { type: "NodeStatusUpdated", version: 1 },
  { type: "NodeDrainUpdated", version: 1 },
  { type: "NodeEligibilityUpdated", version: 1 },
  { type: "NodeDeregistered", version: 1 },
  { type: "NodeEventsAppended", version: 1 },
);

function withDefaultNodePool(data: NodeRegistered): NodeRegistered {
  return { ...data, Node: { ...data.Node, NodePool: data.Node.NodePool || "default" } };
}

/** Nomad's `Node.UnresponsiveStatus()`: the server has lost contact with the node. */
export function isUnresponsive(status: NodeStatus): boolean {
  return status === "down" || status === "disconnected";
}
