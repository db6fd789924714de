import type { ACLPolicyRow, ACLRoleRow } from "../../projections/acl.ts";
import type { AuthenticatedIdentity } from "../auth/authenticate.ts";
import type { Table } from "../store/table.ts";
import { callerToken, isManagement, type Visible } from "./role-visibility.ts";

/**
 * The policies a caller may read (Nomad's ListPolicies, GetPolicy): all for
 * management, else those its token names and those of the roles it links
 * to. The anonymous caller holds the anonymous token, whose one policy is
 * `anonymous`. As in Nomad, a name the token holds directly counts even
 * before its policy exists (a read of it is then a 404), while a role's
 * link to a missing policy grants nothing (a 403).
 */
export function visiblePolicyNames(
  identity: AuthenticatedIdentity,
  tables: { readonly aclRoles: Table<ACLRoleRow>; readonly aclPolicies: Table<ACLPolicyRow> },
): Visible {
  if (isManagement(identity)) return "all";
  const token = callerToken(identity);
  if (token === "anonymous") return new Set(["anonymous"]);
  const names = new Set(token.Policies);
  for (const link of token.Roles) {
    for (const p of tables.aclRoles.get(link.ID)?.Policies ?? []) {
      if (tables.aclPolicies.has(p.Name)) names.add(p.Name);
    }
  }
  return names;
}
