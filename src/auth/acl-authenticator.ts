import type { FastifyRequest } from "fastify";
import type { ACLPolicyRow, ACLRoleRow, ACLTokenRow } from "../../projections/acl.ts";
import type { AllocRow } from "../../projections/allocs.ts";
import type { NodeRow, NodeSecretRow } from "../../projections/nodes.ts";
import type { RootKeyTable } from "../../projections/root-keys.ts";
import { AclCache } from "../acl/policy/acl-cache.ts";
import type { Acl, AclClaim } from "../acl/policy/compile-acl.ts";
import { tokenExpired } from "../acl/token-view.ts";
import { IdentityVerifier } from "../identity/identity-verifier.ts";
import { IdentityError, looksLikeJwt, type PresentedClaims } from "../identity/jwt.ts";
import { aclClaimOf, policiesForWorkload } from "../identity/workload-identity.ts";
import type { Table } from "../store/table.ts";
import type { Clock } from "../util/clock.ts";
import { hashSecret } from "../util/secret-hash.ts";
import {
  type AuthenticatedIdentity,
  type Authenticator,
  type Caller,
  callerOf,
  presentedToken,
} from "./authenticate.ts";
import { constantTimeEqual } from "./constant-time.ts";
import { nodeIdentity } from "./node-identity.ts";
import { nodeSecretRowByHash, rememberedNodeSecretRow } from "./proven-node-secrets.ts";

export interface AclTables {
  readonly aclTokens: Table<ACLTokenRow>;
  readonly aclPolicies: Table<ACLPolicyRow>;
  readonly aclRoles: Table<ACLRoleRow>;
  readonly nodes: Table<NodeRow>;
  readonly nodeSecrets: Table<NodeSecretRow>;
  /**
   * What workload identities are checked against (the public signing keys,
   * the allocations). A server always has them; without them (a benchmark
   * of token resolution alone) a JWT is refused as not a token.
   */
  readonly allocs?: Table<AllocRow>;
  readonly rootKeys?: RootKeyTable;
}

/** An identity that holds an ACL token (the anonymous one included): what handlers of `/v1/acl/*` need to know. */
export interface TokenIdentity extends AuthenticatedIdentity {
  readonly token: ACLTokenRow | "anonymous";
  /** The secret the caller presented ("" for anonymous): Nomad shows it back to its owner. */
  readonly secret: string;
  readonly acl: Acl;
}

export function isTokenIdentity(identity: AuthenticatedIdentity): identity is TokenIdentity {
  return "token" in identity;
}

/** A task calling with its workload identity (Nomad's AuthenticatedIdentity with Claims). */
export interface WorkloadIdentity extends AuthenticatedIdentity {
  /** The JWT's claims, with Nomad's JSON names (ACL.WhoAmI shows them). */
  readonly claims: PresentedClaims;
  /** The policies attached to its job, group or task, compiled (none: an ACL that allows nothing). */
  readonly acl: Acl;
  /**
   * Nomad's ACLClaim: what its implicit variable paths are made of
   * (src/variables/variable-access.ts passes it for reads and lists).
   */
  readonly variableClaim: AclClaim;
}

export function isWorkloadIdentity(identity: AuthenticatedIdentity): identity is WorkloadIdentity {
  return "claims" in identity;
}

const UUID = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;

/** Nomad's error texts (nomad/structs/errors.go). */
export const TOKEN_NOT_FOUND = "ACL token not found";
export const TOKEN_EXPIRED = "ACL token expired";
export const TOKEN_INVALID = "ACL token is invalid";

/**
 * Nomad's Server.Authenticate with ACLs enabled, for every request, before
 * anything is forwarded: the credential alone decides, never the connection
 * (CVE-2023-1782).
 * - no secret: the anonymous token, governed by the policy named `anonymous`;
 * - the SecretID of a live token (looked up by its hash, compared in
 *   constant time): that token, its policies and its roles' policies merged;
 * - an expired token: refused "ACL token expired";
 * - a node's SecretID: that client node, allowed only what a client does
 *   (a token with the same secret wins; a node secret proven before is
 *   checked by a constant-time compare, src/auth/proven-node-secrets.ts);
 * - a JWT: a workload identity (Nomad's VerifyClaim), governed by the
 *   policies attached to its job; refused with Nomad's reason ("failed to
 *   verify token: …", "allocation is terminal") when it does not check out;
 * - anything else: refused ("ACL token not found", or "ACL token is
 *   invalid" for a secret that is neither a UUID nor a JWT).
 * A refused caller gets an identity that allows nothing and carries the
 * reason; routes then answer 403 "Permission denied", as Nomad's RPCs do.
 */
export class AclAuthenticator implements Authenticator {
  private readonly cache = new AclCache();
  private readonly identities: IdentityVerifier | undefined;

  constructor(
    private readonly tables: AclTables,
    private readonly clock: Clock,
  ) {
    const { allocs, rootKeys } = tables;
    this.identities = allocs && rootKeys ? new IdentityVerifier({ allocs, rootKeys }) : undefined;
  }

  authenticate(request: FastifyRequest): AuthenticatedIdentity {
    return this.resolve(presentedToken(request) ?? "", callerOf(request));
  }

  /** `caller`: where the call came from, recorded in the actor of a token (or the anonymous one). */
  resolve(secret: string, caller?: Caller): AuthenticatedIdentity {
    if (secret === "") return this.tokenIdentity("anonymous", "", caller);
    if (!UUID.test(secret)) {
      return this.identities && looksLikeJwt(secret)
        ? this.workloadIdentity(this.identities, secret, caller)
        : refused(TOKEN_INVALID);
    }
    const { aclTokens, nodeSecrets, nodes } = this.tables;
    // A node's secret proven before costs a compare, not a hash: the row
    // remembered for it is still the node's and the secret proves it. A
    // token wins over a node as below: one holding the same hash (the same
    // secret) sends the call the long way.
    const known = rememberedNodeSecretRow(nodeSecrets, secret);
    if (known !== undefined && aclTokens.countBy("secret", known.SecretIDHash) === 0) {
      const node = nodes.get(known.ID);
      if (node) return nodeIdentity(node);
    }
    // One hash for the token and the node lookups; the rows found by it hold
    // that very hash (compared again in constant time all the same).
    const hash = hashSecret(secret);
    const [token] = aclTokens.by("secret", hash);
    if (token && constantTimeEqual(hash, token.SecretIDHash)) {
      if (tokenExpired(token, this.clock.now())) return refused(TOKEN_EXPIRED);
      return this.tokenIdentity(token, secret, caller);
    }
    const nodeSecret = nodeSecretRowByHash(nodeSecrets, secret, hash);
    const node = nodeSecret && nodes.get(nodeSecret.ID);
    if (node) return nodeIdentity(node);
    return refused(TOKEN_NOT_FOUND);
  }

  /** The ACL of a token: management, or its policies and its roles' policies (missing ones skipped). */
  aclFor(token: ACLTokenRow | "anonymous"): Acl {
    if (token !== "anonymous" && token.Type === "management") return this.cache.management;
    const names = new Set(token === "anonymous" ? ["anonymous"] : token.Policies);
    if (token !== "anonymous") {
      for (const link of token.Roles) {
        for (const p of this.tables.aclRoles.get(link.ID)?.Policies ?? []) names.add(p.Name);
      }
    }
    const rows: ACLPolicyRow[] = [];
    for (const name of names) {
      const row = this.tables.aclPolicies.get(name);
      if (row) rows.push(row);
    }
    return this.cache.get(rows);
  }

  /** Nomad's VerifyClaim then ResolveClaims: always an ACL, from zero policies too (CVE-2023-1299). */
  private workloadIdentity(verifier: IdentityVerifier, jwt: string, caller?: Caller): AuthenticatedIdentity {
    let verified: ReturnType<IdentityVerifier["verify"]>;
    try {
      verified = verifier.verify(jwt, this.clock.now());
    } catch (err) {
      if (err instanceof IdentityError) return refused(err.message);
      throw err;
    }
    const { alloc, claims } = verified;
    const acl = this.cache.get(policiesForWorkload(this.tables.aclPolicies, alloc, claims));
    const variableClaim = aclClaimOf(alloc, claims);
    const identity: WorkloadIdentity = {
      actor: { kind: "workload", id: `${alloc.ID}:${claims.nomad_task}`, ...caller },
      allows: (namespace, capability) =>
        // Listing variables: its own paths are listable in its namespace, whatever its policies.
        (capability === "variables:list" && (namespace === variableClaim.Namespace || namespace === "*")) ||
        aclAllows(acl, namespace, capability),
      label: `alloc:${alloc.ID}`,
      claims,
      acl,
      variableClaim,
    };
    return identity;
  }

  private tokenIdentity(token: ACLTokenRow | "anonymous", secret: string, caller?: Caller): TokenIdentity {
    const acl = this.aclFor(token);
    const accessor = token === "anonymous" ? "anonymous" : token.AccessorID;
    return {
      actor:
        token === "anonymous"
          ? { kind: "anonymous", id: "anonymous", ...caller }
          : { kind: "token", id: token.AccessorID, name: token.Name, ...caller },
      allows: (namespace, capability) => aclAllows(acl, namespace, capability),
      label: `token:${accessor}`,
      token,
      secret,
      acl,
    };
  }
}

function refused(failure: string): AuthenticatedIdentity {
  return { actor: { kind: "anonymous", id: "anonymous" }, allows: () => false, label: "", failure };
}

/** The `allows` vocabulary of AuthenticatedIdentity, answered by a compiled ACL. */
export function aclAllows(acl: Acl, namespace: string, capability: string): boolean {
  if (acl.isManagement) return true;
  const colon = capability.indexOf(":");
  if (colon < 0) {
    return capability === "management" ? false : acl.allowNamespaceOperation(namespace, capability);
  }
  const block = capability.slice(0, colon);
  const level = capability.slice(colon + 1);
  switch (block) {
    case "agent":
      return level === "write" ? acl.allowAgentWrite() : acl.allowAgentRead();
    case "node":
      return level === "write" ? acl.allowNodeWrite() : level === "read" ? acl.allowNodeRead() : false;
    case "operator":
      return level === "write" ? acl.allowOperatorWrite() : acl.allowOperatorRead();
    case "quota":
      return level === "write" ? acl.allowQuotaWrite() : acl.allowQuotaRead();
    case "plugin":
      return level === "list" ? acl.allowPluginList() : acl.allowPluginRead();
    case "node_pool":
      return acl.allowNodePoolOperation(namespace, level);
    case "host_volume":
      return acl.allowHostVolumeOperation(namespace, level);
    case "variables":
      return level === "list" ? acl.allowVariableSearch(namespace) : false;
    default:
      return false;
  }
}
