import type { FastifyRequest } from "fastify";
import { ApiError } from "../api/api-error.ts";
import { TOKEN_NOT_FOUND } from "../auth/acl-authenticator.ts";
import type { AuthenticatedIdentity } from "../auth/authenticate.ts";
import type { RouteRule } from "./route-rule.ts";

/** Nomad's answer to every ACL route while ACLs are off. */
export const ACL_DISABLED = "ACL support disabled";

/** Nomad's default namespace for a request that names none. */
const DEFAULT_NAMESPACE = "default";

function requestNamespace(request: FastifyRequest): string {
  const ns = (request.query as Record<string, unknown> | undefined)?.namespace;
  return typeof ns === "string" && ns !== "" ? ns : DEFAULT_NAMESPACE;
}

/** Whether `identity` satisfies `rule` for this request (the route-level check; handlers make the object-level ones). */
export function satisfies(
  rule: RouteRule,
  identity: AuthenticatedIdentity,
  request: FastifyRequest,
): boolean {
  switch (rule.kind) {
    case "public":
    case "client":
      // Client RPCs authenticate the node by the secret they carry, in their handler (src/api/client-rpc/node-auth.ts).
      return true;
    case "any-token":
      return identity.failure === undefined;
    case "management":
      return identity.allows("*", "management");
    case "namespace": {
      const ns = requestNamespace(request);
      return rule.capabilities.some((c) => identity.allows(ns, c));
    }
    case "agent":
    case "node":
    case "operator":
      return identity.allows("", `${rule.kind}:${rule.level}`);
    case "plugin":
      return identity.allows("", `plugin:${rule.level}`);
    case "node-pool": {
      // A list filters its rows by pool in the handler; a named pool is checked here.
      const name = (request.params as Record<string, unknown> | undefined)?.name;
      return typeof name !== "string" || identity.allows(name, `node_pool:${rule.level}`);
    }
    case "handler":
      return rule.anyOf.some((r) => satisfies(r, identity, request));
  }
}

/**
 * The route-level ACL check, right after authentication and before the
 * route's own code: a refused credential or a missing capability is Nomad's
 * 403, with its texts ("ACL token not found" where Nomad's RPC returns the
 * authentication error itself, "Permission denied" everywhere else).
 */
export function enforceRouteRule(
  rule: RouteRule,
  identity: AuthenticatedIdentity,
  request: FastifyRequest,
): void {
  if (rule.kind === "public" || rule.kind === "client") return;
  if (identity.failure !== undefined) {
    throw ApiError.forbidden(
      rule.kind === "any-token" && identity.failure === TOKEN_NOT_FOUND ? TOKEN_NOT_FOUND : undefined,
    );
  }
  if (!satisfies(rule, identity, request)) throw ApiError.forbidden();
}
