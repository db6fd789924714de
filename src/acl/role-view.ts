import type { ACLRoleRow } from "../../projections/acl.ts";

/**
 * Nomad's ACLRole as its API answers it; its ACLRoleListStub has the same
 * fields, so lists use this too. Copies, so a caller's answer never aliases
 * the stored row.
 */
export function roleView(row: ACLRoleRow) {
  return {
    ID: row.ID,
    Name: row.Name,
    Description: row.Description,
    Policies: row.Policies.map((p) => ({ Name: p.Name })),
    Hash: row.Hash,
    CreateIndex: row.CreateIndex,
    ModifyIndex: row.ModifyIndex,
  };
}
