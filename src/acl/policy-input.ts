import { ACL_NAME } from "../../projections/acl.ts";
import type { ACLPolicySpec, JobACLSpec } from "../../streams/acl.ts";
import { ApiError } from "../api/api-error.ts";
import { formatErrors } from "../jobs/multierror.ts";
import { aclHash } from "./acl-hash.ts";
import { PolicyParseError, parsePolicy } from "./policy/parse-policy.ts";
import type { Policy } from "./policy/policy-types.ts";

/** Nomad's maxPolicyDescriptionLength, in bytes (Go's len). */
const MAX_DESCRIPTION_BYTES = 256;

/**
 * Rules longer than this are refused (Nomad has no limit). Decoding a policy
 * runs on the event loop at roughly 0.1–0.3 ms per KiB: 32 KiB, hundreds of
 * namespace blocks, stays near 10 ms, and a megabyte of rules cannot stall
 * heartbeats for a third of a second.
 */
export const MAX_RULES_BYTES = 32 * 1024;

const jobAclSchema = {
  type: ["object", "null"],
  additionalProperties: false,
  properties: {
    Namespace: { type: "string" },
    JobID: { type: "string" },
    Group: { type: "string" },
    Task: { type: "string" },
  },
} as const;

/** Nomad's ACLPolicy as a request body; the fields the server derives or sets are accepted and ignored. */
export const policyBodySchema = {
  type: ["object", "null"],
  additionalProperties: false,
  properties: {
    Name: { type: "string" },
    Description: { type: "string" },
    Rules: { type: "string" },
    JobACL: jobAclSchema,
    RulesJSON: {},
    Hash: {},
    CreateIndex: {},
    ModifyIndex: {},
  },
} as const;

export interface PolicyBody {
  Name?: string;
  Description?: string;
  Rules?: string;
  JobACL?: Partial<JobACLSpec> | null;
}

/**
 * The policy a write to `/v1/acl/policy/:name` stores, checked as Nomad's
 * HTTP handler and ACLPolicy.Validate check it, with their texts: the body
 * must name the policy of the path, then every problem with the name, the
 * rules, the description and the job attachment is listed at once.
 */
export async function policySpecFromBody(
  pathName: string,
  body: PolicyBody | null | undefined,
): Promise<ACLPolicySpec> {
  if (body === undefined || body === null) throw ApiError.badRequest("Request body is empty");
  const name = body.Name ?? "";
  if (name !== pathName) throw ApiError.badRequest("ACL policy name does not match request path");
  const description = body.Description ?? "";
  const rules = body.Rules ?? "";
  const jobAcl: JobACLSpec | null = body.JobACL
    ? {
        Namespace: body.JobACL.Namespace ?? "",
        JobID: body.JobACL.JobID ?? "",
        Group: body.JobACL.Group ?? "",
        Task: body.JobACL.Task ?? "",
      }
    : null;

  const errors: string[] = [];
  if (!ACL_NAME.test(name)) errors.push(`invalid name '${name}'`);
  let parsed: Policy | undefined;
  if (Buffer.byteLength(rules, "utf8") > MAX_RULES_BYTES) {
    errors.push(`rules longer than ${MAX_RULES_BYTES} bytes`);
  } else {
    try {
      parsed = await parsePolicy(rules);
    } catch (err) {
      if (!(err instanceof PolicyParseError)) throw err;
      errors.push(`failed to parse rules: ${err.message}`);
    }
  }
  if (Buffer.byteLength(description, "utf8") > MAX_DESCRIPTION_BYTES) {
    errors.push(`description longer than ${MAX_DESCRIPTION_BYTES}`);
  }
  if (jobAcl) {
    if (jobAcl.JobID !== "" && jobAcl.Namespace === "") errors.push("namespace must be set to set job ID");
    if (jobAcl.Group !== "" && jobAcl.JobID === "") errors.push("job ID must be set to set group");
    if (jobAcl.Task !== "" && jobAcl.Group === "") errors.push("group must be set to set task");
  }
  // Nomad numbers the policy by its place in the request (always 0 over HTTP), not by its name.
  if (errors.length > 0 || !parsed) throw ApiError.badRequest(`policy 0 invalid: ${formatErrors(errors)}`);

  return {
    Name: name,
    Description: description,
    Rules: rules,
    Parsed: parsed,
    JobACL: jobAcl,
    Hash: policyHash(name, description, rules, jobAcl),
  };
}

/** Nomad's ACLPolicy.SetHash inputs: name, description, rules, and the job attachment when there is one. */
function policyHash(name: string, description: string, rules: string, jobAcl: JobACLSpec | null): string {
  const parts = [name, description, rules];
  if (jobAcl) parts.push(jobAcl.Namespace, jobAcl.JobID, jobAcl.Group, jobAcl.Task);
  return aclHash(parts);
}
