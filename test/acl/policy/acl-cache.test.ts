import { describe, expect, it } from "vitest";
import { AclCache, type CachedPolicy } from "../../../src/acl/policy/acl-cache.ts";
import { MANAGEMENT_ACL } from "../../../src/acl/policy/compile-acl.ts";
import { parsePolicyJson } from "../../../src/acl/policy/parse-policy.ts";

const row = (Name: string, ModifyIndex: number, rules: string): CachedPolicy => ({
  Name,
  ModifyIndex,
  Parsed: parsePolicyJson(rules),
});

const readDefault = row("read", 10, `{"namespace": {"default": {"policy": "read"}}}`);
const writeProd = row("write", 11, `{"namespace": {"prod": {"policy": "write"}}}`);

describe("AclCache", () => {
  it("compiles the policies together", () => {
    const acl = new AclCache().get([readDefault, writeProd]);
    expect(acl.allowNamespaceOperation("default", "read-job")).toBe(true);
    expect(acl.allowNamespaceOperation("default", "submit-job")).toBe(false);
    expect(acl.allowNamespaceOperation("prod", "submit-job")).toBe(true);
  });

  it("keys by the set of (Name, ModifyIndex): order and duplicates do not matter", () => {
    const cache = new AclCache();
    const a = cache.get([readDefault, writeProd]);
    expect(cache.get([writeProd, readDefault])).toBe(a);
    expect(cache.get([writeProd, readDefault, writeProd])).toBe(a);
    expect(cache.length).toBe(1);
  });

  it("compiles anew when a policy was written again (new ModifyIndex)", () => {
    const cache = new AclCache();
    const before = cache.get([readDefault]);
    const rewritten = row("read", 12, `{"namespace": {"default": {"policy": "deny"}}}`);
    const after = cache.get([rewritten]);
    expect(after).not.toBe(before);
    expect(after.allowNamespaceOperation("default", "read-job")).toBe(false);
    expect(before.allowNamespaceOperation("default", "read-job")).toBe(true);
  });

  it("evicts the least recently used", () => {
    const cache = new AclCache(2);
    const a = cache.get([readDefault]);
    const b = cache.get([writeProd]);
    expect(cache.get([readDefault])).toBe(a);
    cache.get([readDefault, writeProd]);
    expect(cache.length).toBe(2);
    expect(cache.get([readDefault])).toBe(a);
    expect(cache.get([writeProd])).not.toBe(b);
  });

  it("no policies: an ACL that allows nothing", () => {
    const acl = new AclCache().get([]);
    expect(acl.isManagement).toBe(false);
    expect(acl.allowNamespaceOperation("*", "read-job")).toBe(false);
    expect(acl.allowAgentRead()).toBe(false);
  });

  it("management is the singleton", () => {
    expect(new AclCache().management).toBe(MANAGEMENT_ACL);
    expect(MANAGEMENT_ACL.isManagement).toBe(true);
  });

  it("refuses a stored policy that is not a parsed policy, naming it", () => {
    const cache = new AclCache();
    expect(() => cache.get([{ Name: "broken", ModifyIndex: 3, Parsed: { Namespaces: "x" } }])).toThrow(
      /policy broken\.Namespaces: expected a list or null/,
    );
    expect(() =>
      cache.get([
        {
          Name: "caps",
          ModifyIndex: 3,
          Parsed: {
            ...readDefault.Parsed!,
            Namespaces: [{ Name: "a", Policy: "", Capabilities: [1], Variables: null }],
          },
        },
      ]),
    ).toThrow(/policy caps\.Namespaces\[0\]\.Capabilities: expected strings or null/);
  });

  it("refuses a size below one", () => {
    expect(() => new AclCache(0)).toThrow(RangeError);
  });
});
