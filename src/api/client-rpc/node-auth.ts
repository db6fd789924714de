import { timingSafeEqual } from "node:crypto";
import type { FastifyRequest } from "fastify";
import type { NodeRow } from "../../../projections/nodes.ts";
import { type AuthenticatedIdentity, presentedToken } from "../../auth/authenticate.ts";
import { hashNodeSecret, nodeSecretMatches } from "../../nodes/node-secret.ts";
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
 * CVE-2023-1782). Unknown node: 404; missing or wrong secret: 403.
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
  if (!stored || !nodeSecretMatches(secret, stored.SecretIDHash)) {
    throw ApiError.forbidden("node secret ID does not match");
  }
  return { node, identity: nodeIdentity(node) };
}

/** Authenticates a call that names no node (Alloc.GetAllocs) by its secret alone. */
export function authenticateNodeBySecret(ctx: ApiContext, secret: string | undefined): AuthenticatedNode {
  if (secret === undefined) throw ApiError.forbidden("missing node secret ID");
  // One hash per call: the row found by it holds that very hash (compared
  // again in constant time all the same), so hashing the secret a second time
  // to check it would prove nothing more.
  const presented = hashNodeSecret(secret);
  const [stored] = ctx.tables.nodeSecrets.by("hash", presented);
  const node = stored && ctx.tables.nodes.get(stored.ID);
  if (!stored || !node || !sameHash(presented, stored.SecretIDHash)) throw ApiError.forbidden();
  return { node, identity: nodeIdentity(node) };
}

/** A client node: it may act on itself and read allocations (it watches previous allocations elsewhere). */
export function nodeIdentity(node: Pick<NodeRow, "ID" | "Name">): AuthenticatedIdentity {
  return {
    actor: { kind: "node", id: node.ID, name: node.Name },
    allows: (_namespace, capability) => capability === "node:client" || capability === "read-job",
    label: `client:${node.ID}`,
  };
}

function sameHash(a: string, b: string): boolean {
  const x = Buffer.from(a, "hex");
  const y = Buffer.from(b, "hex");
  return x.length === y.length && timingSafeEqual(x, y);
}
