import { type AllocationSpec, allocTaskGroup } from "../../streams/allocs.ts";

/**
 * Nomad's IdentityClaims as its JWT payload carries them, in Nomad's order
 * (its struct fields, then the registered claims it sets). No `exp`, `aud`,
 * `iss` or `sub`: as in Nomad 1.4–1.6, a workload identity lasts as long as
 * its allocation is not client-terminal.
 */
export interface IdentityClaims {
  readonly nomad_namespace: string;
  /** The parent job's ID for periodic and dispatch children (Nomad 1.5.7+). */
  readonly nomad_job_id: string;
  readonly nomad_allocation_id: string;
  readonly nomad_task: string;
  /** Unix seconds. */
  readonly nbf: number;
  /** Unix seconds. */
  readonly iat: number;
}

/** The job fields the claims read: its parent, if it has one (any job snapshot will do). */
export type ClaimsJob = { readonly [field: string]: unknown };

/**
 * The job a workload identity speaks for (Nomad's ToIdentityClaims and
 * resolvePoliciesForClaims): the parent job of a periodic or dispatch child,
 * so one policy attached to the parent covers every child.
 */
export function identityJobID(alloc: Pick<AllocationSpec, "JobID">, job: ClaimsJob | null): string {
  const parent = job?.ParentID;
  return typeof parent === "string" && parent !== "" ? parent : alloc.JobID;
}

/** Nomad's Allocation.ToTaskIdentityClaims, at `issuedAt` (unix seconds). */
export function identityClaims(
  alloc: Pick<AllocationSpec, "ID" | "Namespace" | "JobID">,
  job: ClaimsJob | null,
  task: string,
  issuedAt: number,
): IdentityClaims {
  return {
    nomad_namespace: alloc.Namespace,
    nomad_job_id: identityJobID(alloc, job),
    nomad_allocation_id: alloc.ID,
    nomad_task: task,
    nbf: issuedAt,
    iat: issuedAt,
  };
}

/**
 * When an allocation's identities were issued, in unix seconds: its
 * CreateTime. The log keeps no JWT (it is a bearer credential and the log is
 * meant to be exported), only SigningKeyID; Ed25519 signatures are
 * deterministic, so the same key, claims and issue time give back the same
 * JWT whenever it is served. The creation time is on the allocation already,
 * and it is the time the plan applier placed it (Nomad's `now` in
 * ToIdentityClaims, to the second); an in-place update keeps it, as it
 * keeps the allocation.
 */
export function issuedAtOf(alloc: Pick<AllocationSpec, "CreateTime">): number {
  return Math.floor(alloc.CreateTime / 1e9);
}

/** The names of the tasks of an allocation's group, in the job's order: one identity each. */
export function taskNames(alloc: Pick<AllocationSpec, "Job" | "TaskGroup">): string[] {
  const tasks = allocTaskGroup(alloc)?.Tasks;
  if (!Array.isArray(tasks)) return [];
  const names: string[] = [];
  for (const t of tasks as unknown[]) {
    const name = (t as { Name?: unknown } | null)?.Name;
    if (typeof name === "string" && name !== "") names.push(name);
  }
  return names;
}
