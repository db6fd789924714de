/**
 * A parsed and expanded ACL policy, as plain data: Nomad v1.6.1's
 * `acl.Policy` (acl/policy.go) as its HTTP API shows it in `RulesJSON`. That
 * struct has no JSON tags and Nomad's encoder omits nothing, so the field
 * names are the Go names, an absent block or list is `null` (not missing),
 * and `Raw` carries the rules text. Key order follows the Go struct, so
 * `JSON.stringify` of a parsed policy is byte for byte Nomad's RulesJSON.
 *
 * `Capabilities` keeps Go's nil-versus-empty distinction: `null` when the
 * block had no `capabilities` and no expanding `policy`, `[]` for an explicit
 * `capabilities = []`.
 */

export interface VariablesPathPolicy {
  readonly PathSpec: string;
  /** As written, then expanded: a list holding `deny` becomes `["deny"]`; `read` without `list` gains `list`. */
  readonly Capabilities: readonly string[] | null;
}

export interface VariablesPolicy {
  /** Never empty in a parsed policy (Nomad refuses a `variables` block without paths). */
  readonly Paths: readonly VariablesPathPolicy[];
}

export interface NamespacePolicy {
  /** A namespace name or a glob (`*` matches any run of characters). */
  readonly Name: string;
  /** The `policy` shorthand as written ("" when absent). */
  readonly Policy: string;
  /** The explicit capabilities, then the expansion of `Policy` appended. */
  readonly Capabilities: readonly string[] | null;
  readonly Variables: VariablesPolicy | null;
}

export interface NodePoolPolicy {
  readonly Name: string;
  readonly Policy: string;
  readonly Capabilities: readonly string[] | null;
}

export interface HostVolumePolicy {
  readonly Name: string;
  readonly Policy: string;
  readonly Capabilities: readonly string[] | null;
}

/** Nomad's AgentPolicy, NodePolicy, OperatorPolicy, QuotaPolicy and PluginPolicy: one level each. */
export interface LevelPolicy {
  readonly Policy: string;
}

export interface Policy {
  readonly Namespaces: readonly NamespacePolicy[] | null;
  readonly NodePools: readonly NodePoolPolicy[] | null;
  readonly HostVolumes: readonly HostVolumePolicy[] | null;
  readonly Agent: LevelPolicy | null;
  readonly Node: LevelPolicy | null;
  readonly Operator: LevelPolicy | null;
  readonly Quota: LevelPolicy | null;
  readonly Plugin: LevelPolicy | null;
  /** The rules text the policy was parsed from. */
  readonly Raw: string;
}

/** Values of `policy = "..."` (Nomad's Policy* constants). */
export const POLICY_DENY = "deny";
export const POLICY_READ = "read";
export const POLICY_LIST = "list";
export const POLICY_WRITE = "write";
export const POLICY_SCALE = "scale";

/** Nomad's NamespaceCapability* constants. */
export const NamespaceCapability = {
  Deny: "deny",
  ListJobs: "list-jobs",
  ParseJob: "parse-job",
  ReadJob: "read-job",
  SubmitJob: "submit-job",
  DispatchJob: "dispatch-job",
  ReadLogs: "read-logs",
  ReadFS: "read-fs",
  AllocExec: "alloc-exec",
  AllocNodeExec: "alloc-node-exec",
  AllocLifecycle: "alloc-lifecycle",
  SentinelOverride: "sentinel-override",
  CSIRegisterPlugin: "csi-register-plugin",
  CSIWriteVolume: "csi-write-volume",
  CSIReadVolume: "csi-read-volume",
  CSIListVolume: "csi-list-volume",
  CSIMountVolume: "csi-mount-volume",
  ListScalingPolicies: "list-scaling-policies",
  ReadScalingPolicy: "read-scaling-policy",
  ReadJobScaling: "read-job-scaling",
  ScaleJob: "scale-job",
  SubmitRecommendation: "submit-recommendation",
} as const;

/** Nomad's NodePoolCapability* constants. */
export const NodePoolCapability = {
  Delete: "delete",
  Deny: "deny",
  Read: "read",
  Write: "write",
} as const;

/** Nomad's HostVolumeCapability* constants. */
export const HostVolumeCapability = {
  Deny: "deny",
  MountReadOnly: "mount-readonly",
  MountReadWrite: "mount-readwrite",
} as const;

/** Nomad's VariablesCapability* constants. */
export const VariablesCapability = {
  List: "list",
  Read: "read",
  Write: "write",
  Destroy: "destroy",
  Deny: "deny",
} as const;

/** What an empty rules string parses to (Nomad's hot path: no blocks, no error). */
export function emptyPolicy(raw = ""): Policy {
  return {
    Namespaces: null,
    NodePools: null,
    HostVolumes: null,
    Agent: null,
    Node: null,
    Operator: null,
    Quota: null,
    Plugin: null,
    Raw: raw,
  };
}
