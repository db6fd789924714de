import type { AllocRow } from "../../projections/allocs.ts";
import type { NodeRow } from "../../projections/nodes.ts";
import { type LegacyResources, legacyNodeReserved, legacyNodeResources } from "../nodes/legacy-resources.ts";
import type { Table } from "../store/table.ts";
import { ApiError } from "./api-error.ts";

/** Nomad's Node as the API returns it. */
export type NodeView = Omit<NodeRow, "Resources" | "Reserved"> & {
  readonly SecretID: "";
  readonly Drain: boolean;
  readonly Resources: LegacyResources;
  readonly Reserved: LegacyResources;
};

/**
 * Nomad's Node as the API returns it. The row never holds the secret; the
 * empty SecretID is Nomad's sanitized shape. `Drain` is the api package's
 * deprecated flag; the legacy Resources and Reserved are always complete
 * (clients dereference them), filled from NodeResources where the client
 * sent none.
 */
export function nodeView(row: NodeRow): NodeView {
  return {
    ...row,
    SecretID: "",
    Drain: row.DrainStrategy !== null,
    Resources: legacyNodeResources(row),
    Reserved: legacyNodeReserved(row),
  };
}

/** Nomad's NodeListStub; `resources` and `os` add the fields Nomad adds for `?resources=true` and `?os=true`. */
export function nodeStub(row: NodeRow, fields: { resources: boolean; os: boolean }): Record<string, unknown> {
  const stub: Record<string, unknown> = {
    Address: hostOf(row.HTTPAddr),
    ID: row.ID,
  };
  if (fields.os) stub.Attributes = { "os.name": row.Attributes["os.name"] ?? "" };
  Object.assign(stub, {
    Datacenter: row.Datacenter,
    Name: row.Name,
    NodeClass: row.NodeClass,
    NodePool: row.NodePool,
    Version: row.Attributes["nomad.version"] ?? "",
    Drain: row.DrainStrategy !== null,
    SchedulingEligibility: row.SchedulingEligibility,
    Status: row.Status,
    StatusDescription: row.StatusDescription,
    Drivers: row.Drivers,
    HostVolumes: row.HostVolumes,
  });
  if (fields.resources) {
    stub.NodeResources = row.NodeResources;
    stub.ReservedResources = row.ReservedResources;
  }
  stub.LastDrain = row.LastDrain;
  stub.CreateIndex = row.CreateIndex;
  stub.ModifyIndex = row.ModifyIndex;
  return stub;
}

/** Nomad's AllocListStub; `resources` adds AllocatedResources, `taskStates: false` drops TaskStates. */
export function allocStub(
  row: AllocRow,
  fields: { resources: boolean; taskStates: boolean },
): Record<string, unknown> {
  const stub: Record<string, unknown> = {
    ID: row.ID,
    EvalID: row.EvalID,
    Name: row.Name,
    Namespace: row.Namespace,
    NodeID: row.NodeID,
    NodeName: row.NodeName,
    JobID: row.JobID,
    JobType: row.Job?.Type ?? "",
    JobVersion: row.Job?.Version ?? 0,
    TaskGroup: row.TaskGroup,
  };
  if (fields.resources) stub.AllocatedResources = row.AllocatedResources;
  Object.assign(stub, {
    DesiredStatus: row.DesiredStatus,
    DesiredDescription: row.DesiredDescription,
    ClientStatus: row.ClientStatus,
    ClientDescription: row.ClientDescription,
    DesiredTransition: row.DesiredTransition,
  });
  if (fields.taskStates) stub.TaskStates = row.TaskStates;
  Object.assign(stub, {
    DeploymentStatus: row.DeploymentStatus,
    FollowupEvalID: row.FollowupEvalID,
    RescheduleTracker: row.RescheduleTracker,
    PreemptedAllocations: row.PreemptedAllocations,
    PreemptedByAllocation: row.PreemptedByAllocation,
    CreateIndex: row.CreateIndex,
    ModifyIndex: row.ModifyIndex,
    CreateTime: row.CreateTime,
    ModifyTime: row.ModifyTime,
  });
  return stub;
}

/**
 * A node by full ID, or by an ID prefix that matches exactly one node (as
 * Nomad's CLI resolves them). Throws 404 when nothing matches, 400 when the
 * prefix is ambiguous.
 */
export function resolveNode(nodes: Table<NodeRow>, idOrPrefix: string): NodeRow {
  const exact = nodes.get(idOrPrefix);
  if (exact) return exact;
  const matches: NodeRow[] = [];
  if (idOrPrefix !== "") {
    for (const n of nodes.withPrefix(idOrPrefix)) {
      matches.push(n);
      if (matches.length > 10) break;
    }
  }
  if (matches.length === 1) return matches[0]!;
  if (matches.length === 0) throw ApiError.notFound("node not found");
  throw ApiError.badRequest(
    `Prefix "${idOrPrefix}" matched multiple nodes: ${matches
      .slice(0, 10)
      .map((n) => n.ID)
      .join(", ")}${matches.length > 10 ? ", ..." : ""}`,
  );
}

/** The index of a read over a node's allocations: Nomad's max ModifyIndex, or the table's when there are none. */
export function allocsIndex(rows: readonly AllocRow[], tableIndex: number): number {
  let max = 0;
  for (const a of rows) if (a.ModifyIndex > max) max = a.ModifyIndex;
  return max > 0 ? max : tableIndex;
}

function hostOf(addr: string): string {
  const m = /^\[([^\]]*)\]:\d+$/.exec(addr) ?? /^([^:]*):\d+$/.exec(addr);
  return m ? m[1]! : "";
}
