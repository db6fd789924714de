import { compileFilter } from "../../query/filter/index.ts";
import { BindNameError, interpolateBindName } from "./bind-name.ts";
import type { AuthClaims } from "./claims.ts";

/**
 * Binding rules → what the login token gets (Nomad's `lib/auth/binder.go`):
 * every rule of the auth method whose selector matches the claims binds a
 * role, a policy, or management.
 */

/** The fields of a binding rule the binder reads (streams/acl.ts ACLBindingRuleSpec). */
export interface BindingRuleLike {
  readonly ID: string;
  readonly Selector: string;
  readonly BindType: string;
  readonly BindName: string;
}

/** What the binder looks up, as of one moment of the tables. */
export interface BinderState {
  bindingRules(authMethod: string): Iterable<BindingRuleLike>;
  /** The role of that name, if any. */
  roleByName(name: string): { readonly ID: string } | undefined;
  policyExists(name: string): boolean;
}

/** The claims as selectors see them, and the variables bind names interpolate (claims.ts). */
export interface LoginIdentity {
  readonly claims: AuthClaims;
  readonly vars: Readonly<Record<string, string>>;
}

export interface Bindings {
  readonly management: boolean;
  /** Role links by ID, in rule order (duplicates are left to token issue, which removes them as Nomad does). */
  readonly roles: readonly { readonly ID: string }[];
  /** Policy names, in rule order. */
  readonly policies: readonly string[];
}

/** A rule whose BindName cannot give a valid name; the login fails. */
export class BindError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "BindError";
  }
}

/** Nomad's ValidPolicyName and ValidACLRoleName: the computed name must be one. */
const ACL_NAME = /^[a-zA-Z0-9-]{1,128}$/;

/**
 * Nomad's Binder.Bind. Rules are taken in ID order, the order of Nomad's
 * `auth_method` index, so the result never depends on insertion order.
 * A `management` rule that matches ends the walk: the token is a management
 * token and nothing else. Roles and policies that do not exist are left out
 * silently (they may be created later; the rule is not wrong).
 */
export function bind(state: BinderState, authMethod: string, identity: LoginIdentity): Bindings {
  const rules = [...state.bindingRules(authMethod)].sort((a, b) => (a.ID < b.ID ? -1 : a.ID > b.ID ? 1 : 0));
  const matching = rules.filter((r) => selectorMatches(r.Selector, identity.claims));
  const roles: { ID: string }[] = [];
  const policies: string[] = [];
  for (const rule of matching) {
    const name = computeBindName(rule, identity.vars);
    switch (rule.BindType) {
      case "role": {
        const role = state.roleByName(name);
        if (role) roles.push({ ID: role.ID });
        break;
      }
      case "policy":
        if (state.policyExists(name)) policies.push(name);
        break;
      case "management":
        return { management: true, roles: [], policies: [] };
    }
  }
  return { management: false, roles, policies };
}

/** Nomad's Bindings.None combined with the management check of the login RPCs. */
export function bindsNothing(b: Bindings): boolean {
  return !b.management && b.roles.length === 0 && b.policies.length === 0;
}

/**
 * Nomad's doesSelectorMatch: an empty selector matches everything; one that
 * does not parse, or fails to evaluate over these claims, matches nothing.
 */
export function selectorMatches(selector: string, claims: AuthClaims): boolean {
  if (selector === "") return true;
  try {
    return compileFilter(selector).matches(claims);
  } catch {
    return false;
  }
}

function computeBindName(rule: BindingRuleLike, vars: Readonly<Record<string, string>>): string {
  let name: string;
  try {
    name = interpolateBindName(rule.BindName, vars, true);
  } catch (err) {
    if (!(err instanceof BindNameError)) throw err;
    throw new BindError(
      `cannot compute ${JSON.stringify(rule.BindType)} bind name for bind target: ${err.message}`,
    );
  }
  switch (rule.BindType) {
    case "role":
    case "policy":
      if (!ACL_NAME.test(name)) {
        throw new BindError(
          `computed ${JSON.stringify(rule.BindType)} bind name for bind target is invalid: ${JSON.stringify(name)}`,
        );
      }
      return name;
    case "management":
      return name;
    default:
      throw new BindError(
        `cannot compute ${JSON.stringify(rule.BindType)} bind name for bind target: unknown binding rule bind type: ${rule.BindType}`,
      );
  }
}
