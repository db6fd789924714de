import { describe, expect, it } from "vitest";
import { BindNameError, interpolateBindName } from "../../../src/acl/login/bind-name.ts";
import {
  BindError,
  type BinderState,
  type BindingRuleLike,
  bind,
  bindsNothing,
  selectorMatches,
} from "../../../src/acl/login/binder.ts";
import { interpolationVars, selectorData } from "../../../src/acl/login/claims.ts";

// biome-ignore-start lint/suspicious/noTemplateCurlyInString: bind names are HIL templates, written literally
describe("interpolateBindName", () => {
  const vars = { "value.team": "Platform", "value.empty": "" };

  it("substitutes variables, lowercased for bind names", () => {
    expect(interpolateBindName("team-${value.team}", vars, true)).toBe("team-platform");
    expect(interpolateBindName("${ value.team }-x", vars, false)).toBe("Platform-x");
    expect(interpolateBindName("a${value.empty}b", vars, true)).toBe("ab");
  });

  it("reads $$ as a literal $, and leaves a template without ${ alone", () => {
    expect(interpolateBindName("$${value.team}-${value.team}", vars, true)).toBe("${value.team}-platform");
    expect(interpolateBindName("a$$b", vars, true)).toBe("a$$b");
  });

  it("refuses unknown variables, unterminated and unsupported expressions", () => {
    expect(() => interpolateBindName("${value.nope}", vars, true)).toThrow(
      new BindNameError("unknown variable accessed: value.nope"),
    );
    expect(() => interpolateBindName("x-${value.team", vars, true)).toThrow("unterminated interpolation");
    expect(() => interpolateBindName('${value.team == "a" ? "b" : "c"}', vars, true)).toThrow(
      "a bind name may only interpolate variables",
    );
  });
});

interface World {
  rules: (BindingRuleLike & { AuthMethod: string })[];
  roles: Record<string, string>;
  policies: string[];
}

function state(w: World): BinderState {
  return {
    bindingRules: (m) => w.rules.filter((r) => r.AuthMethod === m),
    roleByName: (name) => (w.roles[name] ? { ID: w.roles[name] } : undefined),
    policyExists: (name) => w.policies.includes(name),
  };
}

const config = {
  ClaimMappings: { sub: "user", team: "team", admin: "admin" },
  ListClaimMappings: { groups: "groups" },
};

function identity(claims: Record<string, unknown>) {
  const data = selectorData(config, claims);
  return { claims: data, vars: interpolationVars(config, data) };
}

const rule = (
  ID: string,
  BindType: string,
  BindName: string,
  Selector = "",
  AuthMethod = "sso",
): BindingRuleLike & { AuthMethod: string } => ({ ID, AuthMethod, BindType, BindName, Selector });

describe("bind", () => {
  const world: World = {
    rules: [
      rule("3", "policy", "readers"),
      rule("1", "policy", "team-${value.team}", '"eng" in list.groups'),
      rule("2", "role", "ops-role", 'value.user == "alice"'),
      rule("4", "policy", "ghost-policy"),
      rule("5", "role", "ghost-role"),
      rule("6", "policy", "never", "this is not a selector ((("),
      rule("7", "policy", "never", "nosuchfield == 1"),
      rule("8", "policy", "readers", "", "other-method"),
    ],
    roles: { "ops-role": "role-id-1" },
    policies: ["readers", "team-platform", "never"],
  };

  it("binds what matching rules name, in rule ID order, skipping what does not exist", () => {
    const b = bind(state(world), "sso", identity({ sub: "alice", team: "Platform", groups: ["eng"] }));
    expect(b).toEqual({
      management: false,
      roles: [{ ID: "role-id-1" }],
      policies: ["team-platform", "readers"],
    });
  });

  it("evaluates selectors over the claims: no match, no binding", () => {
    const b = bind(state(world), "sso", identity({ sub: "bob", team: "platform", groups: ["sales"] }));
    expect(b).toEqual({ management: false, roles: [], policies: ["readers"] });
  });

  it("stops at a management rule and binds nothing else", () => {
    const w = { ...world, rules: [...world.rules, rule("0", "management", "", "value.admin == true")] };
    expect(bind(state(w), "sso", identity({ sub: "alice", admin: true, groups: ["eng"] }))).toEqual({
      management: true,
      roles: [],
      policies: [],
    });
    expect(bind(state(w), "sso", identity({ sub: "alice", admin: false })).management).toBe(false);
  });

  it("reports when nothing matched", () => {
    const w: World = { rules: [rule("1", "policy", "ghost")], roles: {}, policies: [] };
    expect(bindsNothing(bind(state(w), "sso", identity({ sub: "x" })))).toBe(true);
    expect(bindsNothing(bind(state(world), "sso", identity({ sub: "x" })))).toBe(false);
  });

  it("fails when a computed name is not a valid name, or the template cannot be evaluated", () => {
    const w: World = { rules: [rule("1", "policy", "team-${value.team}")], roles: {}, policies: [] };
    expect(() => bind(state(w), "sso", identity({ team: "a b" }))).toThrow(
      new BindError('computed "policy" bind name for bind target is invalid: "team-a b"'),
    );
    expect(() => bind(state(w), "sso", identity({}))).not.toThrow();
    const bad: World = { rules: [rule("1", "role", "${value.unknown}")], roles: {}, policies: [] };
    expect(() => bind(state(bad), "sso", identity({}))).toThrow(
      'cannot compute "role" bind name for bind target: unknown variable accessed: value.unknown',
    );
  });
});

describe("selectorMatches", () => {
  it("matches everything when empty and nothing when it does not parse", () => {
    const { claims } = identity({ sub: "alice", groups: ["eng"] });
    expect(selectorMatches("", claims)).toBe(true);
    expect(selectorMatches('value.user == "alice" and "eng" in list.groups', claims)).toBe(true);
    expect(selectorMatches('value.user != "alice"', claims)).toBe(false);
    expect(selectorMatches('"ops" in list.missing', claims)).toBe(false);
    expect(selectorMatches("value.user ==", claims)).toBe(false);
  });
});
// biome-ignore-end lint/suspicious/noTemplateCurlyInString: bind names are HIL templates, written literally
