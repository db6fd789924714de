import { Acl, type AclClaim } from "../acl/policy/compile-acl.ts";
import type { AuthenticatedIdentity } from "../auth/authenticate.ts";

/** Nomad's variables capabilities (acl.VariablesCapability*). */
export type VariableCapability = "list" | "read" | "write" | "destroy";

/**
 * What an identity carries for variables: its compiled ACL (a token's
 * policies, or a workload's attached ones) and, for a workload identity,
 * the claim that grants implicit read/list under `nomad/jobs/<job>/...`
 * (Group resolved from its allocation). Token identities
 * (src/auth/acl-authenticator.ts) have the first; a workload identity adds
 * the second.
 */
export interface VariableAclHolder {
  readonly acl: Acl;
  readonly variableClaim?: AclClaim;
}

function holderOf(identity: AuthenticatedIdentity): VariableAclHolder | undefined {
  const acl = (identity as Partial<VariableAclHolder>).acl;
  return acl instanceof Acl ? (identity as AuthenticatedIdentity & VariableAclHolder) : undefined;
}

/**
 * Whether `identity` has `capability` on the variable at `path` in
 * `namespace`: Nomad's Variables.authorize for reads and lists, where a
 * workload's claim counts (`useClaim`), and svePreApply for writes, which
 * pass no claim (a workload has no implicit write). With ACLs off everyone
 * may do everything. With ACLs on, an identity without an ACL (a client
 * node's secret) may do nothing: Nomad 1.6.1 would let it through as if
 * ACLs were off, which nothing here copies.
 */
export function allowsVariable(
  aclEnabled: boolean,
  identity: AuthenticatedIdentity,
  namespace: string,
  path: string,
  capability: VariableCapability,
  useClaim: boolean,
): boolean {
  if (!aclEnabled) return true;
  const holder = holderOf(identity);
  if (!holder) return false;
  return holder.acl.allowVariableOperation(
    namespace,
    path,
    capability,
    useClaim ? holder.variableClaim : undefined,
  );
}
