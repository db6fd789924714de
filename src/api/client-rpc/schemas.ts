/**
 * JSON schemas of Nomad's client RPC request structs, with Go's field names.
 * Go's codec flattens embedded structs, so WriteRequest / QueryOptions fields
 * sit beside the request's own. A client sends whole structs, zero fields
 * included, so every field of Node and Allocation is accepted, and the ones
 * the server owns are ignored; a field Nomad does not have is a 400.
 */

const str = { type: "string" } as const;
const int = { type: "integer" } as const;
const bool = { type: "boolean" } as const;
const anyValue = {} as const;
const stringMap = { type: ["object", "null"], additionalProperties: { type: "string" } } as const;
const objectOrNull = { type: ["object", "null"] } as const;

export const writeRequest = {
  Region: str,
  Namespace: str,
  AuthToken: str,
  IdempotencyToken: str,
  Forwarded: bool,
} as const;

export const queryOptions = {
  Region: str,
  Namespace: str,
  MinQueryIndex: { type: "integer", minimum: 0 },
  /** Nanoseconds (Go time.Duration). */
  MaxQueryTime: int,
  AllowStale: bool,
  Prefix: str,
  AuthToken: str,
  Filter: str,
  PerPage: int,
  NextToken: str,
  Reverse: bool,
  Forwarded: bool,
} as const;

const nodeEvent = {
  type: ["object", "null"],
  additionalProperties: false,
  properties: {
    Message: str,
    Subsystem: str,
    Details: stringMap,
    // RFC 3339 text in JSON, a timestamp extension in msgpack.
    Timestamp: anyValue,
    CreateIndex: int,
  },
} as const;

const node = {
  type: ["object", "null"],
  additionalProperties: false,
  properties: {
    ID: str,
    SecretID: str,
    Datacenter: str,
    Name: str,
    HTTPAddr: str,
    TLSEnabled: bool,
    Attributes: stringMap,
    NodeResources: objectOrNull,
    ReservedResources: objectOrNull,
    Resources: objectOrNull,
    Reserved: objectOrNull,
    Links: stringMap,
    Meta: stringMap,
    NodeClass: str,
    NodePool: str,
    CgroupParent: str,
    ComputedClass: str,
    DrainStrategy: anyValue,
    SchedulingEligibility: str,
    Status: str,
    StatusDescription: str,
    StatusUpdatedAt: int,
    Events: anyValue,
    Drivers: objectOrNull,
    CSIControllerPlugins: objectOrNull,
    CSINodePlugins: objectOrNull,
    HostVolumes: objectOrNull,
    HostNetworks: objectOrNull,
    LastDrain: anyValue,
    LastMissedHeartbeatIndex: int,
    LastAllocUpdateIndex: int,
    CreateIndex: int,
    ModifyIndex: int,
  },
} as const;

const ALLOCATION_FIELDS = [
  "Namespace",
  "EvalID",
  "Name",
  "NodeName",
  "JobID",
  "Job",
  "TaskGroup",
  "Resources",
  "SharedResources",
  "TaskResources",
  "AllocatedResources",
  "Metrics",
  "DesiredStatus",
  "DesiredDescription",
  "DesiredTransition",
  "AllocStates",
  "PreviousAllocation",
  "NextAllocation",
  "DeploymentID",
  "RescheduleTracker",
  "FollowupEvalID",
  "PreemptedAllocations",
  "PreemptedByAllocation",
  "SigningKeyID",
  "SignedIdentities",
  "CreateIndex",
  "ModifyIndex",
  "AllocModifyIndex",
  "CreateTime",
  "ModifyTime",
] as const;

/** An Allocation as a client sends it in Node.UpdateAlloc; only the client-owned fields are typed and used. */
const clientAlloc = {
  type: "object",
  additionalProperties: false,
  properties: {
    ...Object.fromEntries(ALLOCATION_FIELDS.map((f) => [f, anyValue])),
    ID: str,
    NodeID: str,
    ClientStatus: str,
    ClientDescription: str,
    TaskStates: objectOrNull,
    DeploymentStatus: objectOrNull,
    NetworkStatus: objectOrNull,
  },
} as const;

export const registerBody = {
  type: "object",
  additionalProperties: false,
  properties: { Node: node, NodeEvent: nodeEvent, ...writeRequest },
} as const;

export const updateStatusBody = {
  type: "object",
  additionalProperties: false,
  properties: { NodeID: str, Status: str, NodeEvent: nodeEvent, UpdatedAt: int, ...writeRequest },
} as const;

export const updateAllocBody = {
  type: "object",
  additionalProperties: false,
  properties: {
    Alloc: { type: ["array", "null"], items: clientAlloc },
    Evals: { type: ["array", "null"] },
    AllocsStopped: { type: ["array", "null"] },
    AllocsUpdated: { type: ["array", "null"] },
    Job: anyValue,
    ...writeRequest,
  },
} as const;

export const clientAllocsBody = {
  type: "object",
  additionalProperties: false,
  properties: { NodeID: str, SecretID: str, ...queryOptions },
} as const;

export const getAllocsBody = {
  type: "object",
  additionalProperties: false,
  properties: { AllocIDs: { type: ["array", "null"], items: str }, ...queryOptions },
} as const;

export const getAllocBody = {
  type: "object",
  additionalProperties: false,
  properties: { AllocID: str, ...queryOptions },
} as const;

export const deregisterBody = {
  type: "object",
  additionalProperties: false,
  properties: { NodeID: str, ...writeRequest },
} as const;

export const emitEventsBody = {
  type: "object",
  additionalProperties: false,
  properties: {
    NodeEvents: {
      type: ["object", "null"],
      additionalProperties: { type: ["array", "null"], items: nodeEvent },
    },
    ...writeRequest,
  },
} as const;

// ---- the bodies as handlers read them ----

export interface NodeEventBody {
  Message?: string;
  Subsystem?: string;
  Details?: Record<string, string> | null;
  Timestamp?: unknown;
}

export interface NodeBody {
  ID?: string;
  SecretID?: string;
  Datacenter?: string;
  Name?: string;
  HTTPAddr?: string;
  TLSEnabled?: boolean;
  Attributes?: Record<string, string> | null;
  NodeResources?: Record<string, unknown> | null;
  ReservedResources?: Record<string, unknown> | null;
  Resources?: Record<string, unknown> | null;
  Reserved?: Record<string, unknown> | null;
  Links?: Record<string, string> | null;
  Meta?: Record<string, string> | null;
  NodeClass?: string;
  NodePool?: string;
  CgroupParent?: string;
  SchedulingEligibility?: string;
  Status?: string;
  StatusDescription?: string;
  Drivers?: Record<string, Record<string, unknown>> | null;
  CSIControllerPlugins?: Record<string, unknown> | null;
  CSINodePlugins?: Record<string, unknown> | null;
  HostVolumes?: Record<string, unknown> | null;
  HostNetworks?: Record<string, unknown> | null;
}

export interface GetAllocBody {
  AllocID?: string;
  AuthToken?: string;
  MinQueryIndex?: number;
  MaxQueryTime?: number;
}

export interface WriteRequestBody {
  AuthToken?: string;
}

export interface RegisterBody extends WriteRequestBody {
  Node?: NodeBody | null;
  NodeEvent?: NodeEventBody | null;
}

export interface UpdateStatusBody extends WriteRequestBody {
  NodeID?: string;
  Status?: string;
  NodeEvent?: NodeEventBody | null;
}

export interface ClientAllocBody {
  ID?: string;
  NodeID?: string;
  ClientStatus?: string;
  ClientDescription?: string;
  TaskStates?: Record<string, Record<string, unknown>> | null;
  DeploymentStatus?: Record<string, unknown> | null;
  NetworkStatus?: Record<string, unknown> | null;
}

export interface UpdateAllocBody extends WriteRequestBody {
  Alloc?: ClientAllocBody[] | null;
  Evals?: unknown[] | null;
}

export interface QueryBody {
  AuthToken?: string;
  MinQueryIndex?: number;
  MaxQueryTime?: number;
}

export interface ClientAllocsBody extends QueryBody {
  NodeID?: string;
  SecretID?: string;
}

export interface GetAllocsBody extends QueryBody {
  AllocIDs?: string[] | null;
}

export interface DeregisterBody extends WriteRequestBody {
  NodeID?: string;
}

export interface EmitEventsBody extends WriteRequestBody {
  NodeEvents?: Record<string, NodeEventBody[] | null> | null;
}
