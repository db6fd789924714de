import { authMethodErrors, authMethodInvalid } from "../src/acl/sso/auth-method-rules.ts";
import { bindingRuleErrors, bindingRuleInvalid } from "../src/acl/sso/binding-rule-rules.ts";
import { isSealedSecret } from "../src/acl/sso/client-secret.ts";
import type { ApplyContext, Projection } from "../src/store/projection.ts";
import { type IndexedRow, stamped, Table } from "../src/store/table.ts";
import type { ACLAuthMethodSpec, ACLBindingRuleSpec, ACLEvent } from "../streams/acl.ts";

/** Nomad's ACLAuthMethod: the spec (client secret sealed) and its indexes. */
export type ACLAuthMethodRow = ACLAuthMethodSpec & IndexedRow;
/** Nomad's ACLBindingRule and its indexes. */
export type ACLBindingRuleRow = ACLBindingRuleSpec & IndexedRow;

export type ACLAuthMethodTable = Table<ACLAuthMethodRow>;
export type ACLBindingRuleTable = Table<ACLBindingRuleRow>;

/** The binding rules table's secondary index: rules by the name of their auth method. */
export const BY_AUTH_METHOD = "authMethod";

/** The default auth method other than `except`, if any (apply keeps at most one). */
export function defaultAuthMethod(table: ACLAuthMethodTable, except = ""): ACLAuthMethodRow | undefined {
  for (const row of table.all()) if (row.Default && row.Name !== except) return row;
  return undefined;
}

/**
 * What an auth method says, less its times: two specs saying the same are
 * one write to Nomad's state store ("no change"), which bumps no index. The
 * sealed secret is compared by its digest, since sealing the same secret
 * twice gives a new nonce. (Nomad compares hashes, which leave out several
 * config fields, so an update of only JWKSURL is dropped there; not here.)
 */
function authMethodContent(m: ACLAuthMethodSpec): string {
  const c = m.Config;
  const config = c && {
    ...c,
    OIDCClientSecretSealed: isSealedSecret(c.OIDCClientSecretSealed) ? c.OIDCClientSecretSealed.Digest : null,
    ClaimMappings: sortedEntries(c.ClaimMappings),
    ListClaimMappings: sortedEntries(c.ListClaimMappings),
  };
  return JSON.stringify([m.Name, m.Type, m.TokenLocality, m.MaxTokenTTL, m.Default, m.Hash, config]);
}

const sortedEntries = (map: Readonly<Record<string, string>>) =>
  Object.entries(map).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));

const sameBindingRule = (a: ACLBindingRuleSpec, b: ACLBindingRuleSpec) =>
  a.ID === b.ID &&
  a.Description === b.Description &&
  a.AuthMethod === b.AuthMethod &&
  a.Selector === b.Selector &&
  a.BindType === b.BindType &&
  a.BindName === b.BindName;

/**
 * Nomad's `acl_auth_methods` (by Name) and `acl_binding_rules` (by ID)
 * tables. Apply checks again what may have changed since the handler
 * looked (Nomad's state store checks): one default method, a rule's method
 * still exists, a rule keeps its method, deletes name what exists. Deleting
 * a method leaves its binding rules, as Nomad does.
 */
export function aclSsoProjection() {
  const authMethods = new Table<ACLAuthMethodRow>({ name: "acl_auth_methods", key: (m) => m.Name });
  const bindingRules = new Table<ACLBindingRuleRow>({
    name: "acl_binding_rules",
    key: (r) => r.ID,
    indexes: { [BY_AUTH_METHOD]: (r) => r.AuthMethod },
  });

  const upsertMethods = (ctx: ApplyContext, methods: readonly ACLAuthMethodSpec[]) => {
    if (methods.length === 0) return ctx.reject(400, "must specify as least one auth method");
    // Defaults as they stand after each method of the batch, for the next one's check.
    const batchDefault = new Map<string, boolean>();
    for (const [i, m] of methods.entries()) {
      const errors = authMethodErrors(m);
      if (errors.length > 0) return ctx.reject(400, authMethodInvalid(i, errors));
      if (m.Default) {
        let other: string | undefined;
        for (const [name, isDefault] of batchDefault) if (isDefault && name !== m.Name) other = name;
        other ??= [...authMethods.all()].find(
          (row) => row.Default && row.Name !== m.Name && batchDefault.get(row.Name) !== false,
        )?.Name;
        if (other !== undefined) return ctx.reject(400, `default ACL auth method already exists: ${other}`);
      }
      batchDefault.set(m.Name, m.Default);
    }
    for (const m of methods) {
      const before = authMethods.get(m.Name);
      if (before && authMethodContent(before) === authMethodContent(m)) continue;
      const spec = before ? { ...m, CreateTime: before.CreateTime } : m;
      ctx.put(authMethods, stamped(spec, before?.CreateIndex ?? ctx.index, ctx.index));
    }
  };

  const upsertRules = (
    ctx: ApplyContext,
    rules: readonly ACLBindingRuleSpec[],
    allowMissingMethods: boolean,
  ) => {
    if (rules.length === 0) return ctx.reject(400, "must specify as least one binding rule");
    for (const [i, r] of rules.entries()) {
      const errors = bindingRuleErrors(r, false);
      if (r.ID === "") errors.unshift("ID is missing");
      if (errors.length > 0) return ctx.reject(400, bindingRuleInvalid(i, errors));
      if (!allowMissingMethods && !authMethods.has(r.AuthMethod)) {
        return ctx.reject(400, "ACL binding rule insert failed: ACL auth method not found");
      }
      const before = bindingRules.get(r.ID);
      if (before && before.AuthMethod !== r.AuthMethod) {
        return ctx.reject(400, "cannot update auth method for binding rule, create a new rule instead");
      }
    }
    for (const r of rules) {
      const before = bindingRules.get(r.ID);
      if (before && sameBindingRule(before, r)) continue;
      const spec = before ? { ...r, CreateTime: before.CreateTime } : r;
      ctx.put(bindingRules, stamped(spec, before?.CreateIndex ?? ctx.index, ctx.index));
    }
  };

  /** Nomad deletes all or none: one name that is not there refuses the whole event. */
  const deleteAll = <R extends IndexedRow>(
    ctx: ApplyContext,
    table: Table<R>,
    keys: readonly string[],
    what: string,
  ) => {
    if (keys.length === 0) return ctx.reject(400, `must specify as least one ${what}`);
    const seen = new Set<string>();
    for (const key of keys) {
      if (!table.has(key) && !seen.has(key)) return ctx.reject(404, `ACL ${what} not found`);
      seen.add(key);
    }
    for (const key of seen) ctx.delete(table, key);
  };

  const projection: Projection = {
    name: "acl-sso",
    version: 1,
    tables: [authMethods, bindingRules],
    handles: new Set([
      "ACLAuthMethodsUpserted",
      "ACLAuthMethodsDeleted",
      "ACLBindingRulesUpserted",
      "ACLBindingRulesDeleted",
    ]),
    evolve(ctx, event) {
      const e = event as ACLEvent;
      switch (e.type) {
        case "ACLAuthMethodsUpserted":
          return upsertMethods(ctx, e.data.AuthMethods);
        case "ACLAuthMethodsDeleted":
          return deleteAll(ctx, authMethods, e.data.Names, "auth method");
        case "ACLBindingRulesUpserted":
          return upsertRules(ctx, e.data.BindingRules, e.data.AllowMissingAuthMethods);
        case "ACLBindingRulesDeleted":
          return deleteAll(ctx, bindingRules, e.data.IDs, "binding rule");
      }
    },
  };
  return { projection, authMethods, bindingRules };
}
