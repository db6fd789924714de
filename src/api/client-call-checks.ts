import type { FastifyRequest } from "fastify";
import type { AllocRow } from "../../projections/allocs.ts";
import { presentedToken } from "../auth/authenticate.ts";
import { versionMatches } from "../services/scheduler/constraints.ts";
import { ApiError } from "./api-error.ts";
import { NO_NODE_PATH } from "./forward-to-peers.ts";

/*
 * The checks Nomad's server makes before it passes a call on to the client
 * agent that runs an allocation (nomad/client_*_endpoint.go), and how its
 * HTTP layer turns their errors into statuses (command/agent/http.go wrap).
 * The errors are RPC errors first, text only: each route decides, as
 * Nomad's handler for it does, which of them are a 404.
 */

/** An error as Nomad's RPCs return it: text, the status left to the HTTP layer. */
export class RpcFailure extends Error {}

/** A streaming RPC's error (cstructs.RpcError): its text, and the HTTP status when the handler gave one. */
export class StreamFailure extends Error {
  constructor(
    message: string,
    readonly code: number | undefined,
  ) {
    super(message);
  }
}

const PERMISSION_DENIED = "Permission denied";
const TOKEN_NOT_FOUND = "ACL token not found";
const RPC_CODED = /^RPC Error:: (\d+),([\s\S]*)$/;

/** An agent's error code as an HTTP status: one Go's ResponseWriter would accept, else a 500. */
export function statusOf(code: number | undefined): number {
  return code !== undefined && Number.isInteger(code) && code >= 100 && code <= 599 ? code : 500;
}

/** Nomad's IsErrNoNodeConn, IsErrUnknownAllocation, IsErrNoSuchFileOrDirectory, and "Unknown node". */
export const isNoNodeConn = (m: string) => m.includes(NO_NODE_PATH);
export const isUnknownAllocation = (m: string) => m.includes("Unknown allocation");
export const isNoSuchFile = (m: string) => m.includes("no such file or directory");
export const isUnknownNode = (m: string) => m.includes("Unknown node");

/**
 * The HTTP answer to a failed client call: `notFound` is the route's own
 * list of 404 errors (an unknown node is one on every route); then an RPC-coded error carries its status; errors
 * ending in "Permission denied" or "ACL token not found" are a 403 with
 * that text; anything else a 500 with the error's text.
 */
export function httpErrorOf(err: unknown, notFound: (message: string) => boolean): ApiError {
  if (err instanceof ApiError) return err;
  const message = err instanceof Error ? err.message : String(err);
  // Nomad answers an unknown node_id 500 on some of these routes; it is the
  // caller's mistake, so chronomad answers 404 on all of them (README).
  if (notFound(message) || isUnknownNode(message)) return ApiError.notFound(message);
  const coded = RPC_CODED.exec(message);
  if (coded) return new ApiError(statusOf(Number(coded[1])), coded[2]!);
  if (message.endsWith(PERMISSION_DENIED)) return ApiError.forbidden(PERMISSION_DENIED);
  if (message.endsWith(TOKEN_NOT_FOUND)) return ApiError.forbidden(TOKEN_NOT_FOUND);
  return new ApiError(500, message);
}

/** Nomad's getAlloc for a unary call: the allocation, or the RPC error "Unknown allocation". */
export function allocOf(request: FastifyRequest, allocID: string): AllocRow {
  if (allocID === "") throw new RpcFailure("Missing allocation ID");
  const alloc = request.view.tables.allocs.get(allocID);
  if (!alloc) throw new RpcFailure(`Unknown allocation ${JSON.stringify(allocID)}`);
  return alloc;
}

/** Nomad's getNodeForRpc: the node is known and its agent speaks RPC (0.8 or later). */
export function requireNodeForRpc(request: FastifyRequest, nodeID: string): void {
  const node = request.view.tables.nodes.get(nodeID);
  if (!node) throw new RpcFailure(`Unknown node ${nodeID}`);
  const problem = rpcSupportProblem(node.Attributes["nomad.version"]);
  if (problem) throw new RpcFailure(problem);
}

/**
 * The checks a streaming call (logs, file stream, exec) makes on the
 * server, with the status each error carries: an unknown allocation is a
 * 404; a missing capability has no status (the HTTP layer's 500); an
 * unknown node, or one too old for RPC, is a 400.
 */
export function streamTarget(
  request: FastifyRequest,
  allocID: string,
  allowed: (namespace: string) => boolean,
): AllocRow {
  if (allocID === "") throw new StreamFailure("Missing allocation ID", 400);
  const alloc = request.view.tables.allocs.get(allocID);
  if (!alloc) throw new StreamFailure(`Unknown allocation ${JSON.stringify(allocID)}`, 404);
  if (!allowed(alloc.Namespace)) throw new StreamFailure(PERMISSION_DENIED, undefined);
  streamNode(request, alloc.NodeID);
  return alloc;
}

/** A streaming call's checks on the node it goes to (unknown, or too old for RPC, is a 400); its ID once they pass. */
export function streamNode(request: FastifyRequest, nodeID: string): string {
  const node = request.view.tables.nodes.get(nodeID);
  if (!node) throw new StreamFailure(`Unknown node ${JSON.stringify(nodeID)}`, 400);
  const problem = rpcSupportProblem(node.Attributes["nomad.version"]);
  if (problem) throw new StreamFailure(problem, 400);
  return nodeID;
}

/** Nomad's nodeSupportsRpc: the error for a node whose agent cannot take server → client calls, if any. */
export function rpcSupportProblem(version: string | undefined): string | undefined {
  if (version === undefined || !versionMatches(version, ">= 0", false)) {
    return "Unable to determine Nomad version";
  }
  if (!versionMatches(version, ">= 0.8.0-rc1", false))
    return "Node does not support RPC; requires 0.8 or later";
  return undefined;
}

/**
 * The QueryOptions a call carries to the client agent, as Nomad's HTTP
 * layer fills them (s.parse) and its server marks them stale: the client
 * resolves the caller's token itself (AuthToken) before it acts.
 */
export function queryOptions(
  request: FastifyRequest,
  token = presentedToken(request),
): Record<string, unknown> {
  const q = request.query as Record<string, unknown> | undefined;
  const namespace = typeof q?.namespace === "string" && q.namespace !== "" ? q.namespace : "default";
  return { Region: "global", Namespace: namespace, AuthToken: token ?? "", AllowStale: true };
}
