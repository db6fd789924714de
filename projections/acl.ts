import type { ApplyContext, Projection } from "../src/store/projection.ts";
import { Table } from "../src/store/table.ts";
import type {
  ACLBootstrapped,
  ACLEvent,
  ACLOneTimeTokenCreated,
  ACLOneTimeTokenExchanged,
  ACLOneTimeTokenSpec,
  ACLPoliciesDeleted,
  ACLPoliciesUpserted,
  ACLPolicySpec,
  ACLRoleSpec,
  ACLRolesDeleted,
  ACLRolesUpserted,
  ACLTokenSpec,
  ACLTokensDeleted,
  ACLTokensUpserted,
} from "../streams/acl.ts";

export type ACLTokenRow = ACLTokenSpec & { readonly CreateIndex: number; readonly ModifyIndex: number };
export type ACLPolicyRow = ACLPolicySpec & { readonly CreateIndex: number; readonly ModifyIndex: number };
export type ACLRoleRow = ACLRoleSpec & { readonly CreateIndex: number; readonly ModifyIndex: number };
export type ACLOneTimeTokenRow = ACLOneTimeTokenSpec & {
  readonly CreateIndex: number;
  readonly ModifyIndex: number;
};

/** Nomad's `acl_token_bootstrap` index row: the index of the bootstrap, which a reset must name. */
export interface ACLBootstrapRow {
  readonly ID: "bootstrap";
  readonly BootstrapIndex: number;
  readonly CreateIndex: number;
  readonly ModifyIndex: number;
}

/** Nomad's ACL policy and role names. */
export const ACL_NAME = /^[a-zA-Z0-9-]{1,128}$/;

/** Nomad's `acl_policy` `job` index key: an exact (namespace, job) match, never Nomad 1.5's prefix (reference §9.1). */
export const policyJobKey = (namespace: string, jobID: string) => `${namespace}\u0000${jobID}`;

/**
 * The ACL plane's tables: tokens (by accessor, and by the hash of their
 * secret), policies, roles, one-time tokens and the bootstrap row. Apply
 * checks again what the handler checked, against the tables as they are
 * when the event lands: a policy deleted in between, a name taken, a second
 * bootstrap.
 */
export function aclProjection() {
  const tokens = new Table<ACLTokenRow>({
    name: "acl_tokens",
    key: (t) => t.AccessorID,
    indexes: { secret: (t) => t.SecretIDHash, role: (t) => t.Roles.map((r) => r.ID) },
  });
  const policies = new Table<ACLPolicyRow>({
    name: "acl_policies",
    key: (p) => p.Name,
    indexes: {
      job: (p) => (p.JobACL?.Namespace ? policyJobKey(p.JobACL.Namespace, p.JobACL.JobID) : undefined),
    },
  });
  const roles = new Table<ACLRoleRow>({
    name: "acl_roles",
    key: (r) => r.ID,
    indexes: { name: (r) => r.Name },
  });
  const oneTimeTokens = new Table<ACLOneTimeTokenRow>({
    name: "acl_one_time_tokens",
    key: (o) => o.OneTimeSecretHash,
    indexes: { accessor: (o) => o.AccessorID },
  });
  const bootstrap = new Table<ACLBootstrapRow>({ name: "acl_bootstrap", key: (b) => b.ID });

  const missingPolicy = (names: readonly string[]) => names.find((n) => !policies.has(n));

  /** The second validation of a token write; undefined when it may be stored. */
  const tokenRefusal = (t: ACLTokenSpec): string | undefined => {
    const existing = tokens.get(t.AccessorID);
    if (existing && existing.SecretIDHash !== t.SecretIDHash)
      return `token ${t.AccessorID}: SecretID cannot change`;
    if (!existing) {
      const [clash] = tokens.by("secret", t.SecretIDHash);
      if (clash) return "token SecretID is already in use";
    }
    if (existing && existing.Global !== t.Global) return "cannot toggle global value";
    // Policies may be missing (Nomad's upsertTokens does not look them up; resolution skips them).
    const role = t.Roles.find((r) => !roles.has(r.ID));
    if (role) return `cannot find role ${role.ID}`;
    return undefined;
  };

  const putToken = (ctx: ApplyContext, t: ACLTokenSpec) => {
    const existing = tokens.get(t.AccessorID);
    ctx.put(tokens, {
      ...t,
      // Set on create and never changed by later updates (Nomad).
      CreateTime: existing?.CreateTime ?? t.CreateTime,
      CreateIndex: existing?.CreateIndex ?? ctx.index,
      ModifyIndex: ctx.index,
    });
  };

  const deleteTokens = (ctx: ApplyContext, accessorIDs: readonly string[]) => {
    for (const id of accessorIDs) {
      ctx.delete(tokens, id);
      for (const once of oneTimeTokens.by("accessor", id)) ctx.delete(oneTimeTokens, once.OneTimeSecretHash);
    }
  };

  // Auth methods and binding rules are projections/acl-sso.ts's.
  type Handled = Exclude<ACLEvent["type"], `ACLAuthMethods${string}` | `ACLBindingRules${string}`>;
  const handlers: Record<Handled, (ctx: ApplyContext, data: never) => void> = {
    ACLBootstrapped(ctx, data: ACLBootstrapped) {
      const done = bootstrap.get("bootstrap");
      if (done && data.ResetIndex !== done.BootstrapIndex) {
        return ctx.reject(400, `ACL bootstrap already done (reset index: ${done.BootstrapIndex})`);
      }
      const refusal = tokenRefusal(data.Token);
      if (refusal) return ctx.reject(400, refusal);
      putToken(ctx, data.Token);
      ctx.put(bootstrap, {
        ID: "bootstrap",
        BootstrapIndex: ctx.index,
        CreateIndex: done?.CreateIndex ?? ctx.index,
        ModifyIndex: ctx.index,
      });
    },
    ACLTokensUpserted(ctx, data: ACLTokensUpserted) {
      for (const t of data.Tokens) {
        const refusal = tokenRefusal(t);
        if (refusal) return ctx.reject(400, refusal);
      }
      for (const t of data.Tokens) putToken(ctx, t);
    },
    ACLTokensDeleted(ctx, data: ACLTokensDeleted) {
      const missing = data.AccessorIDs.filter((id) => !tokens.has(id));
      if (missing.length > 0)
        return ctx.reject(400, `Cannot delete nonexistent tokens: ${missing.join(", ")}`);
      deleteTokens(ctx, data.AccessorIDs);
    },
    ACLOneTimeTokenCreated(ctx, data: ACLOneTimeTokenCreated) {
      const once = data.OneTimeToken;
      if (!tokens.has(once.AccessorID)) return ctx.reject(400, "ACL token not found");
      if (oneTimeTokens.has(once.OneTimeSecretHash)) return ctx.reject(400, "one-time token already exists");
      ctx.put(oneTimeTokens, { ...once, CreateIndex: ctx.index, ModifyIndex: ctx.index });
    },
    ACLOneTimeTokenExchanged(ctx, data: ACLOneTimeTokenExchanged) {
      const once = oneTimeTokens.get(data.OneTimeSecretHash);
      // Nomad's wording for a missing, used or expired one-time token alike.
      if (!once || Date.parse(once.ExpiresAt) <= Date.parse(data.At) || !tokens.has(once.AccessorID)) {
        return ctx.reject(403, "Permission denied");
      }
      ctx.delete(oneTimeTokens, data.OneTimeSecretHash);
    },
    ACLPoliciesUpserted(ctx, data: ACLPoliciesUpserted) {
      const bad = data.Policies.find((p) => !ACL_NAME.test(p.Name));
      if (bad) return ctx.reject(400, `policy ${bad.Name} invalid: invalid name '${bad.Name}'`);
      for (const p of data.Policies) {
        const existing = policies.get(p.Name);
        ctx.put(policies, { ...p, CreateIndex: existing?.CreateIndex ?? ctx.index, ModifyIndex: ctx.index });
      }
    },
    ACLPoliciesDeleted(ctx, data: ACLPoliciesDeleted) {
      // Nomad deletes what exists and does not cascade: tokens and roles keep the dangling name.
      for (const name of data.Names) ctx.delete(policies, name);
      ctx.touch(policies);
    },
    ACLRolesUpserted(ctx, data: ACLRolesUpserted) {
      for (const r of data.Roles) {
        if (!ACL_NAME.test(r.Name)) return ctx.reject(400, `invalid name '${r.Name}'`);
        const [named] = roles.by("name", r.Name);
        if (named && named.ID !== r.ID) return ctx.reject(400, `ACL role with name ${r.Name} already exists`);
        if (!data.AllowMissingPolicies) {
          const policy = missingPolicy(r.Policies.map((p) => p.Name));
          if (policy !== undefined) return ctx.reject(400, `cannot find policy ${policy}`);
        }
      }
      for (const r of data.Roles) {
        const existing = roles.get(r.ID);
        // An unchanged role is not written again (Nomad compares the hash).
        if (existing && existing.Hash === r.Hash) continue;
        ctx.put(roles, { ...r, CreateIndex: existing?.CreateIndex ?? ctx.index, ModifyIndex: ctx.index });
      }
      ctx.touch(roles);
    },
    ACLRolesDeleted(ctx, data: ACLRolesDeleted) {
      if (data.IDs.some((id) => !roles.has(id))) return ctx.reject(404, "ACL role not found");
      // Tokens keep their links: reading a token drops the links to deleted roles (src/acl/token-view.ts).
      for (const id of data.IDs) ctx.delete(roles, id);
    },
  };

  const projection: Projection = {
    name: "acl",
    version: 1,
    tables: [tokens, policies, roles, oneTimeTokens, bootstrap],
    handles: new Set(Object.keys(handlers)),
    evolve(ctx, event) {
      const e = event as ACLEvent & { type: Handled };
      handlers[e.type](ctx, e.data as never);
    },
  };
  return { projection, tokens, policies, roles, oneTimeTokens, bootstrap };
}
