import { randomUUID } from "node:crypto";
import type { ACLTokenRow } from "../../projections/acl.ts";
import { goTime } from "../../projections/go-time.ts";
import type { ACLTokenSpec, ACLTokensUpserted } from "../../streams/acl.ts";
import { ApiError } from "../api/api-error.ts";
import { commit } from "../api/commit.ts";
import type { ApiContext } from "../api/context.ts";
import type { AuthenticatedIdentity } from "../auth/authenticate.ts";
import { goDuration } from "../jobs/go-values.ts";
import { formatErrors } from "../jobs/multierror.ts";
import { hashSecret } from "../util/secret-hash.ts";
import { aclHash } from "./acl-hash.ts";
import { tokenView } from "./token-view.ts";

/** What a caller (or a login) asks for; Nomad's ACLToken as a write request carries it. */
export interface TokenDraft {
  /** Empty or absent: a new token. */
  readonly AccessorID?: string;
  readonly Name: string;
  readonly Type: string;
  readonly Policies: readonly string[];
  readonly Roles: readonly { readonly ID?: string; readonly Name?: string }[];
  readonly Global: boolean;
  /** Nanoseconds. */
  readonly ExpirationTTL?: number;
  /** RFC 3339, or null/absent. */
  readonly ExpirationTime?: string | null;
}

const MAX_TOKEN_NAME = 256;
const NS_PER_MS = 1_000_000;

/**
 * Nomad's ACL.upsertTokens: canonicalize (a new token gets its accessor,
 * secret, create time and expiry), validate against the existing token
 * (ACLToken.Validate, with value equality for ExpirationTime: reference
 * §9.2), resolve role links by name or ID to IDs, then append one event
 * with the secrets hashed. Answers Nomad's ACLToken for each, with the
 * SecretID of a new token in clear (the only time it is shown; an update
 * answers without it, as nobody can read it back). Throws ApiError 400.
 */
export async function upsertTokens(
  ctx: ApiContext,
  identity: AuthenticatedIdentity,
  drafts: readonly TokenDraft[],
): Promise<{ readonly index: number; readonly tokens: readonly ReturnType<typeof tokenView>[] }> {
  if (drafts.length === 0) throw ApiError.badRequest("must specify as least one token");
  const global = drafts.filter((d) => d.Global).length;
  if (global > 0 && global < drafts.length) {
    throw ApiError.badRequest("cannot upsert mixed global and non-global tokens");
  }
  const { aclTokens, aclRoles } = ctx.tables;
  const nowMs = ctx.clock.now();
  const specs: ACLTokenSpec[] = [];
  const secrets = new Map<string, string>();
  drafts.forEach((draft, i) => {
    const existing = draft.AccessorID ? aclTokens.get(draft.AccessorID) : undefined;
    if (draft.AccessorID && !existing) throw ApiError.badRequest(`cannot find token ${draft.AccessorID}`);
    let spec: Omit<ACLTokenSpec, "Hash" | "Roles"> & { Roles: { ID: string }[] };
    if (existing) {
      spec = {
        ...existing,
        Name: draft.Name,
        Type: draft.Type as ACLTokenSpec["Type"],
        Policies: [...draft.Policies],
        Roles: [],
      };
    } else {
      const secretID = randomUUID();
      const createTime = goTime(nowMs);
      const ttl = draft.ExpirationTTL ?? 0;
      const expirationTime =
        draft.ExpirationTime ?? (ttl !== 0 ? goTime(nowMs + Math.trunc(ttl / NS_PER_MS)) : null);
      spec = {
        AccessorID: randomUUID(),
        SecretIDHash: hashSecret(secretID),
        Name: draft.Name,
        Type: draft.Type as ACLTokenSpec["Type"],
        Policies: [...draft.Policies],
        Roles: [],
        Global: draft.Global,
        CreateTime: createTime,
        ExpirationTime: expirationTime,
        ExpirationTTL: ttl,
      };
      secrets.set(spec.AccessorID, secretID);
    }
    const errors = validateToken(ctx, draft, spec, existing, nowMs);
    if (errors.length > 0) throw ApiError.badRequest(`token ${i} invalid: ${formatErrors(errors)}`);
    for (const link of draft.Roles) {
      const role = link.ID ? aclRoles.get(link.ID) : aclRoles.by("name", link.Name ?? "")[0];
      if (!role) throw ApiError.badRequest(`cannot find role ${link.ID || link.Name || ""}`);
      if (!spec.Roles.some((r) => r.ID === role.ID)) spec.Roles.push({ ID: role.ID });
    }
    specs.push({
      ...spec,
      Hash: aclHash([
        spec.Name,
        spec.Type,
        [...spec.Policies],
        spec.Global ? "global" : "local",
        spec.Roles.map((r) => r.ID),
      ]),
    });
  });
  const data: ACLTokensUpserted = { Tokens: specs };
  const index = await commit(ctx, identity, [{ type: "ACLTokensUpserted", v: 1, data }]);
  const tokens = specs.map((s) => {
    const row = aclTokens.get(s.AccessorID) as ACLTokenRow;
    return tokenView(row, aclRoles, secrets.get(s.AccessorID) ?? "");
  });
  return { index, tokens };
}

/** Nomad's ACLToken.Validate, in its words. */
function validateToken(
  ctx: ApiContext,
  draft: TokenDraft,
  spec: Pick<
    ACLTokenSpec,
    "Name" | "Type" | "Policies" | "CreateTime" | "ExpirationTime" | "Global" | "ExpirationTTL"
  >,
  existing: ACLTokenRow | undefined,
  nowMs: number,
): string[] {
  const errors: string[] = [];
  if (spec.Name.length > MAX_TOKEN_NAME) errors.push("token name too long");
  if (spec.Type === "client") {
    if (spec.Policies.length === 0 && draft.Roles.length === 0)
      errors.push("client token missing policies or roles");
  } else if (spec.Type === "management") {
    if (spec.Policies.length !== 0 || draft.Roles.length !== 0) {
      errors.push("management token cannot be associated with policies or roles");
    }
  } else {
    errors.push("token type must be client or management");
  }
  if (!existing) {
    const ttl = draft.ExpirationTTL ?? 0;
    if (ttl < 0) errors.push(`token expiration TTL '${goDuration(ttl)}' should not be negative`);
    if (spec.ExpirationTime !== null) {
      const expires = Date.parse(spec.ExpirationTime);
      if (Number.isNaN(expires))
        errors.push(`expiration time "${spec.ExpirationTime}" is not an RFC 3339 time`);
      else {
        const expiresIn = expires - nowMs;
        const { aclTokenMinExpirationTtl: min, aclTokenMaxExpirationTtl: max } = ctx.config;
        if (expiresIn < 0) errors.push("expiration time cannot be before create time");
        else if (expiresIn > max) {
          errors.push(
            `expiration time cannot be more than ${goDuration(max * NS_PER_MS)} in the future (was ${goDuration(expiresIn * NS_PER_MS)})`,
          );
        } else if (expiresIn < min) {
          errors.push(
            `expiration time cannot be less than ${goDuration(min * NS_PER_MS)} in the future (was ${goDuration(expiresIn * NS_PER_MS)})`,
          );
        }
      }
    }
  } else {
    if (existing.Global !== draft.Global) errors.push("cannot toggle global mode");
    if ((draft.ExpirationTTL ?? 0) !== 0 && draft.ExpirationTTL !== existing.ExpirationTTL) {
      errors.push("cannot update expiration TTL");
    }
    // Compared by value, and an update may leave it out (reference §9.2).
    const sent = draft.ExpirationTime ?? null;
    if (
      sent !== null &&
      (existing.ExpirationTime === null || Date.parse(sent) !== Date.parse(existing.ExpirationTime))
    ) {
      errors.push("cannot update expiration time");
    }
  }
  return errors;
}
