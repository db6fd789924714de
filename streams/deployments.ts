import type { EvaluationSpec } from "./evals.ts";
import { type Envelope, schemas } from "./event-schema.ts";

/**
 * Deployments as the scheduler creates and changes them. They travel inside
 * plan results (AllocsPlanApplied.Deployment and DeploymentUpdates), as in
 * Nomad's ApplyPlanResults; their counters (placed, healthy, unhealthy) are
 * kept by the deployments projection from the allocation changes.
 */

export type DeploymentStatus =
  | "running"
  | "paused"
  | "failed"
  | "successful"
  | "cancelled"
  | "pending"
  | "blocked"
  | "unblocking"
  | "initializing";

// Nomad's descriptions (nomad/structs/structs.go).
export const DEPLOYMENT_RUNNING = "Deployment is running";
export const DEPLOYMENT_SUCCESSFUL = "Deployment completed successfully";
export const DEPLOYMENT_NEWER_JOB = "Cancelled due to newer version of job";
export const DEPLOYMENT_STOPPED_JOB = "Cancelled because job is stopped";
export const DEPLOYMENT_FAILED_ALLOCATIONS = "Failed due to unhealthy allocations";
export const DEPLOYMENT_RUNNING_NEEDS_PROMOTION = "Deployment is running but requires manual promotion";
export const DEPLOYMENT_RUNNING_AUTO_PROMOTION = "Deployment is running pending automatic promotion";
export const DEPLOYMENT_PAUSED = "Deployment is paused";
export const DEPLOYMENT_FAILED_BY_USER = "Deployment marked as failed";
export const DEPLOYMENT_PROGRESS_DEADLINE = "Failed due to progress deadline";
export const DEPLOYMENT_PENDING_FOR_PEER = "Deployment is pending, waiting for peer region";
export const DEPLOYMENT_BLOCKED = "Deployment is complete but waiting for peer region";

/** Nomad's DeploymentStatusDescriptionRollback. */
export const rollbackDescription = (base: string, version: number) =>
  `${base} - rolling back to job version ${version}`;
/** Nomad's DeploymentStatusDescriptionRollbackNoop. */
export const rollbackNoopDescription = (base: string, version: number) =>
  `${base} - not rolling back to stable job version ${version} as current job has same specification`;
/** Nomad's DeploymentStatusDescriptionNoRollbackTarget. */
export const noRollbackTargetDescription = (base: string) =>
  `${base} - no stable job version to auto revert to`;

/** Nomad's DeploymentState: one task group's part of a deployment. */
export interface DeploymentState {
  readonly AutoRevert: boolean;
  readonly AutoPromote: boolean;
  /** Nanoseconds. */
  readonly ProgressDeadline: number;
  readonly RequireProgressBy: string;
  readonly Promoted: boolean;
  readonly PlacedCanaries: readonly string[] | null;
  readonly DesiredCanaries: number;
  readonly DesiredTotal: number;
  readonly PlacedAllocs: number;
  readonly HealthyAllocs: number;
  readonly UnhealthyAllocs: number;
}

/** Nomad's Deployment, without the indexes the projection stamps. */
export interface DeploymentSpec {
  readonly ID: string;
  readonly Namespace: string;
  readonly JobID: string;
  readonly JobVersion: number;
  readonly JobModifyIndex: number;
  readonly JobSpecModifyIndex: number;
  readonly JobCreateIndex: number;
  readonly IsMultiregion: boolean;
  readonly TaskGroups: Readonly<Record<string, DeploymentState>>;
  readonly Status: DeploymentStatus;
  readonly StatusDescription: string;
  readonly EvalPriority: number;
  /** Unix nanoseconds. */
  readonly CreateTime: number;
  readonly ModifyTime: number;
}

/** Nomad's DeploymentStatusUpdate: a status change the reconciler decided. */
export interface DeploymentStatusUpdate {
  readonly DeploymentID: string;
  readonly Status: DeploymentStatus;
  readonly StatusDescription: string;
}

/** Nomad's Deployment.Active(): still moving. */
export function isDeploymentActive(status: DeploymentStatus): boolean {
  return (
    status === "running" ||
    status === "paused" ||
    status === "blocked" ||
    status === "unblocking" ||
    status === "pending" ||
    status === "initializing"
  );
}

/** Nomad's Deployment.RequiresPromotion: running, with a group whose canaries wait for promotion. */
export function requiresPromotion(d: Pick<DeploymentSpec, "Status" | "TaskGroups">): boolean {
  if (d.Status !== "running") return false;
  return Object.values(d.TaskGroups).some((s) => s.DesiredCanaries > 0 && !s.Promoted);
}

/** Nomad's Deployment.HasAutoPromote: running, and every group with canaries promotes itself. */
export function hasAutoPromote(d: Pick<DeploymentSpec, "Status" | "TaskGroups">): boolean {
  const groups = Object.values(d.TaskGroups);
  if (d.Status !== "running" || groups.length === 0) return false;
  return groups.every((s) => s.DesiredCanaries === 0 || s.AutoPromote);
}

/**
 * Deployment.Pause and Deployment.Fail, and the failures the deployment
 * watcher decides (unhealthy allocations, progress deadline): the status
 * and Nomad's description, with the evaluation Nomad creates in the same
 * entry. An auto-revert follows in the same append as a JobRegistered
 * record that carries the evaluation instead (Eval is then null here).
 * The time of the change is the envelope's.
 */
export interface DeploymentStatusUpdated {
  readonly DeploymentID: string;
  readonly Status: DeploymentStatus;
  readonly StatusDescription: string;
  readonly Eval: EvaluationSpec | null;
  /** The stable version the job is reverted to in the same append, if any. */
  readonly RevertedJobVersion?: number;
}

/** Deployment.Promote (Nomad's ApplyDeploymentPromoteRequest), by a user or by auto_promote. */
export interface DeploymentPromoted {
  readonly DeploymentID: string;
  readonly All: boolean;
  readonly Groups: readonly string[] | null;
  readonly Eval: EvaluationSpec;
}

/**
 * Deployment.SetAllocHealth (Nomad's ApplyDeploymentAllocHealthRequest):
 * allocations marked healthy or unhealthy by hand, at Timestamp; unhealthy
 * ones fail the deployment (DeploymentUpdate), and an auto-revert follows
 * in the same append as for DeploymentStatusUpdated.
 */
export interface DeploymentAllocHealthSet {
  readonly DeploymentID: string;
  readonly HealthyAllocationIDs: readonly string[];
  readonly UnhealthyAllocationIDs: readonly string[];
  /** Go time (RFC 3339), the writer's clock. */
  readonly Timestamp: string;
  readonly DeploymentUpdate: DeploymentStatusUpdate | null;
  readonly Eval: EvaluationSpec | null;
  readonly RevertedJobVersion?: number;
}

export type DeploymentEvent =
  | Envelope<"DeploymentStatusUpdated", DeploymentStatusUpdated>
  | Envelope<"DeploymentPromoted", DeploymentPromoted>
  | Envelope<"DeploymentAllocHealthSet", DeploymentAllocHealthSet>;

export const DEPLOYMENT_WRITES: ReadonlySet<string> = new Set([
  "DeploymentStatusUpdated",
  "DeploymentPromoted",
  "DeploymentAllocHealthSet",
]);

export const deploymentSchemas = schemas(
  { type: "DeploymentStatusUpdated", version: 1 },
  { type: "DeploymentPromoted", version: 1 },
  { type: "DeploymentAllocHealthSet", version: 1 },
);
