import { describe, expect, it } from "vitest";
import {
  ClaimsError,
  getClaim,
  interpolationVars,
  selectorData,
  stringifyClaim,
} from "../../../src/acl/login/claims.ts";

const mappings = (ClaimMappings: Record<string, string>, ListClaimMappings: Record<string, string> = {}) => ({
  ClaimMappings,
  ListClaimMappings,
});

describe("selectorData", () => {
  it("maps values and lists, stringifying as Nomad does", () => {
    const claims = {
      sub: "alice",
      admin: true,
      uid: 1234.9,
      neg: -7.5,
      groups: ["eng", "", "ops", 3],
      role: "solo",
      nested: { "a/b": { "x~y": "deep" }, arr: ["zero", "one"] },
    };
    const data = selectorData(
      mappings(
        {
          sub: "user",
          admin: "admin",
          uid: "uid",
          neg: "neg",
          "/nested/a~1b/x~0y": "deep",
          "/nested/arr/1": "second",
        },
        { groups: "groups", role: "roles", missing: "none" },
      ),
      claims,
    );
    expect({ ...data.value }).toEqual({
      user: "alice",
      admin: "true",
      uid: "1234",
      neg: "-7",
      deep: "deep",
      second: "one",
    });
    expect({ ...data.list }).toEqual({ groups: ["eng", "ops", "3"], roles: ["solo"] });
  });

  it("skips missing and null claims and pointers that lead nowhere", () => {
    const data = selectorData(
      mappings({ gone: "a", nil: "b", "/x/y": "c", "/arr/9": "d", "/arr/z": "e" }, { nil: "l" }),
      { nil: null, x: "scalar", arr: [1] },
    );
    expect(Object.keys(data.value)).toEqual([]);
    expect(Object.keys(data.list)).toEqual([]);
  });

  it("fails on a value mapping of an object and a list mapping of an object or with an object inside", () => {
    expect(() => selectorData(mappings({ obj: "o" }), { obj: { a: 1 } })).toThrow(
      new ClaimsError("error converting claim 'obj' to string from unknown type map[string]interface {}"),
    );
    expect(() => selectorData(mappings({}, { obj: "o" }), { obj: { a: 1 } })).toThrow(
      '"obj" list claim could not be converted to string list',
    );
    expect(() => selectorData(mappings({}, { l: "o" }), { l: ["a", { b: 1 }] })).toThrow(
      'value {"b":1} in "l" list claim could not be parsed as string',
    );
  });

  it("merges userinfo over the ID token but keeps the ID token's iss and sub", () => {
    const data = selectorData(
      mappings({ iss: "iss", sub: "sub", email: "email", name: "name" }),
      { iss: "https://idp", sub: "alice", name: "Alice" },
      { iss: "https://evil", sub: "mallory", email: "a@example.com", name: "Alice A." },
    );
    expect({ ...data.value }).toEqual({
      iss: "https://idp",
      sub: "alice",
      email: "a@example.com",
      name: "Alice A.",
    });
  });

  it("reads mappings sorted by source, so two sources for one target give the same answer every time", () => {
    const a = selectorData(mappings({ b: "t", a: "t" }), { a: "from-a", b: "from-b" });
    const b = selectorData(mappings({ a: "t", b: "t" }), { a: "from-a", b: "from-b" });
    expect(a.value.t).toBe("from-b");
    expect(b.value.t).toBe("from-b");
  });

  it("treats __proto__ and friends as plain claim names", () => {
    const claims = JSON.parse('{"__proto__": "p", "constructor": "c"}') as Record<string, unknown>;
    const names = JSON.parse('{"__proto__": "x", "constructor": "y", "toString": "z"}') as Record<
      string,
      string
    >;
    const data = selectorData(mappings(names), claims);
    expect(data.value.x).toBe("p");
    expect(data.value.y).toBe("c");
    expect(Object.hasOwn(data.value, "z")).toBe(false);
  });
});

describe("interpolationVars", () => {
  it("has value.<target> for every mapping, empty when the claim was missing", () => {
    const config = mappings({ sub: "user", team: "team" });
    const vars = interpolationVars(config, selectorData(config, { sub: "Alice" }));
    expect({ ...vars }).toEqual({ "value.user": "Alice", "value.team": "" });
  });
});

describe("stringifyClaim and getClaim", () => {
  it("truncates numbers to int64 text without exponents", () => {
    expect(stringifyClaim(1e21)).toBe("-9223372036854775808");
    expect(stringifyClaim(2 ** 53)).toBe("9007199254740992");
    expect(stringifyClaim(-0.9)).toBe("0");
    expect(stringifyClaim(null)).toBeUndefined();
    expect(stringifyClaim([1])).toBeUndefined();
  });

  it("reads a JSON pointer only when the name starts with /", () => {
    expect(getClaim({ "a/b": 1, a: { b: 2 } }, "a/b")).toBe(1);
    expect(getClaim({ "a/b": 1, a: { b: 2 } }, "/a/b")).toBe(2);
    expect(getClaim({ "": { "": 3 } }, "//")).toBe(3);
    expect(getClaim({ a: [1, 2] }, "/a/-1")).toBeUndefined();
  });
});
