import type { AllocationSpec } from "../streams/allocs.ts";
import type { AllocRow } from "./allocs.ts";
import { hasKeysInOrder } from "./keys-in-order.ts";

/*
 * Allocation rows of one hidden class per shape. Every change of a row was
 * `{ ...stored, Field: … }`: V8 gives a spread's result a copy of the
 * source's hidden class made for that spread site (kept by its inline
 * cache), not the source's own, even when the literal adds no key. So a
 * placement's row and the same row after its client's first update had two
 * classes, and an update site whose cache had gone polymorphic made more:
 * replaying a 5,000-node burst's log put rows of seven classes, and the
 * table's key, index and order functions, the scheduler's readers and the
 * encoder met them one after another, each new one a "wrong map" deopt and
 * a TurboFan recompile. Rows are now copied by one literal naming every
 * field, in the order placedRow (plan-apply.ts) writes them: literals of the
 * same keys in the same order share V8's hidden class, whichever site made
 * them. A row of another shape (a full-spec placement's: the record's field
 * order) is copied by Object.assign onto `{}`, whose classes follow one
 * transition per key from the empty object's: one class per key order too.
 * Either way the keys keep their order and a changed field its place, as
 * the spread did: the JSON, the msgpack of snapshots and the state hash are
 * unchanged.
 */

export type MutableAllocRow = { -readonly [K in keyof AllocRow]: AllocRow[K] };

/** A compact placement's row fields, in placedRow's order. */
export const ALLOC_ROW_KEYS = [
  "CreateIndex",
  "ModifyIndex",
  "AllocModifyIndex",
  "ID",
  "Namespace",
  "EvalID",
  "Name",
  "NodeID",
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
  "ClientStatus",
  "ClientDescription",
  "TaskStates",
  "AllocStates",
  "PreviousAllocation",
  "NextAllocation",
  "DeploymentID",
  "DeploymentStatus",
  "RescheduleTracker",
  "NetworkStatus",
  "FollowupEvalID",
  "PreemptedAllocations",
  "PreemptedByAllocation",
  "SigningKeyID",
  "CreateTime",
  "ModifyTime",
] as const satisfies readonly (keyof AllocRow)[];

/**
 * A copy of `a` to change before it is put, of the class every row of its
 * shape has. Assigning a field the row has keeps its place, as
 * `{ ...a, Field: value }` did.
 */
export function copyAllocRow(a: AllocRow): MutableAllocRow {
  if (!hasKeysInOrder(a, ALLOC_ROW_KEYS)) return Object.assign({}, a);
  return {
    CreateIndex: a.CreateIndex,
    ModifyIndex: a.ModifyIndex,
    AllocModifyIndex: a.AllocModifyIndex,
    ID: a.ID,
    Namespace: a.Namespace,
    EvalID: a.EvalID,
    Name: a.Name,
    NodeID: a.NodeID,
    NodeName: a.NodeName,
    JobID: a.JobID,
    Job: a.Job,
    TaskGroup: a.TaskGroup,
    Resources: a.Resources,
    SharedResources: a.SharedResources,
    TaskResources: a.TaskResources,
    AllocatedResources: a.AllocatedResources,
    Metrics: a.Metrics,
    DesiredStatus: a.DesiredStatus,
    DesiredDescription: a.DesiredDescription,
    DesiredTransition: a.DesiredTransition,
    ClientStatus: a.ClientStatus,
    ClientDescription: a.ClientDescription,
    TaskStates: a.TaskStates,
    AllocStates: a.AllocStates,
    PreviousAllocation: a.PreviousAllocation,
    NextAllocation: a.NextAllocation,
    DeploymentID: a.DeploymentID,
    DeploymentStatus: a.DeploymentStatus,
    RescheduleTracker: a.RescheduleTracker,
    NetworkStatus: a.NetworkStatus,
    FollowupEvalID: a.FollowupEvalID,
    PreemptedAllocations: a.PreemptedAllocations,
    PreemptedByAllocation: a.PreemptedByAllocation,
    SigningKeyID: a.SigningKeyID,
    CreateTime: a.CreateTime,
    ModifyTime: a.ModifyTime,
  };
}

/**
 * A row from a full spec (a `Placed` or `Updated` entry), to complete
 * before it is put: the spec's fields in the record's order; the caller's
 * assignments of fields the spec lacks (CreateIndex, ModifyIndex,
 * AllocModifyIndex) follow them, as they did in `{ ...spec, … }`.
 */
export function allocRowFromSpec(spec: AllocationSpec): MutableAllocRow {
  return Object.assign({}, spec) as MutableAllocRow;
}
