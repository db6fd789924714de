import { parseDuration } from "../util/duration.ts";
import { csiVolumesOf, type SimCSIVolume } from "./alloc-volumes.ts";
import {
  NO_NETWORKING,
  nomadServices,
  type SimNetworking,
  type SimService,
  simNetworking,
} from "./service-specs.ts";

/** What a simulated allocation runner needs from a server Allocation, read each time it is pulled. */
export interface SimAllocSpec {
  readonly ID: string;
  /** `<job>.<group>[<index>]`: a replacement keeps the name of the allocation it replaces. */
  readonly Name: string;
  readonly Namespace: string;
  readonly JobID: string;
  readonly JobName: string;
  readonly TaskGroup: string;
  readonly JobType: string;
  readonly Tasks: readonly SimTaskSpec[];
  readonly RestartAttempts: number;
  /** Milliseconds. */
  readonly RestartDelay: number;
  readonly DeploymentID: string;
  /** The group's update block (the job's when the group has none): health for a deployment. */
  readonly Update: SimHealthStrategy | null;
  /** The group's migrate block: health outside a deployment (a drain's replacements). */
  readonly Migrate: SimHealthStrategy | null;
  readonly DesiredStatus: string;
  readonly ClientStatus: string;
  readonly AllocModifyIndex: number;
  /** DeploymentStatus.Canary: a canary registers its services' canary tags. */
  readonly Canary: boolean;
  /** The group's services with `provider = "nomad"`. */
  readonly GroupServices: readonly SimService[];
  /** Where its services are reached (AllocatedResources). */
  readonly Networking: SimNetworking;
  /** The group's csi volumes, claimed before the tasks start and unpublished once they end. */
  readonly CSIVolumes: readonly SimCSIVolume[];
}

/** The health settings of an update or migrate block; durations in milliseconds. */
export interface SimHealthStrategy {
  /** 0: no rolling update (Nomad's UpdateStrategy.IsEmpty). */
  readonly MaxParallel: number;
  /** "checks", "task_states" or "manual". */
  readonly HealthCheck: string;
  readonly MinHealthyTime: number;
  readonly HealthyDeadline: number;
}

export interface SimTaskSpec {
  readonly Name: string;
  /** mock_driver's `run_for`, milliseconds. */
  readonly RunFor?: number;
  /** mock_driver's `exit_code`. */
  readonly ExitCode?: number;
  /** The task's services with `provider = "nomad"`. */
  readonly Services: readonly SimService[];
}

type Json = Record<string, unknown>;

const obj = (v: unknown): Json | undefined =>
  v !== null && typeof v === "object" && !Array.isArray(v) ? (v as Json) : undefined;
const num = (v: unknown): number | undefined => (typeof v === "number" && Number.isFinite(v) ? v : undefined);
const str = (v: unknown): string => (typeof v === "string" ? v : "");

/** Go duration text ("30s", "1m30s") or nanoseconds, as mock_driver accepts it, in milliseconds. */
function durationMs(v: unknown): number | undefined {
  if (typeof v === "number") return v / 1e6;
  return typeof v === "string" && v !== "" ? parseDuration(v) : undefined;
}

/**
 * Reads an allocation as Alloc.GetAllocs returns it: the task names of its
 * group, and the restart and deployment settings the simulated driver uses.
 * An allocation whose job carries no tasks (placed by hand) runs one task
 * named after its group.
 */
export function simAllocSpec(alloc: Json, defaultRestartDelayMs: number): SimAllocSpec {
  const job = obj(alloc.Job);
  const group = (Array.isArray(job?.TaskGroups) ? (job.TaskGroups as unknown[]) : [])
    .map(obj)
    .find((tg) => tg?.Name === alloc.TaskGroup);
  const tasks: SimTaskSpec[] = (Array.isArray(group?.Tasks) ? (group.Tasks as unknown[]) : [])
    .map(obj)
    .filter((t): t is Json => t !== undefined && typeof t.Name === "string")
    .map((t) => {
      const config = obj(t.Config);
      return {
        Name: t.Name as string,
        RunFor: durationMs(config?.run_for),
        ExitCode: num(config?.exit_code),
        Services: nomadServices(t.Services),
      };
    });
  if (tasks.length === 0) tasks.push({ Name: str(alloc.TaskGroup) || "task", Services: [] });
  const restart = obj(group?.RestartPolicy);
  const restartDelayNs = num(restart?.Delay);
  const groupServices = nomadServices(group?.Services);
  // Most allocations register nothing: their resources are not read.
  const registers = groupServices.length > 0 || tasks.some((t) => t.Services.length > 0);
  return {
    ID: str(alloc.ID),
    Name: str(alloc.Name),
    Namespace: str(alloc.Namespace) || "default",
    JobID: str(alloc.JobID),
    JobName: str(job?.Name) || str(alloc.JobID),
    TaskGroup: str(alloc.TaskGroup),
    JobType: str(job?.Type) || "service",
    Tasks: tasks,
    RestartAttempts: num(restart?.Attempts) ?? 2,
    RestartDelay: restartDelayNs !== undefined ? restartDelayNs / 1e6 : defaultRestartDelayMs,
    DeploymentID: str(alloc.DeploymentID),
    Update: healthStrategy(obj(group?.Update) ?? obj(job?.Update), 0),
    Migrate: healthStrategy(obj(group?.Migrate), 1),
    DesiredStatus: str(alloc.DesiredStatus) || "run",
    ClientStatus: str(alloc.ClientStatus) || "pending",
    AllocModifyIndex: num(alloc.AllocModifyIndex) ?? 0,
    Canary: obj(alloc.DeploymentStatus)?.Canary === true,
    GroupServices: groupServices,
    Networking: registers ? simNetworking(alloc.AllocatedResources) : NO_NETWORKING,
    CSIVolumes: csiVolumesOf(group, str(alloc.Name)),
  };
}

/** An update or migrate block, with Nomad's defaults (10 s healthy for, 5 m deadline, checks) for what it leaves out. */
function healthStrategy(block: Json | undefined, defaultMaxParallel: number): SimHealthStrategy | null {
  if (!block) return null;
  return {
    MaxParallel: num(block.MaxParallel) ?? defaultMaxParallel,
    HealthCheck: str(block.HealthCheck) || "checks",
    MinHealthyTime: (num(block.MinHealthyTime) ?? 10e9) / 1e6,
    HealthyDeadline: (num(block.HealthyDeadline) ?? 300e9) / 1e6,
  };
}
