import type { ACLRoleRow } from "../../projections/acl.ts";
import { ApiError } from "../api/api-error.ts";
import { isTokenIdentity, TOKEN_NOT_FOUND, type TokenIdentity } from "../auth/acl-authenticator.ts";
import type { AuthenticatedIdentity } from "../auth/authenticate.ts";
import type { Table } from "../store/table.ts";
import { liveRoleLinks } from "./token-view.ts";

/** What a caller may read of an ACL table: everything (management), or the named rows. */
export type Visible = "all" | ReadonlySet<string>;

export const isManagement = (identity: AuthenticatedIdentity) => identity.allows("*", "management");

/**
 * The token behind a caller who is not management. Nomad looks the token
 * up by the caller's secret and answers "ACL token not found" when there is
 * none (a node's secret, say).
 */
export function callerToken(identity: AuthenticatedIdentity): TokenIdentity["token"] {
  if (!isTokenIdentity(identity)) throw ApiError.forbidden(TOKEN_NOT_FOUND);
  return identity.token;
}

/**
 * The roles a caller may read (Nomad's ListRoles, GetRoleByID): all for
 * management, else those its token links to and that still exist, by ID.
 */
export function visibleRoleIDs(identity: AuthenticatedIdentity, roles: Table<ACLRoleRow>): Visible {
  if (isManagement(identity)) return "all";
  const token = callerToken(identity);
  if (token === "anonymous") return new Set();
  return new Set(liveRoleLinks(token, roles).map((l) => l.ID));
}

/**
 * GetRoleByName's check: the token's links, named by the roles' current
 * names (Nomad fills the names in when it reads the token), so a renamed
 * role is readable under its new name only.
 */
export function visibleRoleNames(identity: AuthenticatedIdentity, roles: Table<ACLRoleRow>): Visible {
  if (isManagement(identity)) return "all";
  const token = callerToken(identity);
  if (token === "anonymous") return new Set();
  return new Set(liveRoleLinks(token, roles).map((l) => l.Name));
}

export const canSee = (visible: Visible, key: string) => visible === "all" || visible.has(key);
