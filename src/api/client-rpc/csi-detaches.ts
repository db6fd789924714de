import { ackRefusal, pendingFor } from "../../../projections/csi-detach-requests.ts";
import type { CSIDetachAcknowledged } from "../../../streams/csi-detach.ts";
import { ApiError } from "../api-error.ts";
import { MAX_WAIT_MS, runBlocking } from "../blocking-query.ts";
import { commit } from "../commit.ts";
import { authenticateNode, presentedNodeSecret } from "./node-auth.ts";
import { blockingParams, queryMeta, type RpcHandler } from "./rpc-context.ts";
import { type QueryBody, queryOptions, writeRequest } from "./schemas.ts";

/*
 * The client's side of the server → client detach calls (see
 * streams/csi-detach.ts): ClientCSI.PendingDetaches, a blocking read of the
 * calls the node is to make, and ClientCSI.AckDetach, its answer to one.
 * chronomad's own RPCs (Nomad's server calls its clients instead); both are
 * authenticated by the node's secret, and a node sees and answers only the
 * calls addressed to it.
 */

const str = { type: "string" } as const;

export const pendingDetachesBody = {
  type: "object",
  additionalProperties: false,
  properties: { NodeID: str, SecretID: str, ...queryOptions },
} as const;

export const ackDetachBody = {
  type: "object",
  additionalProperties: false,
  properties: {
    NodeID: str,
    SecretID: str,
    VolumeID: str,
    RequestID: str,
    Error: str,
    // Its Namespace is the volume's.
    ...writeRequest,
  },
} as const;

interface PendingDetachesBody extends QueryBody {
  NodeID?: string;
  SecretID?: string;
}

interface AckDetachBody {
  NodeID?: string;
  SecretID?: string;
  Namespace?: string;
  VolumeID?: string;
  RequestID?: string;
  Error?: string;
  AuthToken?: string;
}

/**
 * ClientCSI.PendingDetaches: the detach calls waiting for this node, oldest
 * first, blocking until the index passes MinQueryIndex. Woken only by
 * changes of rows that hold (or held) a call for this node.
 */
export const pendingDetaches: RpcHandler = async ({ api }, request) => {
  const body = (request.body ?? {}) as PendingDetachesBody;
  if (!body.NodeID) throw ApiError.badRequest("missing node ID");
  authenticateNode(api, body.NodeID, presentedNodeSecret(request, body.SecretID, body.AuthToken));
  const table = api.tables.csiDetachRequests;
  const nodeID = body.NodeID;
  const watch = [{ table: "csi_detach_requests", index: "pending_node", value: nodeID }];
  const result = await runBlocking(api, request, blockingParams(body, MAX_WAIT_MS), watch, () => {
    const requests = pendingFor(table, nodeID);
    let max = 0;
    for (const row of table.by("pending_node", nodeID)) max = Math.max(max, row.ModifyIndex);
    // None left: the change that answered the last one moved the table's index.
    return { index: Math.max(1, requests.length === 0 ? table.index : max), body: requests };
  });
  return { Requests: result.body, ...queryMeta(api, result.index) };
};

/** ClientCSI.AckDetach: the node's answer to one call, "" for success or its plugin's error. */
export const ackDetach: RpcHandler = async ({ api }, request) => {
  const body = (request.body ?? {}) as AckDetachBody;
  if (!body.NodeID) throw ApiError.badRequest("missing node ID");
  const { identity } = authenticateNode(
    api,
    body.NodeID,
    presentedNodeSecret(request, body.SecretID, body.AuthToken),
  );
  for (const f of ["VolumeID", "RequestID"] as const) {
    if (!body[f]) throw ApiError.badRequest(`missing ${f}`);
  }
  const data: CSIDetachAcknowledged = {
    Namespace: body.Namespace || "default",
    VolumeID: body.VolumeID!,
    RequestID: body.RequestID!,
    NodeID: body.NodeID,
    Error: body.Error ?? "",
  };
  const refusal = ackRefusal(api.tables.csiDetachRequests, data);
  if (refusal) throw new ApiError(refusal.code, refusal.reason);
  const index = await commit(api, identity, [{ type: "CSIDetachAcknowledged", v: 1, data }]);
  return { Index: index };
};
