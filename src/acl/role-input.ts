import { randomUUID } from "node:crypto";
import { ACL_NAME, type ACLPolicyRow, type ACLRoleRow } from "../../projections/acl.ts";
import type { ACLRoleSpec } from "../../streams/acl.ts";
import { ApiError } from "../api/api-error.ts";
import { formatErrors } from "../jobs/multierror.ts";
import type { Table } from "../store/table.ts";
import { aclHash } from "./acl-hash.ts";

/** Nomad's maxACLRoleDescriptionLength, in bytes (Go's len). */
const MAX_DESCRIPTION_BYTES = 256;

/** Nomad's ACLRole as a request body; the fields the server sets are accepted and ignored. */
export const roleBodySchema = {
  type: ["object", "null"],
  additionalProperties: false,
  properties: {
    ID: { type: "string" },
    Name: { type: "string" },
    Description: { type: "string" },
    Policies: {
      type: ["array", "null"],
      items: {
        type: "object",
        additionalProperties: false,
        properties: { Name: { type: "string" } },
      },
    },
    Hash: {},
    CreateIndex: {},
    ModifyIndex: {},
  },
} as const;

export interface RoleBody {
  ID?: string;
  Name?: string;
  Description?: string;
  Policies?: { Name?: string }[] | null;
}

/**
 * The role a write to `/v1/acl/role[/:id]` stores, checked as Nomad's HTTP
 * handler and ACL.UpsertRoles check it, with their texts. `pathID` is the
 * `:id` of an update; a body without an ID takes it. A role with an ID is an
 * update and must exist; one without is a create, whose name must be free.
 * Policy links must name existing policies and are kept once each, in the
 * order first given.
 */
export function roleSpecFromBody(
  pathID: string | undefined,
  body: RoleBody | null | undefined,
  tables: { readonly aclRoles: Table<ACLRoleRow>; readonly aclPolicies: Table<ACLPolicyRow> },
): ACLRoleSpec {
  if (body === undefined || body === null) throw ApiError.badRequest("Request body is empty");
  // Lenient where Nomad 1.6.1 is strict: it refuses an update whose body leaves the ID out.
  const id = body.ID || pathID || "";
  if (pathID !== undefined && id !== pathID) {
    throw ApiError.badRequest("ACL role ID does not match request path");
  }
  const name = body.Name ?? "";
  const description = body.Description ?? "";
  const links = body.Policies ?? [];

  const errors: string[] = [];
  if (!ACL_NAME.test(name)) errors.push(`invalid name '${name}'`);
  if (Buffer.byteLength(description, "utf8") > MAX_DESCRIPTION_BYTES) {
    errors.push(`description longer than ${MAX_DESCRIPTION_BYTES}`);
  }
  if (links.length < 1) errors.push("at least one policy should be specified");
  // Nomad numbers the role by its place in the request (always 0 over HTTP).
  if (errors.length > 0) throw ApiError.badRequest(`role 0 invalid: ${formatErrors(errors)}`);

  const { aclRoles, aclPolicies } = tables;
  if (id === "") {
    if (aclRoles.countBy("name", name) > 0)
      throw ApiError.badRequest(`role with name ${name} already exists`);
  } else {
    if (!aclRoles.has(id)) throw ApiError.badRequest(`cannot find role ${id}`);
    // Nomad's state store refuses this inside its transaction (an internal
    // error over HTTP); checked here so nothing is written, with its text.
    const [named] = aclRoles.by("name", name);
    if (named && named.ID !== id) throw ApiError.badRequest(`ACL role with name ${name} already exists`);
  }

  // A Set keeps insertion order: the links stay in the order first given.
  const policyNames = new Set<string>();
  for (const link of links) {
    const policy = link.Name ?? "";
    if (!aclPolicies.has(policy)) throw ApiError.badRequest(`cannot find policy ${policy}`);
    policyNames.add(policy);
  }

  return {
    ID: id || randomUUID(),
    Name: name,
    Description: description,
    Policies: [...policyNames].map((p) => ({ Name: p })),
    // Nomad's ACLRole.SetHash: name, description, each linked policy name.
    Hash: aclHash([name, description, [...policyNames]]),
  };
}
