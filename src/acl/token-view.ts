import type { ACLRoleRow, ACLTokenRow } from "../../projections/acl.ts";
import type { Table } from "../store/table.ts";
import { durationToJson } from "./go-duration.ts";

/**
 * The role links a reader sees: links to deleted roles dropped, each named
 * by the role's current name (Nomad's fixTokenRoleLinks, at read time; the
 * stored token keeps its links).
 */
export function liveRoleLinks(token: ACLTokenRow, roles: Table<ACLRoleRow>): { ID: string; Name: string }[] {
  const links: { ID: string; Name: string }[] = [];
  for (const link of token.Roles) {
    const role = roles.get(link.ID);
    if (role) links.push({ ID: role.ID, Name: role.Name });
  }
  return links;
}

/** Nomad's ACLTokenListStub: never a secret. */
export function tokenStub(token: ACLTokenRow, roles: Table<ACLRoleRow>) {
  return {
    AccessorID: token.AccessorID,
    Name: token.Name,
    Type: token.Type,
    Policies: [...token.Policies],
    Roles: liveRoleLinks(token, roles),
    Global: token.Global,
    Hash: token.Hash,
    CreateTime: token.CreateTime,
    ...(token.ExpirationTime !== null && { ExpirationTime: token.ExpirationTime }),
    CreateIndex: token.CreateIndex,
    ModifyIndex: token.ModifyIndex,
  };
}

/**
 * Nomad's ACLToken. `secretID` is given only where Nomad shows the secret:
 * the answer to the write that created the token (the server keeps only its
 * hash afterwards, so a later read shows the secret to nobody but the
 * caller who presented it: `/v1/acl/token/self` and a read of one's own
 * token).
 */
export function tokenView(token: ACLTokenRow, roles: Table<ACLRoleRow>, secretID: string) {
  return {
    AccessorID: token.AccessorID,
    SecretID: secretID,
    Name: token.Name,
    Type: token.Type,
    Policies: [...token.Policies],
    Roles: liveRoleLinks(token, roles),
    Global: token.Global,
    Hash: token.Hash,
    CreateTime: token.CreateTime,
    ...(token.ExpirationTime !== null && { ExpirationTime: token.ExpirationTime }),
    ExpirationTTL: durationToJson(token.ExpirationTTL),
    CreateIndex: token.CreateIndex,
    ModifyIndex: token.ModifyIndex,
  };
}

/** Whether the token has expired at `nowMs` (Nomad's IsExpired). */
export function tokenExpired(token: Pick<ACLTokenRow, "ExpirationTime">, nowMs: number): boolean {
  return token.ExpirationTime !== null && Date.parse(token.ExpirationTime) < nowMs;
}
