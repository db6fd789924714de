import { deleteRefusal, registrationRefusal } from "../../../projections/service-registrations.ts";
import type {
  ServiceRegistrationSpec,
  ServiceRegistrationsDeleted,
  ServiceRegistrationsUpserted,
} from "../../../streams/service-registrations.ts";
import { ApiError } from "../api-error.ts";
import { commit } from "../commit.ts";
import { authenticateNodeBySecret, presentedNodeSecret } from "./node-auth.ts";
import type { RpcHandler } from "./rpc-context.ts";

/*
 * ServiceRegistration.Upsert and ServiceRegistration.DeleteByID, as a Nomad
 * client calls them for services with `provider = "nomad"`
 * (client/serviceregistration/nsd). Nomad only checks that the secret is
 * some node's; here a node writes and deletes the registrations of its own
 * allocations only, and the record says which node asked, so apply can
 * check it again.
 */

const str = { type: "string" } as const;
const int = { type: "integer" } as const;

const writeRequest = {
  Region: str,
  Namespace: str,
  AuthToken: str,
  IdempotencyToken: str,
  Forwarded: { type: "boolean" },
} as const;

/** Nomad's ServiceRegistration as a client sends it (its indexes are the server's, and ignored). */
const serviceRegistration = {
  type: "object",
  additionalProperties: false,
  properties: {
    ID: str,
    ServiceName: str,
    Namespace: str,
    NodeID: str,
    Datacenter: str,
    JobID: str,
    AllocID: str,
    Tags: { type: ["array", "null"], items: str },
    Address: str,
    Port: int,
    CreateIndex: int,
    ModifyIndex: int,
  },
} as const;

/** ServiceRegistrationUpsertRequest. */
export const serviceUpsertBody = {
  type: "object",
  additionalProperties: false,
  properties: { Services: { type: ["array", "null"], items: serviceRegistration }, ...writeRequest },
} as const;

/** ServiceRegistrationDeleteByIDRequest: the namespace is the WriteRequest's. */
export const serviceDeleteByIdBody = {
  type: "object",
  additionalProperties: false,
  properties: { ID: str, ...writeRequest },
} as const;

interface ServiceRegistrationBody {
  ID?: string;
  ServiceName?: string;
  Namespace?: string;
  NodeID?: string;
  Datacenter?: string;
  JobID?: string;
  AllocID?: string;
  Tags?: string[] | null;
  Address?: string;
  Port?: number;
}

interface UpsertBody {
  Services?: ServiceRegistrationBody[] | null;
  AuthToken?: string;
}

interface DeleteByIdBody {
  ID?: string;
  Namespace?: string;
  AuthToken?: string;
}

/** A registration as the log keeps it: Go's zero values for what the client left out. */
function specFrom(b: ServiceRegistrationBody): ServiceRegistrationSpec {
  return {
    ID: b.ID ?? "",
    ServiceName: b.ServiceName ?? "",
    Namespace: b.Namespace ?? "",
    NodeID: b.NodeID ?? "",
    Datacenter: b.Datacenter ?? "",
    JobID: b.JobID ?? "",
    AllocID: b.AllocID ?? "",
    // Go sends a nil slice as null; the API shows an empty list either way.
    Tags: b.Tags ?? [],
    Address: b.Address ?? "",
    Port: b.Port ?? 0,
  };
}

/** ServiceRegistration.Upsert: every registration must be of a live allocation of the calling node. */
export const upsertServiceRegistrations: RpcHandler = async ({ api }, request) => {
  const body = (request.body ?? {}) as UpsertBody;
  const { node, identity } = authenticateNodeBySecret(api, presentedNodeSecret(request, body.AuthToken));
  const services = (body.Services ?? []).map(specFrom);
  for (const spec of services) {
    if (spec.NodeID !== node.ID) {
      throw ApiError.forbidden(
        `service registration ${JSON.stringify(spec.ID)} names node ${spec.NodeID || '""'}, not the caller`,
      );
    }
    const refusal = registrationRefusal(spec, api.tables);
    if (refusal) throw new ApiError(refusal.code, refusal.reason);
  }
  // Nothing to write: the answer is the table as it stands.
  if (services.length === 0) return { Index: Math.max(1, api.tables.serviceRegistrations.index) };
  const data: ServiceRegistrationsUpserted = { Services: services };
  const index = await commit(api, identity, [{ type: "ServiceRegistrationsUpserted", v: 1, data }]);
  return { Index: index };
};

/**
 * ServiceRegistration.DeleteByID: a client removes one of its registrations
 * when the task stops. An unknown ID is Nomad's "service registration not
 * found", which the client takes as already done.
 */
export const deleteServiceRegistration: RpcHandler = async ({ api }, request) => {
  const body = (request.body ?? {}) as DeleteByIdBody;
  const { node, identity } = authenticateNodeBySecret(api, presentedNodeSecret(request, body.AuthToken));
  if (!body.ID) throw ApiError.badRequest("missing service registration ID");
  const data: ServiceRegistrationsDeleted = {
    Services: [{ Namespace: body.Namespace || "default", ID: body.ID }],
    Reason: "client",
    NodeID: node.ID,
  };
  const refusal = deleteRefusal(data, api.tables.serviceRegistrations);
  if (refusal) throw new ApiError(refusal.code, refusal.reason);
  const index = await commit(api, identity, [{ type: "ServiceRegistrationsDeleted", v: 1, data }]);
  return { Index: index };
};
