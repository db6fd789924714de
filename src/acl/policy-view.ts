import type { ACLPolicyRow } from "../../projections/acl.ts";
import type { Policy } from "./policy/policy-types.ts";

/**
 * Nomad 1.6.1's ACLPolicyListStub as the server sends it: no Rules, no
 * JobACL (the api package declares JobACL on the stub, the server never
 * fills it).
 */
export function policyStub(row: ACLPolicyRow) {
  return {
    Name: row.Name,
    Description: row.Description,
    Hash: row.Hash,
    CreateIndex: row.CreateIndex,
    ModifyIndex: row.ModifyIndex,
  };
}

/**
 * Nomad's ACLPolicy as GET answers it. `RulesJSON` is the parsed policy
 * (Nomad parses the rules again on every read; the event carries them
 * parsed already), `JobACL` is null when the policy is attached to no job.
 */
export function policyView(row: ACLPolicyRow) {
  return {
    Name: row.Name,
    Description: row.Description,
    Rules: row.Rules,
    RulesJSON: row.Parsed as Policy,
    JobACL: row.JobACL,
    Hash: row.Hash,
    CreateIndex: row.CreateIndex,
    ModifyIndex: row.ModifyIndex,
  };
}
