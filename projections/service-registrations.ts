import type { ApplyContext, Change, Projection, Refusal } from "../src/store/projection.ts";
import { type IndexedRow, Table } from "../src/store/table.ts";
import { isClientTerminal } from "../streams/allocs.ts";
import {
  isAnyAddress,
  SERVICE_DELETE_REASONS,
  type ServiceRegistrationEvent,
  type ServiceRegistrationSpec,
  type ServiceRegistrationsDeleted,
  type ServiceRegistrationsUpserted,
} from "../streams/service-registrations.ts";
import type { AllocRow } from "./allocs.ts";
import { jobKey } from "./evals.ts";
import type { NodeRow } from "./nodes.ts";

/** Nomad's ServiceRegistration as stored and shown. */
export type ServiceRegistrationRow = ServiceRegistrationSpec & IndexedRow;

export type ServiceRegistrationTable = Table<ServiceRegistrationRow>;

/** The primary key: Nomad's unique (Namespace, ID) index, in the same order. */
export const serviceKey = (namespace: string, id: string) => `${namespace}\u0000${id}`;

/** Nomad's service_name index: (Namespace, ServiceName). */
export const serviceNameKey = (namespace: string, name: string) => `${namespace}\u0000${name}`;

/** Nomad's error for a delete of a registration it does not hold; clients match these words. */
export const SERVICE_NOT_FOUND = "service registration not found";

const MAX_PORT = 65_535;

export interface ServiceRegistrationDeps {
  readonly nodes: Table<NodeRow>;
  readonly allocs: Table<AllocRow>;
}

/**
 * Why `spec` cannot be registered as the tables stand, or undefined. The
 * client RPC handler asks first, for a clear error; apply asks again, since
 * the allocation may have ended or its node gone down in between (Nomad
 * checks neither and keeps what a late upsert writes until someone deletes
 * it; here a registration never outlives what it describes).
 */
export function registrationRefusal(
  spec: ServiceRegistrationSpec,
  { nodes, allocs }: ServiceRegistrationDeps,
): Refusal | undefined {
  const bad = (reason: string): Refusal => ({ code: 400, reason });
  const which = `service registration ${JSON.stringify(spec.ID)}`;
  for (const field of ["ID", "ServiceName", "Namespace", "NodeID", "AllocID", "JobID"] as const) {
    if (typeof spec[field] !== "string" || spec[field] === "") return bad(`${which} requires a ${field}`);
  }
  if (!Array.isArray(spec.Tags) || spec.Tags.some((t) => typeof t !== "string"))
    return bad(`${which}: Tags must be a list of strings`);
  if (typeof spec.Address !== "string") return bad(`${which}: Address must be a string`);
  // Nomad's ServiceRegistration.Validate, with its words.
  if (isAnyAddress(spec.Address)) return bad("invalid service registration address");
  if (!Number.isSafeInteger(spec.Port) || spec.Port < 0 || spec.Port > MAX_PORT)
    return bad(`${which}: Port must be an integer from 0 to ${MAX_PORT}`);
  const node = nodes.get(spec.NodeID);
  if (!node) return { code: 404, reason: `node ${spec.NodeID} not found` };
  // Its registrations were removed when it went down; one written now would outlive it.
  if (node.Status === "down") {
    return { code: 409, reason: `node ${spec.NodeID} is down: it cannot register services` };
  }
  if (spec.Datacenter !== node.Datacenter) {
    return bad(`${which}: datacenter ${JSON.stringify(spec.Datacenter)} is not node ${spec.NodeID}'s`);
  }
  const alloc = allocs.get(spec.AllocID);
  if (!alloc) return { code: 404, reason: `allocation ${spec.AllocID} not found` };
  if (alloc.NodeID !== spec.NodeID) {
    return { code: 403, reason: `allocation ${spec.AllocID} does not run on node ${spec.NodeID}` };
  }
  if (alloc.Namespace !== spec.Namespace || alloc.JobID !== spec.JobID) {
    return bad(`${which} is not in allocation ${spec.AllocID}'s namespace and job`);
  }
  if (isClientTerminal(alloc)) {
    return {
      code: 409,
      reason: `allocation ${spec.AllocID} is ${alloc.ClientStatus}: its services can no longer be registered`,
    };
  }
  return undefined;
}

/**
 * Why `data` cannot delete as the table stands, or undefined: the handler's
 * check and apply's again (another delete may have come first).
 */
export function deleteRefusal(
  data: ServiceRegistrationsDeleted,
  registrations: ServiceRegistrationTable,
): Refusal | undefined {
  if (!SERVICE_DELETE_REASONS.includes(data.Reason)) {
    return { code: 400, reason: `unknown delete reason ${JSON.stringify(data.Reason)}` };
  }
  for (const ref of data.Services) {
    const row = registrations.get(serviceKey(ref.Namespace, ref.ID));
    if (!row) return { code: 404, reason: SERVICE_NOT_FOUND };
    if (data.NodeID !== undefined && row.NodeID !== data.NodeID) {
      return {
        code: 403,
        reason: `service registration ${JSON.stringify(ref.ID)} belongs to node ${row.NodeID}, not ${data.NodeID}`,
      };
    }
  }
  return undefined;
}

/**
 * Nomad's service_registrations table (nomad/state/state_store_service_registration.go).
 *
 * Written by ServiceRegistrationsUpserted and ServiceRegistrationsDeleted.
 * Registrations whose node went down or was removed, or whose allocation
 * ended on its client (complete, failed, lost) or was collected, are removed
 * here too, by observing the nodes and allocs tables: within the very record
 * that made that change, at its index. This is where Nomad 1.8 moved them
 * (#20590: the same transaction as the node or allocation update) after its
 * separate after-the-fact write (1.6's DeleteByNodeID from Node.UpdateStatus)
 * proved able to leave stale registrations behind. An explicit delete
 * appended by the leader's services instead would leave a window in which a
 * down node's services are still served, be lost if the leader dies between
 * the two appends, and have to be decided against tables that already moved
 * on; deriving it from the record keeps replay exact with nothing to decide.
 * The history and change feed still name the record that caused each delete.
 *
 * A purged job deletes nothing itself, as in Nomad: its allocations stop,
 * and their registrations go when the client reports them stopped.
 */
export function serviceRegistrationsProjection(deps: ServiceRegistrationDeps) {
  const registrations = new Table<ServiceRegistrationRow>({
    name: "service_registrations",
    key: (r) => serviceKey(r.Namespace, r.ID),
    indexes: {
      service_name: (r) => serviceNameKey(r.Namespace, r.ServiceName),
      job: (r) => jobKey(r.Namespace, r.JobID),
      node: (r) => r.NodeID,
      alloc: (r) => r.AllocID,
    },
  });

  const upsert = (ctx: ApplyContext, data: ServiceRegistrationsUpserted) => {
    if (!Array.isArray(data.Services)) return ctx.reject(400, "Services must be a list");
    for (const spec of data.Services) {
      const refusal = registrationRefusal(spec, deps);
      if (refusal) return ctx.reject(refusal.code, refusal.reason);
    }
    for (const spec of data.Services) {
      const existing = registrations.get(serviceKey(spec.Namespace, spec.ID));
      // Nomad's upsert skips a registration equal to the stored one.
      if (existing && sameRegistration(existing, spec)) continue;
      ctx.put(registrations, rowOf(spec, existing?.CreateIndex ?? ctx.index, ctx.index));
    }
  };

  const remove = (ctx: ApplyContext, data: ServiceRegistrationsDeleted) => {
    if (!Array.isArray(data.Services)) return ctx.reject(400, "Services must be a list");
    const refusal = deleteRefusal(data, registrations);
    if (refusal) return ctx.reject(refusal.code, refusal.reason);
    for (const ref of data.Services) ctx.delete(registrations, serviceKey(ref.Namespace, ref.ID));
  };

  const removeAll = (ctx: ApplyContext, index: "node" | "alloc", value: string) => {
    // Most node and allocation changes concern no registration: a count costs nothing.
    if (registrations.countBy(index, value) === 0) return;
    for (const r of registrations.by(index, value)) ctx.delete(registrations, serviceKey(r.Namespace, r.ID));
  };

  const projection: Projection = {
    name: "service_registrations",
    version: 1,
    tables: [registrations],
    reads: ["nodes", "allocs"],
    handles: new Set(["ServiceRegistrationsUpserted", "ServiceRegistrationsDeleted"]),
    evolve(ctx, event) {
      const e = event as ServiceRegistrationEvent;
      if (e.type === "ServiceRegistrationsUpserted") return upsert(ctx, e.data);
      return remove(ctx, e.data);
    },
    observes: new Set(["nodes", "allocs"]),
    observe(ctx, change: Change) {
      if (change.table === "nodes") {
        const node = change.after as NodeRow | undefined;
        if (!node || node.Status === "down") removeAll(ctx, "node", change.key);
        return;
      }
      const alloc = change.after as AllocRow | undefined;
      if (!alloc || isClientTerminal(alloc)) removeAll(ctx, "alloc", change.key);
    },
  };
  return { projection, registrations };
}

/** The stored row of `spec`: its fields only, whatever else a record written elsewhere carries. */
function rowOf(
  spec: ServiceRegistrationSpec,
  CreateIndex: number,
  ModifyIndex: number,
): ServiceRegistrationRow {
  return {
    CreateIndex,
    ModifyIndex,
    ID: spec.ID,
    ServiceName: spec.ServiceName,
    Namespace: spec.Namespace,
    NodeID: spec.NodeID,
    Datacenter: spec.Datacenter,
    JobID: spec.JobID,
    AllocID: spec.AllocID,
    Tags: spec.Tags,
    Address: spec.Address,
    Port: spec.Port,
  };
}

/** Nomad's ServiceRegistration.Equal: every field, the tags as sets. */
function sameRegistration(a: ServiceRegistrationSpec, b: ServiceRegistrationSpec): boolean {
  return (
    a.ID === b.ID &&
    a.ServiceName === b.ServiceName &&
    a.NodeID === b.NodeID &&
    a.Datacenter === b.Datacenter &&
    a.JobID === b.JobID &&
    a.AllocID === b.AllocID &&
    a.Namespace === b.Namespace &&
    a.Address === b.Address &&
    a.Port === b.Port &&
    sameTagSet(a.Tags, b.Tags)
  );
}

/** Nomad's helper.SliceSetEq: the same length, and every tag of one in the other. */
function sameTagSet(a: readonly string[], b: readonly string[]): boolean {
  if (a.length !== b.length) return false;
  const set = new Set(b);
  return a.every((t) => set.has(t));
}
