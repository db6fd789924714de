import type { FastifyInstance } from "fastify";
import { BridgedError, bridge } from "./http-bridge.ts";

/**
 * What a Nomad client agent with ACLs enabled asks the servers to check the
 * tokens presented to its own HTTP API (client/acl.go): who a token is, and
 * the policies and roles it names. Each is the HTTP route's answer, so the
 * same permission rules apply: a token may read its own policies and roles.
 */
export type AclRpc = (
  app: FastifyInstance,
  body: Record<string, unknown>,
  remoteAddress: string,
) => Promise<unknown>;

const meta = (index: number) => ({
  Index: Math.max(1, index),
  LastContact: 0,
  KnownLeader: true,
  NextToken: "",
});
const str = (v: unknown) => (typeof v === "string" ? v : "");
const strings = (v: unknown) => (Array.isArray(v) ? v.filter((s): s is string => typeof s === "string") : []);

export const ACL_RPCS: Readonly<Record<string, AclRpc>> = {
  /** Nomad 1.6 clients: the identity behind a token (ACLWhoAmIResponse). */
  "ACL.WhoAmI": async (app, body, remoteAddress) => {
    const reply = await bridge(app, {
      method: "GET",
      url: "/v1/acl/whoami",
      token: str(body.AuthToken),
      remoteAddress,
    });
    const identity = (reply.body as { Identity?: Record<string, unknown> } | null)?.Identity ?? null;
    // RemoteIP is a net.IP (bytes) in Go; the client does not read it.
    if (identity) delete identity.RemoteIP;
    return { Identity: identity, ...meta(reply.index) };
  },
  /** Nomad 1.5 clients: a token by its secret (ResolveACLTokenResponse); an unknown secret is a nil token. */
  "ACL.ResolveToken": async (app, body, remoteAddress) => {
    try {
      const reply = await bridge(app, {
        method: "GET",
        url: "/v1/acl/token/self",
        token: str(body.SecretID),
        remoteAddress,
      });
      return { Token: reply.body, ...meta(reply.index) };
    } catch (err) {
      if (err instanceof BridgedError && (err.status === 403 || err.status === 404))
        return { Token: null, ...meta(0) };
      throw err;
    }
  },
  /** The named policies (ACLPolicySetResponse), each as GET /v1/acl/policy/:name answers it to this token. */
  "ACL.GetPolicies": async (app, body, remoteAddress) => {
    const { found, index } = await readEach(app, body, remoteAddress, strings(body.Names), "/v1/acl/policy/");
    return { Policies: found, ...meta(index) };
  },
  /** The roles by ID (ACLRolesByIDResponse), each as GET /v1/acl/role/:id answers it to this token. */
  "ACL.GetRolesByID": async (app, body, remoteAddress) => {
    const { found, index } = await readEach(
      app,
      body,
      remoteAddress,
      strings(body.ACLRoleIDs),
      "/v1/acl/role/",
    );
    return { ACLRoles: found, ...meta(index) };
  },
};

/** GET `<route><key>` for each key with the call's token: the objects found by key (404s left out), and the highest index. */
async function readEach(
  app: FastifyInstance,
  body: Record<string, unknown>,
  remoteAddress: string,
  keys: readonly string[],
  route: string,
): Promise<{ found: Record<string, unknown>; index: number }> {
  const found: Record<string, unknown> = {};
  let index = 0;
  for (const key of keys) {
    const reply = await bridge(app, {
      method: "GET",
      url: route + encodeURIComponent(key),
      token: str(body.AuthToken),
      remoteAddress,
    }).catch((err: unknown) => {
      if (err instanceof BridgedError && err.status === 404) return undefined;
      throw err;
    });
    if (!reply) continue;
    found[key] = reply.body;
    index = Math.max(index, reply.index);
  }
  return { found, index };
}
