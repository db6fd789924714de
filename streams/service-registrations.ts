import { type Envelope, schemas } from "./event-schema.ts";

/**
 * Nomad's ServiceRegistration (nomad/structs/service_registration.go)
 * without its indexes, which the log index gives: one instance of a service
 * with `provider = "nomad"`, as the client running its allocation reports it.
 */
export interface ServiceRegistrationSpec {
  /** The client's `_nomad-task-<alloc>-<task|group>-<service>-<port label>`; unique within a namespace. */
  readonly ID: string;
  readonly ServiceName: string;
  /** The allocation's namespace (Nomad's Allocation.ServiceProviderNamespace for this provider). */
  readonly Namespace: string;
  readonly NodeID: string;
  /** The node's datacenter, denormalized so lists filter by it without reading nodes. */
  readonly Datacenter: string;
  readonly JobID: string;
  readonly AllocID: string;
  /** The service's tags, or its canary tags while the allocation is a canary. */
  readonly Tags: readonly string[];
  readonly Address: string;
  readonly Port: number;
}

/**
 * ServiceRegistration.Upsert (Raft message 47): a client registers the
 * services of one of its allocations, or updates them. All or nothing:
 * apply refuses the record when any registration no longer belongs to a
 * live allocation of its node. A registration equal to the stored one is
 * left as it is (Nomad's ServiceRegistration.Equal: tags compared as sets).
 */
export interface ServiceRegistrationsUpserted {
  readonly Services: readonly ServiceRegistrationSpec[];
}

/**
 * Who asked for a delete: `client`, the node that runs the allocation
 * (ServiceRegistration.DeleteByID as a client sends it when a task stops);
 * `operator`, a token holder through `DELETE /v1/service/:name/:id`.
 * Registrations that go because their node went down or was removed, or
 * their allocation ended on its client or was collected, are not deleted by
 * a record of this type: the projection removes them within the record that
 * made that change (see projections/service-registrations.ts).
 */
export type ServiceDeleteReason = "client" | "operator";

export const SERVICE_DELETE_REASONS: readonly ServiceDeleteReason[] = ["client", "operator"];

/** A registration's key: Nomad's unique (Namespace, ID) index. */
export interface ServiceRegistrationRef {
  readonly Namespace: string;
  readonly ID: string;
}

/**
 * ServiceRegistration.DeleteByID (Raft message 48), for one or more IDs.
 * Apply refuses the whole record, with Nomad's "service registration not
 * found", when any of them is gone, so of two deletes racing for one
 * registration exactly one succeeds.
 */
export interface ServiceRegistrationsDeleted {
  readonly Services: readonly ServiceRegistrationRef[];
  readonly Reason: ServiceDeleteReason;
  /**
   * Set on a client's delete: the node that asked. Apply refuses to delete a
   * registration another node holds (a node only removes its own).
   */
  readonly NodeID?: string;
}

export type ServiceRegistrationEvent =
  | Envelope<"ServiceRegistrationsUpserted", ServiceRegistrationsUpserted>
  | Envelope<"ServiceRegistrationsDeleted", ServiceRegistrationsDeleted>;

export const serviceRegistrationSchemas = schemas(
  { type: "ServiceRegistrationsUpserted", version: 1 },
  { type: "ServiceRegistrationsDeleted", version: 1 },
);

/** Nomad's ipaddr.IsAny: an unspecified address is no place to reach a service. */
export function isAnyAddress(address: string): boolean {
  return address === "0.0.0.0" || address === "::" || address === "[::]";
}
