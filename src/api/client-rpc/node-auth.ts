import type { FastifyRequest } from "fastify";
import type { NodeRow } from "../../../projections/nodes.ts";
import { type AuthenticatedIdentity, presentedToken } from "../../auth/authenticate.ts";
import { nodeIdentity } from "../../auth/node-identity.ts";
import { nodeSecretProven, nodeSecretRowOf } from "../../auth/proven-node-secrets.ts";
import { ApiError } from "../api-error.ts";
import type { ApiContext } from "../context.ts";

export interface AuthenticatedNode {
  readonly node: NodeRow;
  readonly identity: AuthenticatedIdentity;
}

/**
 * The node secret a client presented: the X-Nomad-Token header (or a bearer
 * token), else the field of the request body where Nomad's clients put it.
 */
export function presentedNodeSecret(
  request: FastifyRequest,
  ...bodyFields: (string | undefined)[]
): string | undefined {
  return presentedToken(request) ?? bodyFields.find((s) => s !== undefined && s !== "");
}

/**
 * Authenticates one call as node `nodeID` from the secret it carries, and
 * nothing else: no trust is kept from an earlier call or connection (Nomad
 * CVE-2023-1782; a secret proven before is remembered only as a cheaper
 * check of the same stored hash, see src/auth/proven-node-secrets.ts). Unknown node:
 * 404; missing or wrong secret: 403.
 */
export function authenticateNode(
  ctx: ApiContext,
  nodeID: string,
  secret: string | undefined,
): AuthenticatedNode {
  const node = ctx.tables.nodes.get(nodeID);
  if (!node) throw ApiError.notFound("node not found");
  if (secret === undefined) throw ApiError.forbidden("missing node secret ID");
  const stored = ctx.tables.nodeSecrets.get(nodeID);
  if (!stored || !nodeSecretProven(secret, stored)) {
    throw ApiError.forbidden("node secret ID does not match");
  }
  return { node, identity: nodeIdentity(node) };
}

/** Authenticates a call that names no node (Alloc.GetAllocs) by its secret alone. */
export function authenticateNodeBySecret(ctx: ApiContext, secret: string | undefined): AuthenticatedNode {
  if (secret === undefined) throw ApiError.forbidden("missing node secret ID");
  const stored = nodeSecretRowOf(ctx.tables.nodeSecrets, secret);
  const node = stored && ctx.tables.nodes.get(stored.ID);
  if (!node) throw ApiError.forbidden();
  return { node, identity: nodeIdentity(node) };
}
