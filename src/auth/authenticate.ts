import type { FastifyRequest } from "fastify";
import { type Actor, MAX_USER_AGENT } from "../../streams/event-schema.ts";

/**
 * Who is calling, decided once per request before any route runs. Routes ask
 * it, never the raw headers. ACL enforcement plugs in here: when ACLs are
 * bootstrapped, `authenticate` resolves the token and `allows` evaluates its
 * policies; until then every caller has full access, as in a Nomad cluster
 * without ACLs, and is recorded by its address.
 */
export interface AuthenticatedIdentity {
  readonly actor: Actor;
  /**
   * Whether this identity may use `capability` in `namespace`: one of
   * Nomad's namespace capabilities (`read-job`, …; namespace `*` = any), or
   * `block:level` for the other blocks of a policy (`node:read`,
   * `operator:write`, `agent:read`, `plugin:list`, `quota:read`), with the
   * pool, volume or namespace in `namespace` for `node_pool:<op>`,
   * `host_volume:<op>` and `variables:list`; `management`; `node:client`
   * for a client agent acting on itself.
   */
  allows(namespace: string, capability: string): boolean;
  /** Nomad's AuthenticatedIdentity.String() (`token:<accessor>`, `client:<node>`): the RPC metrics label. */
  readonly label: string;
  /**
   * Why the credential presented was refused ("ACL token not found", "ACL
   * token expired", "ACL token is invalid"): such a caller is denied every
   * route that needs one. Absent when authentication succeeded.
   */
  readonly failure?: string;
}

export interface Authenticator {
  /** At once, not a promise: it runs before every request's route (a promise and its turn each time). */
  authenticate(request: FastifyRequest): AuthenticatedIdentity;
}

/** Where an API call came from, as its actor records it. */
export interface Caller {
  readonly addr: string;
  readonly userAgent?: string;
}

/**
 * The caller of `request`: fastify's `request.ip`, which is the socket's
 * peer unless the server is configured to trust a proxy (only then does
 * X-Forwarded-For count), and its User-Agent cut to MAX_USER_AGENT.
 */
export function callerOf(request: FastifyRequest): Caller {
  const addr = request.ip || "unknown";
  const agent = request.headers["user-agent"];
  if (typeof agent !== "string" || agent === "") return { addr };
  return { addr, userAgent: bounded(agent) };
}

function bounded(agent: string): string {
  if (agent.length <= MAX_USER_AGENT) return agent;
  // Never half of a surrogate pair: the log holds valid UTF-8.
  const end = /[\uD800-\uDBFF]/.test(agent[MAX_USER_AGENT - 1]!) ? MAX_USER_AGENT - 1 : MAX_USER_AGENT;
  return agent.slice(0, end);
}

const allowAll = () => true;

/**
 * The authenticator of a cluster whose ACL system is not enabled: every
 * caller may do anything, and is recorded by its address (`remote`), the one
 * thing known of it. One small object per request.
 */
export class OpenAuthenticator implements Authenticator {
  authenticate(request: FastifyRequest): AuthenticatedIdentity {
    const caller = callerOf(request);
    return { actor: { kind: "remote", id: caller.addr, ...caller }, allows: allowAll, label: "" };
  }
}

/**
 * The secret a caller presented, as Nomad's parseToken reads it:
 * `X-Nomad-Token` (trimmed) first, else the first word after a `Bearer`
 * scheme (matched in any case) of `Authorization`; other schemes are ignored.
 */
export function presentedToken(request: FastifyRequest): string | undefined {
  const header = request.headers["x-nomad-token"];
  if (typeof header === "string" && header.trim() !== "") return header.trim();
  const auth = request.headers.authorization;
  if (typeof auth !== "string") return undefined;
  const [scheme, secret] = auth.trim().split(/\s+/, 2);
  if (scheme?.toLowerCase() !== "bearer" || !secret) return undefined;
  return secret;
}
