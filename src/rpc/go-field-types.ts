/**
 * What the msgpack codec needs to know about Nomad's Go field types, keyed by
 * field name alone: chronomad's values are JSON-shaped (no Go types), and
 * Nomad's RPC bodies are Go structs encoded as maps keyed by field name.
 *
 * Derived from the struct definitions of nomad/structs and client/structs at
 * v1.6.1 (and the plugins/client-stats structs they embed): every struct
 * reachable from either package, embedded structs flattened. A name is
 * listed with the structs giving it that Go type; where another struct uses
 * the same name with a different type, the rule stays safe because it only
 * fires for the JSON type that Go type produces:
 *
 * - time: only a string value becomes Go time binary (an int64 field of the
 *   same name, e.g. TaskEvent.Time or Allocation.CreateTime, holds a number);
 *   no string field shares a name with a time.Time field.
 * - bytes: only a string value is base64-decoded; the one string field named
 *   like a []byte field reachable from a client (ParameterizedJobConfig's
 *   Payload, next to Job.Payload) is told apart by its parent key
 *   (CHILD_RULES). RootKey.Key ([]byte) is left out: Event.Key and
 *   KeyringRequest.Key are strings, and root keys only travel between servers.
 * - uint: Go writes unsigned types with msgpack's uint forms; Go reads either
 *   form into any integer field, so a name that is signed elsewhere only
 *   changes the bytes, never the meaning.
 * - float: Go writes float64 as a msgpack float64 even when integral. Go reads
 *   an integer into a float field but refuses a float for an integer field,
 *   so a name is listed only if it is never an integer field anywhere
 *   (CpuStats.Percent is not: SpreadTarget.Percent is a uint8).
 * - user map: map fields whose keys are user data (meta keys, task names,
 *   attribute names): their keys are not field names, so a meta key named
 *   "StartedAt" keeps its string value.
 * - opaque: interface{} and map[string]interface{} fields (driver config,
 *   scaling policy): user data all the way down, no rule applies inside.
 */

export const FIELD_TIME = 1;
export const FIELD_BYTES = 2;
export const FIELD_UINT = 4;
export const FIELD_FLOAT = 8;
export const FIELD_USER_MAP = 16;
export const FIELD_OPAQUE = 32;
/** The rules that also apply to the elements of a slice or user map under the field. */
export const FIELD_ELEMENT_RULES = FIELD_TIME | FIELD_BYTES | FIELD_UINT | FIELD_FLOAT;

/** time.Time fields (encoded with Go's time.MarshalBinary, not msgpack's timestamp). */
export const GO_TIME_FIELDS: ReadonlySet<string> = new Set([
  "CreateTime", // ACLToken, ACLTokenListStub, ACLAuthMethod, ACLBindingRule (int64 in Allocation, Evaluation, variables, CSISnapshot)
  "Established", // NodeConnQueryResponse
  "ExpirationTime", // ACLToken, ACLTokenListStub
  "ExpiresAt", // OneTimeToken
  "FinishedAt", // TaskState
  "ForceDeadline", // DrainStrategy
  "LastRestart", // TaskState
  "Launch", // PeriodicLaunch
  "ModTime", // AllocFileInfo (client/structs)
  "ModifyTime", // ACLAuthMethod, ACLBindingRule (int64 in Allocation, Evaluation, variables)
  "NextPeriodicLaunch", // JobPlanResponse
  "RequireProgressBy", // DeploymentState
  "ResourceExhausted", // CSIVolume, CSIVolListStub
  "StableSince", // ServerHealth
  "StartedAt", // TaskState, DrainStrategy, DrainMetadata
  "Time", // AllocState (int64 ns in TaskEvent, ScalingEvent)
  "Timestamp", // NodeEvent, AllocDeploymentStatus, DeviceStats, ApplyDeploymentAllocHealthRequest, OneTimeTokenExpireRequest (int64 in HostStats, AllocResourceUsage, TaskResourceUsage, CheckQueryResult)
  "UpdateTime", // DriverInfo, CSIInfo
  "UpdatedAt", // DrainMetadata (int64 in NodeUpdateStatusRequest, NodeUpdateDrainRequest, ...)
  "WaitUntil", // Evaluation, EvaluationStub
]);

/** []byte fields (JSON: base64; msgpack: raw string bytes). */
export const GO_BYTES_FIELDS: ReadonlySet<string> = new Set([
  "Data", // VariableEncrypted, VariableData, EventJson (a struct in VariablesReadResponse: object, not string)
  "DriverState", // TaskHandle
  "EncryptedDataEncryptionKey", // KeyEncryptionKeyWrapper
  "Hash", // ACLPolicy, ACLToken, ACLRole, ACLAuthMethod, ACLBindingRule, Namespace, NodePool and their stubs
  "KeyEncryptionKey", // KeyEncryptionKeyWrapper
  "Payload", // Job, JobDispatchRequest, StreamErrWrapper, AgentPprofResponse (string in ParameterizedJobConfig: CHILD_RULES)
]);

/** Unsigned integer fields (plus net/rpc's Request/Response.Seq). */
export const GO_UINT_FIELDS: ReadonlySet<string> = new Set([
  "AllocIndex",
  "AllocModifyIndex",
  "Allocs", // NodeClientAllocsResponse: map[string]uint64
  "Available",
  "Cache",
  "Canary", // DesiredUpdates (bool in AllocDeploymentStatus, int in UpdateStrategy)
  "CreateIndex",
  "DelegateCur",
  "DelegateMax",
  "DelegateMin",
  "DeploymentModifyIndex",
  "DestructiveUpdate",
  "EnforcePriorVersion",
  "EvalCreateIndex",
  "Features",
  "Field", // AllocState (AllocStateField, uint8)
  "Free",
  "Ignore",
  "InPlaceUpdate",
  "Index",
  "JobCreateIndex",
  "JobModifyIndex",
  "JobSpecModifyIndex",
  "JobVersion",
  "KernelMaxUsage",
  "KernelUsage",
  "LastAllocUpdateIndex",
  "LastIndex",
  "LastMissedHeartbeatIndex",
  "LastTerm",
  "MappedFile",
  "MaxTrailingLogs",
  "MaxUsage",
  "Migrate", // DesiredUpdates (bool in DesiredTransition, EphemeralDisk)
  "MinQueryIndex",
  "MinQuorum",
  "ModifyIndex",
  "NodeModifyIndex",
  "Percent", // SpreadTarget (uint8); float64 in CpuStats, which only travels client -> server
  "Place",
  "Preemptions",
  "ProtocolCur",
  "ProtocolMax",
  "ProtocolMin",
  "RSS",
  "RefreshIndex",
  "ReservableCpuCores", // []uint16
  "ReservedCores", // []uint16
  "ReservedCpuCores", // []uint16
  "ResetIndex",
  "Restarts",
  "RevertedJobVersion",
  "SchedulerVersion",
  "Seq", // net/rpc Request and Response
  "SnapshotIndex",
  "Stop", // DesiredUpdates (bool in Job)
  "Swap",
  "ThrottledPeriods",
  "ThrottledTime",
  "Total",
  "TotalCpuCores",
  "Updates", // TaskGroupDiff: map[string]uint64
  "Uptime",
  "Usage",
  "Used",
  "Version", // Job, JobSubmission (int in the client-local TaskHandle)
  "VolumeEvalIndex",
  "WaitIndex",
]);

/** float64 fields never used as integer fields elsewhere (see the header). */
export const GO_FLOAT_FIELDS: ReadonlySet<string> = new Set([
  "CPUTicksConsumed", // HostStats
  "Float", // Attribute (device attributes)
  "FloatDenominatorVal", // StatValue
  "FloatNumeratorVal", // StatValue
  "Idle", // CPUStats
  "InodesUsedPercent", // DiskStats
  "NormScore", // NodeScoreMeta
  "Scores", // NodeScoreMeta, AllocMetric: map[string]float64
  "System", // CPUStats
  "SystemMode", // CpuStats
  "TotalPercent", // CPUStats
  "TotalTicks", // CPUStats, CpuStats
  "UsedPercent", // DiskStats
  "User", // CPUStats (a string in Task: unaffected)
  "UserMode", // CpuStats
]);

/** Maps keyed by user data (values are scalars or structs). */
export const GO_USER_MAP_FIELDS: ReadonlySet<string> = new Set([
  "Allocs",
  "Attributes",
  "AvailBandwidth",
  "CSIControllerPlugins",
  "CSINodePlugins",
  "CanaryMeta",
  "ClaimMappings",
  "ClassEligibility",
  "ClassExhausted",
  "ClassFiltered",
  "ConstraintFiltered",
  "Context",
  "Details",
  "DimensionExhausted",
  "Drivers",
  "Dynamic",
  "Env",
  "GetterHeaders",
  "GetterOptions",
  "HTTPHeaders",
  "Header",
  "HostNetworks",
  "HostVolumes",
  "Instances",
  "Items",
  "Keys",
  "Links",
  "List",
  "ListClaimMappings",
  "Matches",
  "Messages",
  "MigrateTokens",
  "NodesAvailable",
  "Parameters",
  "PublishContext",
  "QueuedAllocations",
  "Scores",
  "Secrets",
  "Segments",
  "SignedIdentities",
  "Static",
  "TaggedAddresses",
  "Tags",
  "Target",
  "TaskResources",
  "TaskStates",
  "Tasks",
  "Tokens",
  "Topics",
  "Truncations",
  "Updates",
  "UsedBandwidth",
  "UsedPorts",
  "Value", // ACLAuthClaims (a string or int elsewhere: unaffected)
  "VariableFlags",
  "Versions",
  "VolumeContext",
]);

/**
 * interface{}-typed fields: Task/SidecarTask/ConsulProxy Config, Meta (a
 * map[string]string almost everywhere, map[string]interface{} in
 * ScalingEvent and JobScaleRequest). ScalingPolicy.Policy is opaque too, but
 * "Policy" is also a struct field (SingleACLPolicyResponse), so CHILD_RULES.
 */
export const GO_OPAQUE_FIELDS: ReadonlySet<string> = new Set(["Config", "Meta"]);

/** Rules for a field name inside the object found under a given parent key. */
const CHILD_RULES: ReadonlyMap<string, ReadonlyMap<string, number>> = new Map([
  ["ParameterizedJob", new Map([["Payload", 0]])],
  ["Scaling", new Map([["Policy", FIELD_OPAQUE]])], // TaskGroup.Scaling
  ["ScalingPolicies", new Map([["Policy", FIELD_OPAQUE]])], // Task.ScalingPolicies
  ["Policy", new Map([["Policy", FIELD_OPAQUE]])], // SingleScalingPolicyResponse.Policy
]);

const FIELD_RULES: ReadonlyMap<string, number> = (() => {
  const rules = new Map<string, number>();
  const add = (names: ReadonlySet<string>, flag: number) => {
    for (const name of names) rules.set(name, (rules.get(name) ?? 0) | flag);
  };
  add(GO_TIME_FIELDS, FIELD_TIME);
  add(GO_BYTES_FIELDS, FIELD_BYTES);
  add(GO_UINT_FIELDS, FIELD_UINT);
  add(GO_FLOAT_FIELDS, FIELD_FLOAT);
  add(GO_USER_MAP_FIELDS, FIELD_USER_MAP);
  add(GO_OPAQUE_FIELDS, FIELD_OPAQUE);
  return rules;
})();

/** The parent's child rules, or undefined when the parent key has none. */
export function childRulesOf(parentKey: string | undefined): ReadonlyMap<string, number> | undefined {
  return parentKey === undefined ? undefined : CHILD_RULES.get(parentKey);
}

/** The rule flags of field `name` in a struct found under a key with child rules `parentRules`. */
export function fieldRules(name: string, parentRules: ReadonlyMap<string, number> | undefined): number {
  if (parentRules !== undefined) {
    const own = parentRules.get(name);
    if (own !== undefined) return own;
  }
  return FIELD_RULES.get(name) ?? 0;
}
