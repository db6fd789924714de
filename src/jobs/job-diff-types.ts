import { ANY, BOOL, INT, map, ptr, STRING, slice, struct } from "./go-values.ts";

/**
 * The Go shapes of Nomad v1.6.1's nomad/structs types that its job diff
 * walks, field for field (durations are int64 nanoseconds). Only the kind
 * of each field matters: it decides what the diff shows of it (see
 * go-values.ts). Fields of types the diff never looks into are described as
 * opaque pointers or slices, which the primitive walk skips.
 */

const OPAQUE_PTR = ptr(ANY);
const OPAQUE_SLICE = slice(ANY);
const DURATION = INT;

export const CONSTRAINT = struct({ LTarget: STRING, RTarget: STRING, Operand: STRING });
export const AFFINITY = struct({ LTarget: STRING, RTarget: STRING, Operand: STRING, Weight: INT });

export const PORT = struct({ Label: STRING, Value: INT, To: INT, HostNetwork: STRING });
export const DNS_CONFIG = struct({ Servers: slice(STRING), Searches: slice(STRING), Options: slice(STRING) });
export const NETWORK_RESOURCE = struct({
  Mode: STRING,
  Device: STRING,
  CIDR: STRING,
  IP: STRING,
  Hostname: STRING,
  MBits: INT,
  DNS: ptr(DNS_CONFIG),
  ReservedPorts: slice(PORT),
  DynamicPorts: slice(PORT),
});

export const REQUESTED_DEVICE = struct({
  Name: STRING,
  Count: INT,
  Constraints: slice(ptr(CONSTRAINT)),
  Affinities: slice(ptr(AFFINITY)),
});

export const RESOURCES = struct({
  CPU: INT,
  Cores: INT,
  MemoryMB: INT,
  MemoryMaxMB: INT,
  DiskMB: INT,
  IOPS: INT,
  Networks: slice(ptr(NETWORK_RESOURCE)),
  Devices: slice(ptr(REQUESTED_DEVICE)),
});

export const LOG_CONFIG = struct({ MaxFiles: INT, MaxFileSizeMB: INT, Disabled: BOOL });
export const RESTART_POLICY = struct({ Attempts: INT, Interval: DURATION, Delay: DURATION, Mode: STRING });
export const RESCHEDULE_POLICY = struct({
  Attempts: INT,
  Interval: DURATION,
  Delay: DURATION,
  DelayFunction: STRING,
  MaxDelay: DURATION,
  Unlimited: BOOL,
});
export const EPHEMERAL_DISK = struct({ Sticky: BOOL, SizeMB: INT, Migrate: BOOL });
export const CONSUL = struct({ Namespace: STRING });
export const UPDATE_STRATEGY = struct({
  Stagger: DURATION,
  MaxParallel: INT,
  HealthCheck: STRING,
  MinHealthyTime: DURATION,
  HealthyDeadline: DURATION,
  ProgressDeadline: DURATION,
  AutoRevert: BOOL,
  AutoPromote: BOOL,
  Canary: INT,
});
export const DISPATCH_PAYLOAD = struct({ File: STRING });
export const TASK_ARTIFACT = struct({
  GetterSource: STRING,
  GetterOptions: map(STRING),
  GetterHeaders: map(STRING),
  GetterMode: STRING,
  RelativeDest: STRING,
});
export const VAULT = struct({
  Policies: slice(STRING),
  Namespace: STRING,
  Env: BOOL,
  DisableFile: BOOL,
  ChangeMode: STRING,
  ChangeSignal: STRING,
});
export const WAIT_CONFIG = struct({ Min: ptr(DURATION), Max: ptr(DURATION) });
export const CHANGE_SCRIPT = struct({
  Command: STRING,
  Args: slice(STRING),
  Timeout: DURATION,
  FailOnError: BOOL,
});
export const TEMPLATE = struct({
  SourcePath: STRING,
  DestPath: STRING,
  EmbeddedTmpl: STRING,
  ChangeMode: STRING,
  ChangeSignal: STRING,
  ChangeScript: ptr(CHANGE_SCRIPT),
  Splay: DURATION,
  Perms: STRING,
  Uid: ptr(INT),
  Gid: ptr(INT),
  LeftDelim: STRING,
  RightDelim: STRING,
  Envvars: BOOL,
  VaultGrace: DURATION,
  Wait: ptr(WAIT_CONFIG),
  ErrMissingKey: BOOL,
});
export const WORKLOAD_IDENTITY = struct({ Env: BOOL, File: BOOL });

export const CHECK_RESTART = struct({ Limit: INT, Grace: DURATION, IgnoreWarnings: BOOL });
export const SERVICE_CHECK = struct({
  Name: STRING,
  Type: STRING,
  Command: STRING,
  Args: slice(STRING),
  Path: STRING,
  Protocol: STRING,
  PortLabel: STRING,
  Expose: BOOL,
  AddressMode: STRING,
  Interval: DURATION,
  Timeout: DURATION,
  InitialStatus: STRING,
  TLSServerName: STRING,
  TLSSkipVerify: BOOL,
  Method: STRING,
  Header: map(slice(STRING)),
  CheckRestart: ptr(CHECK_RESTART),
  GRPCService: STRING,
  GRPCUseTLS: BOOL,
  TaskName: STRING,
  SuccessBeforePassing: INT,
  FailuresBeforeCritical: INT,
  Body: STRING,
  OnUpdate: STRING,
});

export const CONSUL_MESH_GATEWAY = struct({ Mode: STRING });
export const CONSUL_UPSTREAM = struct({
  DestinationName: STRING,
  DestinationNamespace: STRING,
  LocalBindPort: INT,
  Datacenter: STRING,
  LocalBindAddress: STRING,
  // A struct value, not a pointer: always there, empty or not.
  MeshGateway: CONSUL_MESH_GATEWAY,
  Config: map(ANY),
});
export const CONSUL_EXPOSE_PATH = struct({
  Path: STRING,
  Protocol: STRING,
  LocalPathPort: INT,
  ListenerPort: STRING,
});
export const CONSUL_PROXY = struct({
  LocalServiceAddress: STRING,
  LocalServicePort: INT,
  Upstreams: slice(CONSUL_UPSTREAM),
  Expose: ptr(struct({ Paths: slice(CONSUL_EXPOSE_PATH) })),
  Config: map(ANY),
});
export const CONSUL_SIDECAR_SERVICE = struct({
  Tags: slice(STRING),
  Port: STRING,
  Proxy: ptr(CONSUL_PROXY),
  DisableDefaultTCPCheck: BOOL,
  Meta: map(STRING),
});
export const SIDECAR_TASK = struct({
  Name: STRING,
  Driver: STRING,
  User: STRING,
  Config: map(ANY),
  Env: map(STRING),
  Resources: ptr(RESOURCES),
  Meta: map(STRING),
  KillTimeout: ptr(DURATION),
  LogConfig: ptr(LOG_CONFIG),
  ShutdownDelay: ptr(DURATION),
  KillSignal: STRING,
});
export const CONSUL_GATEWAY_BIND_ADDRESS = struct({ Address: STRING, Port: INT });
export const CONSUL_GATEWAY_PROXY = struct({
  ConnectTimeout: ptr(DURATION),
  EnvoyGatewayBindTaggedAddresses: BOOL,
  EnvoyGatewayBindAddresses: map(ptr(CONSUL_GATEWAY_BIND_ADDRESS)),
  EnvoyGatewayNoDefaultBind: BOOL,
  EnvoyDNSDiscoveryType: STRING,
  Config: map(ANY),
});
export const CONSUL_GATEWAY_TLS = struct({
  Enabled: BOOL,
  TLSMinVersion: STRING,
  TLSMaxVersion: STRING,
  CipherSuites: slice(STRING),
});
export const CONSUL_INGRESS_SERVICE = struct({ Name: STRING, Hosts: slice(STRING) });
export const CONSUL_INGRESS_LISTENER = struct({
  Port: INT,
  Protocol: STRING,
  Services: slice(ptr(CONSUL_INGRESS_SERVICE)),
});
export const CONSUL_INGRESS = struct({
  TLS: ptr(CONSUL_GATEWAY_TLS),
  Listeners: slice(ptr(CONSUL_INGRESS_LISTENER)),
});
export const CONSUL_LINKED_SERVICE = struct({
  Name: STRING,
  CAFile: STRING,
  CertFile: STRING,
  KeyFile: STRING,
  SNI: STRING,
});
export const CONSUL_TERMINATING = struct({ Services: slice(ptr(CONSUL_LINKED_SERVICE)) });
export const CONSUL_MESH = struct({});
export const CONSUL_GATEWAY = struct({
  Proxy: ptr(CONSUL_GATEWAY_PROXY),
  Ingress: ptr(CONSUL_INGRESS),
  Terminating: ptr(CONSUL_TERMINATING),
  Mesh: ptr(CONSUL_MESH),
});
export const CONSUL_CONNECT = struct({
  Native: BOOL,
  SidecarService: ptr(CONSUL_SIDECAR_SERVICE),
  SidecarTask: ptr(SIDECAR_TASK),
  Gateway: ptr(CONSUL_GATEWAY),
});

export const SERVICE = struct({
  Name: STRING,
  TaskName: STRING,
  PortLabel: STRING,
  AddressMode: STRING,
  Address: STRING,
  EnableTagOverride: BOOL,
  Tags: slice(STRING),
  CanaryTags: slice(STRING),
  Checks: slice(ptr(SERVICE_CHECK)),
  Connect: ptr(CONSUL_CONNECT),
  Meta: map(STRING),
  CanaryMeta: map(STRING),
  TaggedAddresses: map(STRING),
  Namespace: STRING,
  OnUpdate: STRING,
  Provider: STRING,
});

export const CSI_MOUNT_OPTIONS = struct({ FSType: STRING, MountFlags: slice(STRING) });
export const VOLUME_REQUEST = struct({
  Name: STRING,
  Type: STRING,
  Source: STRING,
  ReadOnly: BOOL,
  AccessMode: STRING,
  AttachmentMode: STRING,
  MountOptions: ptr(CSI_MOUNT_OPTIONS),
  PerAlloc: BOOL,
});

export const TASK = struct({
  Name: STRING,
  Driver: STRING,
  User: STRING,
  Config: map(ANY),
  Env: map(STRING),
  Services: slice(ptr(SERVICE)),
  Vault: ptr(VAULT),
  Templates: slice(ptr(TEMPLATE)),
  Constraints: slice(ptr(CONSTRAINT)),
  Affinities: slice(ptr(AFFINITY)),
  Resources: ptr(RESOURCES),
  RestartPolicy: ptr(RESTART_POLICY),
  DispatchPayload: ptr(DISPATCH_PAYLOAD),
  Lifecycle: OPAQUE_PTR,
  Meta: map(STRING),
  KillTimeout: DURATION,
  LogConfig: ptr(LOG_CONFIG),
  Artifacts: slice(ptr(TASK_ARTIFACT)),
  Leader: BOOL,
  ShutdownDelay: DURATION,
  VolumeMounts: OPAQUE_SLICE,
  ScalingPolicies: OPAQUE_SLICE,
  KillSignal: STRING,
  Kind: STRING,
  CSIPluginConfig: OPAQUE_PTR,
  Identity: ptr(WORKLOAD_IDENTITY),
});

export const TASK_GROUP = struct({
  Name: STRING,
  Count: INT,
  Update: ptr(UPDATE_STRATEGY),
  Migrate: OPAQUE_PTR,
  Constraints: slice(ptr(CONSTRAINT)),
  Scaling: OPAQUE_PTR,
  RestartPolicy: ptr(RESTART_POLICY),
  Tasks: slice(ptr(TASK)),
  EphemeralDisk: ptr(EPHEMERAL_DISK),
  Meta: map(STRING),
  ReschedulePolicy: ptr(RESCHEDULE_POLICY),
  Affinities: slice(ptr(AFFINITY)),
  Spreads: OPAQUE_SLICE,
  Networks: slice(ptr(NETWORK_RESOURCE)),
  Consul: ptr(CONSUL),
  Services: slice(ptr(SERVICE)),
  Volumes: map(ptr(VOLUME_REQUEST)),
  ShutdownDelay: ptr(DURATION),
  StopAfterClientDisconnect: ptr(DURATION),
  MaxClientDisconnect: ptr(DURATION),
});

export const PERIODIC_CONFIG = struct({
  Enabled: BOOL,
  Spec: STRING,
  SpecType: STRING,
  ProhibitOverlap: BOOL,
  TimeZone: STRING,
});
export const PARAMETERIZED_JOB = struct({
  Payload: STRING,
  MetaRequired: slice(STRING),
  MetaOptional: slice(STRING),
});
export const MULTIREGION_STRATEGY = struct({ MaxParallel: INT, OnFailure: STRING });
export const MULTIREGION_REGION = struct({
  Name: STRING,
  Count: INT,
  Datacenters: slice(STRING),
  NodePool: STRING,
  Meta: map(STRING),
});
export const MULTIREGION = struct({
  Strategy: ptr(MULTIREGION_STRATEGY),
  Regions: slice(ptr(MULTIREGION_REGION)),
});

export const JOB = struct({
  Stop: BOOL,
  Region: STRING,
  Namespace: STRING,
  ID: STRING,
  ParentID: STRING,
  Name: STRING,
  Type: STRING,
  Priority: INT,
  AllAtOnce: BOOL,
  Datacenters: slice(STRING),
  NodePool: STRING,
  Constraints: slice(ptr(CONSTRAINT)),
  Affinities: slice(ptr(AFFINITY)),
  Spreads: OPAQUE_SLICE,
  TaskGroups: slice(ptr(TASK_GROUP)),
  // A struct value in Nomad's Job: the primitive walk skips it like a pointer.
  Update: UPDATE_STRATEGY,
  Multiregion: ptr(MULTIREGION),
  Periodic: ptr(PERIODIC_CONFIG),
  ParameterizedJob: ptr(PARAMETERIZED_JOB),
  Dispatched: BOOL,
  DispatchIdempotencyToken: STRING,
  Payload: OPAQUE_SLICE,
  Meta: map(STRING),
  ConsulToken: STRING,
  ConsulNamespace: STRING,
  VaultToken: STRING,
  VaultNamespace: STRING,
  NomadTokenID: STRING,
  Status: STRING,
  StatusDescription: STRING,
  Stable: BOOL,
  Version: INT,
  SubmitTime: INT,
  CreateIndex: INT,
  ModifyIndex: INT,
  JobModifyIndex: INT,
});
