import type { FastifyRequest } from "fastify";
import type { Actor } from "../../streams/event-schema.ts";

/**
 * Who is calling, decided once per request before any route runs. Routes ask
 * it, never the raw headers. ACL enforcement plugs in here: when ACLs are
 * bootstrapped, `authenticate` resolves the token and `allows` evaluates its
 * policies; until then every caller is anonymous with full access, as in a
 * Nomad cluster without ACLs.
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
  authenticate(request: FastifyRequest): Promise<AuthenticatedIdentity>;
}

const anonymous: AuthenticatedIdentity = {
  actor: { kind: "anonymous", id: "anonymous" },
  allows: () => true,
  label: "",
};

/** The authenticator of a cluster whose ACL system is not enabled. */
export class OpenAuthenticator implements Authenticator {
  async authenticate(_request: FastifyRequest): Promise<AuthenticatedIdentity> {
    return anonymous;
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
