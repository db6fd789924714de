import { type ACLPolicyRow, policyJobKey } from "../../projections/acl.ts";
import type { AllocRow } from "../../projections/allocs.ts";
import type { AclClaim } from "../acl/policy/compile-acl.ts";
import type { Table } from "../store/table.ts";
import { identityJobID } from "./claims.ts";
import type { PresentedClaims } from "./jwt.ts";

/**
 * Nomad's resolvePoliciesForClaims: the policies attached (JobACL) to the
 * allocation's job — the parent job for periodic and dispatch children —
 * that apply to its group and task. A policy for the whole job applies; one
 * for another group does not; one for this group applies to all its tasks
 * unless it names a task, which must be this one.
 */
export function policiesForWorkload(
  policies: Table<ACLPolicyRow>,
  alloc: AllocRow,
  claims: Pick<PresentedClaims, "nomad_task">,
): ACLPolicyRow[] {
  const jobID = identityJobID(alloc, alloc.Job);
  const out: ACLPolicyRow[] = [];
  for (const p of policies.by("job", policyJobKey(alloc.Namespace, jobID))) {
    const scope = p.JobACL;
    if (!scope) continue;
    if (scope.Group === "") out.push(p);
    else if (scope.Group !== alloc.TaskGroup) continue;
    else if (scope.Task === "" || scope.Task === claims.nomad_task) out.push(p);
  }
  return out;
}

/**
 * Nomad's ACLClaim for a workload: what its implicit variable paths
 * (`nomad/jobs/<job>[/<group>[/<task>]]`) are made of. The job is the
 * claim's (the parent job for a child), as Nomad's handleMixedAuthEndpoint
 * builds it.
 */
export function aclClaimOf(alloc: AllocRow, claims: PresentedClaims): AclClaim {
  return {
    Namespace: claims.nomad_namespace,
    Job: claims.nomad_job_id,
    Group: alloc.TaskGroup,
    Task: claims.nomad_task,
  };
}
