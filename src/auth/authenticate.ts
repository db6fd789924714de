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
  /** Whether this identity may use `capability` in `namespace`. */
  allows(namespace: string, capability: string): boolean;
}

export interface Authenticator {
  authenticate(request: FastifyRequest): Promise<AuthenticatedIdentity>;
}

const anonymous: AuthenticatedIdentity = {
  actor: { kind: "anonymous", id: "anonymous" },
  allows: () => true,
};

/** The authenticator of a cluster whose ACL system is not enabled. */
export class OpenAuthenticator implements Authenticator {
  async authenticate(_request: FastifyRequest): Promise<AuthenticatedIdentity> {
    return anonymous;
  }
}

/** The secret a caller presented: `X-Nomad-Token`, or `Authorization: Bearer`. */
export function presentedToken(request: FastifyRequest): string | undefined {
  const header = request.headers["x-nomad-token"];
  if (typeof header === "string" && header !== "") return header;
  const auth = request.headers.authorization;
  if (typeof auth === "string" && auth.startsWith("Bearer ")) return auth.slice(7).trim() || undefined;
  return undefined;
}
