/**
 * Which table changes become event-stream events, and how, as Nomad derives
 * them (nomad/state/events.go): the topic, key and filter keys come from the
 * table and the row; secrets and bulky fields are left out of payloads.
 */
export interface TopicSpec {
  readonly topic: string;
  /** The payload's wrapper key, e.g. {"Node": …}. */
  readonly wrapper: string;
  readonly key: (row: Row) => string;
  readonly filterKeys: (row: Row) => string[];
  readonly namespace: (row: Row) => string;
  /**
   * The Type of the event for a removed row: Nomad's own where Nomad has
   * one (a purged job is `JobDeregistered`, a purged node
   * `NodeDeregistration`), else chronomad's `<Topic>Deleted`. Nomad
   * publishes few deletes; chronomad publishes every one (issue 28: a
   * mirror fed by the stream must see GC and purges), marked `Op: "delete"`.
   */
  readonly deleteType: string;
  readonly payload: (row: Row) => Row;
}

type Row = Readonly<Record<string, unknown>>;

const str = (v: unknown) => (typeof v === "string" ? v : "");
const nonEmpty = (...values: unknown[]) => values.map(str).filter((v) => v !== "");
const without = (row: Row, ...fields: string[]) => {
  const copy: Record<string, unknown> = { ...row };
  for (const f of fields) delete copy[f];
  return copy;
};

export const TOPICS: Readonly<Record<string, TopicSpec>> = {
  evals: {
    topic: "Evaluation",
    wrapper: "Evaluation",
    key: (r) => str(r.ID),
    filterKeys: (r) => nonEmpty(r.JobID, r.DeploymentID),
    namespace: (r) => str(r.Namespace),
    deleteType: "EvaluationDeleted",
    payload: (r) => r,
  },
  allocs: {
    topic: "Allocation",
    wrapper: "Allocation",
    key: (r) => str(r.ID),
    filterKeys: (r) => nonEmpty(r.JobID, r.DeploymentID),
    namespace: (r) => str(r.Namespace),
    deleteType: "AllocationDeleted",
    // Nomad strips the job from allocation events: it is large and has its own topic.
    payload: (r) => ({ ...r, Job: null }),
  },
  jobs: {
    topic: "Job",
    wrapper: "Job",
    key: (r) => str(r.ID),
    filterKeys: () => [],
    namespace: (r) => str(r.Namespace),
    deleteType: "JobDeregistered",
    payload: (r) => r,
  },
  nodes: {
    topic: "Node",
    wrapper: "Node",
    key: (r) => str(r.ID),
    filterKeys: () => [],
    namespace: () => "",
    deleteType: "NodeDeregistration",
    // Nomad's Node.Sanitize(): the field is there, empty. The row holds no
    // secret (its hash lives in node_secrets); a stray hash is dropped too.
    // Drain: the api package's flag, derived as the node view derives it.
    payload: (r) => ({
      ...without(r, "SecretIDHash"),
      SecretID: "",
      Drain: r.DrainStrategy !== null && r.DrainStrategy !== undefined,
    }),
  },
  deployments: {
    topic: "Deployment",
    wrapper: "Deployment",
    key: (r) => str(r.ID),
    filterKeys: (r) => nonEmpty(r.JobID),
    namespace: (r) => str(r.Namespace),
    deleteType: "DeploymentDeleted",
    payload: (r) => r,
  },
  node_pools: {
    topic: "NodePool",
    wrapper: "NodePool",
    key: (r) => str(r.Name),
    filterKeys: () => [],
    namespace: () => "",
    deleteType: "NodePoolDeleted",
    payload: (r) => r,
  },
  // Not a Nomad topic: namespaces change rarely but operators audit them too.
  namespaces: {
    topic: "Namespace",
    wrapper: "Namespace",
    key: (r) => str(r.Name),
    filterKeys: () => [],
    namespace: () => "",
    deleteType: "NamespaceDeleted",
    payload: (r) => r,
  },
  // Not a Nomad 1.6 topic: Nomad 2.0 added it (#27637), with the metadata
  // under "Metadata". Payloads carry the metadata and the KeyID only, never
  // Data, sealed though it is (design rule 5).
  variables: {
    topic: "Variable",
    wrapper: "Metadata",
    key: (r) => str(r.Path),
    filterKeys: () => [],
    namespace: (r) => str(r.Namespace),
    // Nomad 2.0 types a delete VariableUpdated with Deleted: true; chronomad's
    // payload has no Deleted, so the delete says so in its Type.
    deleteType: "VariableDeleted",
    payload: (r) => ({
      Namespace: r.Namespace,
      Path: r.Path,
      CreateIndex: r.CreateIndex,
      CreateTime: r.CreateTime,
      ModifyIndex: r.ModifyIndex,
      ModifyTime: r.ModifyTime,
      KeyID: r.KeyID,
    }),
  },
  // Nomad's Service topic (state/events.go): filterable by job and service name.
  service_registrations: {
    topic: "Service",
    wrapper: "Service",
    key: (r) => str(r.ID),
    filterKeys: (r) => nonEmpty(r.JobID, r.ServiceName),
    namespace: (r) => str(r.Namespace),
    // Nomad's own, whatever removed it: a client, an operator, its node going down, its allocation ending.
    deleteType: "ServiceDeregistration",
    payload: (r) => r,
  },
  // Nomad's CSIVolumeEvent: the volume as its JSON shows it (csiVolumeExt),
  // without claims' details or secrets (the row holds them only sealed).
  csi_volumes: {
    topic: "CSIVolume",
    wrapper: "Volume",
    key: (r) => str(r.ID),
    filterKeys: (r) => nonEmpty(r.PluginID),
    namespace: (r) => str(r.Namespace),
    deleteType: "CSIVolumeDeregistered",
    payload: (r) => ({
      ...without(r, "SealedSecrets", "ReadClaims", "WriteClaims"),
      Secrets: null,
      MountOptions: redactedMountOptions(r.MountOptions),
      ReadAllocs: allocNulls(r.ReadClaims),
      WriteAllocs: allocNulls(r.WriteClaims),
    }),
  },
  // Nomad's CSIPluginEvent; the table changes with the nodes' fingerprints.
  csi_plugins: {
    topic: "CSIPlugin",
    wrapper: "Plugin",
    key: (r) => str(r.ID),
    filterKeys: () => [],
    namespace: () => "",
    deleteType: "CSIPluginDeleted",
    payload: (r) => r,
  },
  // Nomad's ACL topics (management only): payloads never carry a secret or its hash.
  acl_tokens: {
    topic: "ACLToken",
    wrapper: "ACLToken",
    key: (r) => str(r.AccessorID),
    filterKeys: () => [],
    namespace: () => "",
    deleteType: "ACLTokenDeleted",
    payload: (r) => ({ ...without(r, "SecretIDHash"), SecretID: "" }),
  },
  acl_policies: {
    topic: "ACLPolicy",
    wrapper: "ACLPolicy",
    key: (r) => str(r.Name),
    filterKeys: () => [],
    namespace: () => "",
    deleteType: "ACLPolicyDeleted",
    payload: (r) => r,
  },
  acl_roles: {
    topic: "ACLRole",
    wrapper: "ACLRole",
    key: (r) => str(r.ID),
    filterKeys: () => [],
    namespace: () => "",
    deleteType: "ACLRoleDeleted",
    payload: (r) => r,
  },
  acl_auth_methods: {
    topic: "ACLAuthMethod",
    wrapper: "ACLAuthMethod",
    key: (r) => str(r.Name),
    filterKeys: () => [],
    namespace: () => "",
    deleteType: "ACLAuthMethodDeleted",
    payload: (r) => without(r, "OIDCClientSecretSealed"),
  },
  acl_binding_rules: {
    topic: "ACLBindingRule",
    wrapper: "ACLBindingRule",
    key: (r) => str(r.ID),
    filterKeys: () => [],
    namespace: () => "",
    deleteType: "ACLBindingRuleDeleted",
    payload: (r) => r,
  },
};

/**
 * Nomad's topics that chronomad has no table for yet (host volumes, operator
 * changes): a subscriber may name them, as in Nomad, and simply gets no
 * events from them until those features exist.
 */
const SILENT_TOPICS = ["HostVolume", "Operator"];

/** Nomad's csiVolumeExt: mount flags may hold secrets. */
function redactedMountOptions(m: unknown): unknown {
  if (typeof m !== "object" || m === null) return m ?? null;
  const flags = (m as Row).MountFlags;
  return { ...m, MountFlags: Array.isArray(flags) && flags.length > 0 ? ["[REDACTED]"] : (flags ?? null) };
}

/** Nomad's ReadAllocs / WriteAllocs as its JSON shows them: allocation ID → null. */
function allocNulls(claims: unknown): Record<string, null> {
  const out: Record<string, null> = {};
  for (const id of Object.keys((claims as Row | null | undefined) ?? {}).sort()) out[id] = null;
  return out;
}

/** Every topic a subscriber may name, besides `*`. */
export const TOPIC_NAMES: ReadonlySet<string> = new Set([
  ...Object.values(TOPICS).map((t) => t.topic),
  ...SILENT_TOPICS,
]);

/**
 * Nomad's event Type for the changes a record causes, by record type: in
 * Nomad it is the Raft message type's (nomad/state/events.go MsgTypeEvents).
 * `null`: Nomad publishes nothing for that write (its eval deletes and reaps
 * use untyped transactions), so neither does chronomad, even when the write
 * also moves a job's status. Every record type of the log has an entry (a
 * test holds that), so no chronomad-only name reaches a Nomad client; the
 * Namespace topic is chronomad's own and keeps Nomad's Upserted/Deleted
 * naming.
 */
export const EVENT_TYPES: Readonly<Record<string, string | null>> = {
  ClusterBootstrapped: "NamespaceUpserted",
  LeadershipEstablished: null,
  NamespaceUpserted: "NamespaceUpserted",
  NodePoolUpserted: "NodePoolUpserted",
  NodePoolDeleted: "NodePoolDeleted",
  NamespaceDeleted: "NamespaceDeleted",
  SchedulerConfigSet: null,
  NodeRegistered: "NodeRegistration",
  NodeDeregistered: "NodeDeregistration",
  NodeStatusUpdated: "NodeStreamEvent",
  NodeEventsAppended: "NodeStreamEvent",
  NodeDrainUpdated: "NodeDrain",
  // Nomad 1.6 tagged these NodeDrain by mistake; fixed upstream (#27858).
  NodeEligibilityUpdated: "NodeEligibility",
  AllocClientUpdated: "AllocationUpdated",
  // Nomad marks allocations unknown or lost in the scheduler's plan.
  AllocsDisconnected: "PlanResult",
  AllocsLost: "PlanResult",
  // Written beside the client's update that reported them.
  AllocsReconnected: "AllocationUpdated",
  AllocsDesiredTransitionUpdated: "AllocationUpdateDesiredStatus",
  AllocsPlanApplied: "PlanResult",
  EvaluationsUpserted: "EvaluationUpdated",
  EvaluationsDeleted: null,
  EvaluationsDeletedByFilter: null,
  GarbageCollected: null,
  JobRegistered: "JobRegistered",
  JobDeregistered: "JobDeregistered",
  // Nomad's Job.Scale registers the new version (the scaling event itself publishes nothing).
  JobScaled: "JobRegistered",
  JobStabilitySet: null,
  DeploymentStatusUpdated: "DeploymentStatusUpdate",
  DeploymentPromoted: "DeploymentPromotion",
  DeploymentAllocHealthSet: "DeploymentAllocHealth",
  // Nomad registers a periodic or dispatched child as a job registration.
  PeriodicJobLaunched: "JobRegistered",
  JobDispatched: "JobRegistered",
  RootKeyCreated: null,
  RootKeyDeleted: null,
  RootKeyRekeyFinished: null,
  // Nomad 2.0's type for its Raft message VarApplyState (1.6 publishes no variable events).
  VariableApplied: "VariableUpdated",
  ACLBootstrapped: "ACLTokenUpserted",
  ACLTokensUpserted: "ACLTokenUpserted",
  ACLTokensDeleted: "ACLTokenDeleted",
  ACLOneTimeTokenCreated: null,
  ACLOneTimeTokenExchanged: null,
  ACLPoliciesUpserted: "ACLPolicyUpserted",
  ACLPoliciesDeleted: "ACLPolicyDeleted",
  ACLRolesUpserted: "ACLRoleUpserted",
  ACLRolesDeleted: "ACLRoleDeleted",
  ACLAuthMethodsUpserted: "ACLAuthMethodUpserted",
  ACLAuthMethodsDeleted: "ACLAuthMethodDeleted",
  ACLBindingRulesUpserted: "ACLBindingRuleUpserted",
  ACLBindingRulesDeleted: "ACLBindingRuleDeleted",
  ServiceRegistrationsUpserted: "ServiceRegistration",
  ServiceRegistrationsDeleted: "ServiceDeregistration",
  // Nomad's later MsgTypeEvents names for Raft messages 35, 36 and 37 (1.6 published none).
  CSIVolumesRegistered: "CSIVolumeRegistered",
  CSIVolumesDeregistered: "CSIVolumeDeregistered",
  CSIVolumeClaimsUpdated: "CSIVolumeClaim",
  // chronomad's server → client detach calls: Nomad makes them as RPCs and publishes nothing.
  CSIDetachRequested: null,
  CSIDetachAcknowledged: null,
  CSIDetachTimedOut: null,
};

/**
 * The Nomad event Type of an update (not a delete: see TopicSpec.deleteType)
 * caused by a record of `eventType`, or null when Nomad would publish
 * nothing for it.
 */
export function nomadEventType(eventType: string, topic: string): string | null {
  // A client's allocation update also stamps its node row (LastAllocUpdateIndex);
  // Nomad's Node.UpdateAlloc publishes no Node event, so neither does this.
  if (topic === "Node" && (eventType === "AllocClientUpdated" || eventType === "AllocsReconnected"))
    return null;
  // The bootstrap record also creates the built-in node pools.
  if (topic === "NodePool" && eventType === "ClusterBootstrapped") return "NodePoolUpserted";
  const type = EVENT_TYPES[eventType];
  // A record type newer than this table (the test forbids it) keeps its name rather than vanish.
  return type === undefined ? eventType : type;
}
