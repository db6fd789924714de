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
