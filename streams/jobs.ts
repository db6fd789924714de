import type { EvaluationSpec } from "./evals.ts";
import { type Envelope, schemas } from "./event-schema.ts";

export type JobType = "service" | "batch" | "system" | "sysbatch";
export const JOB_TYPES: readonly JobType[] = ["service", "batch", "system", "sysbatch"];

/** Nomad's Constraint; Operand is one of Nomad's operators (`=`, `regexp`, `distinct_hosts`, ...). */
export interface Constraint {
  readonly LTarget: string;
  readonly RTarget: string;
  readonly Operand: string;
}

/** Nomad's UpdateStrategy; durations are nanoseconds. MaxParallel 0 means no deployments. */
export interface UpdateStrategy {
  readonly Stagger: number;
  readonly MaxParallel: number;
  readonly HealthCheck: string;
  readonly MinHealthyTime: number;
  readonly HealthyDeadline: number;
  readonly ProgressDeadline: number;
  readonly AutoRevert: boolean;
  readonly AutoPromote: boolean;
  readonly Canary: number;
}

/** Nomad's MigrateStrategy: how many allocations of a group a drain may move at once. */
export interface MigrateStrategy {
  readonly MaxParallel: number;
  readonly HealthCheck: string;
  readonly MinHealthyTime: number;
  readonly HealthyDeadline: number;
}

export interface RestartPolicy {
  readonly Attempts: number;
  readonly Interval: number;
  readonly Delay: number;
  readonly Mode: string;
  readonly RenderTemplates?: boolean;
}

/** Nomad's ReschedulePolicy; durations are nanoseconds. */
export interface JobReschedulePolicy {
  readonly Attempts: number;
  readonly Interval: number;
  readonly Delay: number;
  readonly DelayFunction: string;
  readonly MaxDelay: number;
  readonly Unlimited: boolean;
}

export interface EphemeralDisk {
  readonly Sticky: boolean;
  readonly SizeMB: number;
  readonly Migrate: boolean;
}

/** A task's resource ask (Nomad's Resources: CPU in MHz, memory and disk in MB). */
export interface TaskResources {
  readonly CPU: number;
  readonly Cores: number;
  readonly MemoryMB: number;
  readonly MemoryMaxMB: number;
  readonly DiskMB: number;
  readonly IOPS: number;
  readonly Networks: readonly unknown[] | null;
  readonly Devices: readonly unknown[] | null;
  readonly [field: string]: unknown;
}

/** Nomad's CSIMountOptions of a volume request. */
export interface VolumeMountOptions {
  readonly FSType: string;
  readonly MountFlags: readonly string[] | null;
}

/**
 * Nomad's VolumeRequest: a volume a task group asks for, `host` or `csi`.
 * AccessMode and AttachmentMode are CSI's ("" when not given); with
 * PerAlloc each allocation asks for `Source[<alloc index>]`.
 */
export interface VolumeRequest {
  readonly Name: string;
  readonly Type: string;
  readonly Source: string;
  readonly ReadOnly: boolean;
  readonly AccessMode: string;
  readonly AttachmentMode: string;
  readonly MountOptions: VolumeMountOptions | null;
  readonly PerAlloc: boolean;
}

/** Nomad's VolumeMount: where a task mounts one of its group's volumes. */
export interface VolumeMount {
  readonly Volume: string;
  readonly Destination: string;
  readonly ReadOnly: boolean;
  readonly PropagationMode: string;
}

/** The fields of Nomad's Task the control plane reads; the rest is carried as sent. */
export interface TaskSpec {
  readonly Name: string;
  readonly Driver: string;
  readonly Config: Readonly<Record<string, unknown>> | null;
  readonly Constraints: readonly Constraint[] | null;
  readonly Resources: TaskResources;
  readonly RestartPolicy: RestartPolicy | null;
  readonly KillTimeout: number;
  readonly Leader: boolean;
  readonly Lifecycle: { readonly Hook: string; readonly Sidecar: boolean } | null;
  readonly Meta: Readonly<Record<string, string>> | null;
  /** Absent in records of jobs that never sent any. */
  readonly VolumeMounts?: readonly VolumeMount[] | null;
  readonly [field: string]: unknown;
}

/** The fields of Nomad's TaskGroup the control plane reads; the rest is carried as sent. */
export interface TaskGroupSpec {
  readonly Name: string;
  readonly Count: number;
  readonly Update: UpdateStrategy | null;
  readonly Migrate: MigrateStrategy | null;
  readonly Constraints: readonly Constraint[] | null;
  readonly RestartPolicy: RestartPolicy | null;
  readonly ReschedulePolicy: JobReschedulePolicy | null;
  readonly EphemeralDisk: EphemeralDisk;
  readonly Tasks: readonly TaskSpec[];
  readonly Meta: Readonly<Record<string, string>> | null;
  /** Nanoseconds; null when the group does not tolerate client disconnects. */
  readonly MaxClientDisconnect: number | null;
  readonly StopAfterClientDisconnect: number | null;
  /** By name; absent in records of jobs that never sent any. */
  readonly Volumes?: Readonly<Record<string, VolumeRequest>> | null;
  readonly [field: string]: unknown;
}

/**
 * Nomad's Job as submitted and canonicalized (defaults filled in), without
 * what the server decides at apply: Version, Status, Stable, SubmitTime and
 * the indexes. Fields the scheduler does not read are carried as sent.
 */
export interface JobSpec {
  readonly ID: string;
  readonly Name: string;
  readonly Namespace: string;
  readonly Region: string;
  readonly Type: JobType;
  readonly Priority: number;
  readonly AllAtOnce: boolean;
  readonly Datacenters: readonly string[];
  /** The node pool its allocations go to (`all`: any node); absent in records from before node pools. */
  readonly NodePool?: string;
  readonly Constraints: readonly Constraint[] | null;
  readonly TaskGroups: readonly TaskGroupSpec[];
  readonly Update: UpdateStrategy | null;
  readonly Periodic: Readonly<Record<string, unknown>> | null;
  readonly ParameterizedJob: Readonly<Record<string, unknown>> | null;
  readonly Meta: Readonly<Record<string, string>> | null;
  readonly Stop: boolean;
  readonly ParentID: string;
  /** A child of a parameterized job (Job.Dispatch); it keeps its parent's ParameterizedJob block. */
  readonly Dispatched?: boolean;
  readonly [field: string]: unknown;
}

/**
 * Job.Register: a new job or a new version of one (every version is kept).
 * Version, JobModifyIndex and Status are decided at apply; the evaluation,
 * when there is one, is created in the same record with JobModifyIndex set
 * to the record's index, as Nomad's FSM does.
 */
export interface JobRegistered {
  readonly Job: JobSpec;
  readonly Eval: EvaluationSpec | null;
  /** Check-and-set: apply only if the job's JobModifyIndex is still JobModifyIndex (0: the job must not exist). */
  readonly EnforceIndex: boolean;
  readonly JobModifyIndex: number;
  /** Since v2: the job's source as submitted, kept with the version it creates (Nomad's JobSubmission). */
  readonly Submission: JobSubmission | null;
}

/**
 * Nomad's JobSubmission as a client sends it: the jobspec the job was parsed
 * from. The server adds the namespace, job ID, version and JobModifyIndex.
 */
export interface JobSubmission {
  /** The original job definition (HCL1, HCL2 or JSON). */
  readonly Source: string;
  /** "hcl1", "hcl2" or "json". */
  readonly Format: string;
  /** The CLI's `-var` arguments (HCL2 only). */
  readonly VariableFlags: Readonly<Record<string, string>> | null;
  /** The var-file or web UI variables, opaque (HCL2 only). */
  readonly Variables: string;
}

/**
 * Job.Stable: a version marked stable or not (Nomad's JobStabilityRequest).
 * The version keeps its number and JobModifyIndex; deployments that succeed
 * mark their version stable without an event (the jobs projection follows
 * the deployments table).
 */
export interface JobStabilitySet {
  readonly Namespace: string;
  readonly JobID: string;
  readonly Version: number;
  readonly Stable: boolean;
}

/**
 * Job.Deregister: the job is stopped (Stop = true, a new version), or purged
 * (its row and summary removed; its versions stay, as history). The
 * evaluation that stops its allocations is created in the same record.
 */
export interface JobDeregistered {
  readonly Namespace: string;
  readonly JobID: string;
  readonly Purge: boolean;
  readonly Eval: EvaluationSpec | null;
}

export type JobEvent =
  | Envelope<"JobRegistered", JobRegistered>
  | Envelope<"JobDeregistered", JobDeregistered>
  | Envelope<"JobStabilitySet", JobStabilitySet>;

export const JOB_REGISTERED_VERSION = 2;

export const jobSchemas = schemas(
  {
    type: "JobRegistered",
    version: JOB_REGISTERED_VERSION,
    // v1 carried no submission.
    upcast: { 1: (data) => ({ ...(data as object), Submission: null }) },
  },
  { type: "JobDeregistered", version: 1 },
  { type: "JobStabilitySet", version: 1 },
);

/** A job version as a plan refers to it: placements take their Job from the versions table. */
export interface JobVersionRef {
  readonly Namespace: string;
  readonly ID: string;
  readonly Version: number;
}

export function isServiceLike(type: string): boolean {
  return type === "service";
}

/** Nomad's `batch` and `sysbatch`: allocations that complete are done, not replaced. */
export function isBatchLike(type: string): boolean {
  return type === "batch" || type === "sysbatch";
}

/** Nomad's `system` and `sysbatch`: one allocation per eligible node. */
export function isSystemLike(type: string): boolean {
  return type === "system" || type === "sysbatch";
}
