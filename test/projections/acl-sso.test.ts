import { pino } from "pino";
import { describe, expect, it } from "vitest";
import { aclSsoProjection, BY_AUTH_METHOD } from "../../projections/acl-sso.ts";
import { authMethodHash, bindingRuleHash } from "../../src/acl/sso/hash.ts";
import { EnvelopeCodec } from "../../src/codec/envelope-codec.ts";
import { MemoryLog } from "../../src/log/memory-log.ts";
import { Store } from "../../src/store/store.ts";
import { type Draft, writeEvents } from "../../src/store/writer.ts";
import type {
  ACLAuthMethodConfigSpec,
  ACLAuthMethodSpec,
  ACLBindingRuleSpec,
  ACLBindingRulesUpserted,
} from "../../streams/acl.ts";
import { allSchemas } from "../../streams/index.ts";
import { tester } from "../api/eval-fixtures.ts";

const codec = new EnvelopeCodec(allSchemas);
const HOUR = 3_600_000_000_000;

async function newStore(log = new MemoryLog()) {
  const sso = aclSsoProjection();
  const store = new Store({ log, codec, projections: [sso.projection], logger: pino({ level: "silent" }) });
  await store.start();
  const write = async (...drafts: Draft[]) =>
    (await writeEvents(store, 1_763_800_000_000, tester, drafts)).outcomes;
  return { store, log, write, ...sso };
}

function config(fields: Partial<ACLAuthMethodConfigSpec> = {}): ACLAuthMethodConfigSpec {
  return {
    JWTValidationPubKeys: [],
    JWKSURL: "",
    JWKSCACert: "",
    OIDCDiscoveryURL: "https://idp.example",
    OIDCClientID: "nomad",
    OIDCClientSecretSealed: null,
    OIDCScopes: [],
    BoundAudiences: ["nomad"],
    BoundIssuer: [],
    AllowedRedirectURIs: [],
    DiscoveryCaPem: [],
    SigningAlgs: [],
    ExpirationLeeway: 0,
    NotBeforeLeeway: 0,
    ClockSkewLeeway: 0,
    ClaimMappings: {},
    ListClaimMappings: {},
    ...fields,
  };
}

function method(Name: string, fields: Partial<ACLAuthMethodSpec> = {}): ACLAuthMethodSpec {
  const m = {
    Name,
    Type: "OIDC" as const,
    TokenLocality: "local" as const,
    MaxTokenTTL: HOUR,
    Default: false,
    Config: config(),
    CreateTime: "2025-11-22T08:00:00Z",
    ModifyTime: "2025-11-22T08:00:00Z",
    ...fields,
  };
  return { ...m, Hash: authMethodHash(m) };
}

function rule(ID: string, AuthMethod: string, fields: Partial<ACLBindingRuleSpec> = {}): ACLBindingRuleSpec {
  const r = {
    ID,
    Description: "",
    AuthMethod,
    Selector: "",
    BindType: "policy" as const,
    BindName: "readers",
    CreateTime: "2025-11-22T08:00:00Z",
    ModifyTime: "2025-11-22T08:00:00Z",
    ...fields,
  };
  return { ...r, Hash: bindingRuleHash(r) };
}

const upsertMethods = (...AuthMethods: ACLAuthMethodSpec[]): Draft => ({
  type: "ACLAuthMethodsUpserted",
  v: 1,
  data: { AuthMethods },
});
const deleteMethods = (...Names: string[]): Draft => ({
  type: "ACLAuthMethodsDeleted",
  v: 1,
  data: { Names },
});
const upsertRules = (BindingRules: ACLBindingRuleSpec[], AllowMissingAuthMethods = false): Draft => {
  const data: ACLBindingRulesUpserted = { BindingRules, AllowMissingAuthMethods };
  return { type: "ACLBindingRulesUpserted", v: 1, data };
};
const deleteRules = (...IDs: string[]): Draft => ({ type: "ACLBindingRulesDeleted", v: 1, data: { IDs } });

describe("acl-sso projection: auth methods", () => {
  it("stores a method at the event's index and keeps CreateIndex and CreateTime on update", async () => {
    const { write, authMethods, store } = await newStore();
    expect(await write(upsertMethods(method("okta")))).toMatchObject([{ status: "applied" }]);
    const created = authMethods.get("okta")!;
    expect(created).toMatchObject({ Name: "okta", CreateIndex: 1, ModifyIndex: 1 });

    const changed = method("okta", { MaxTokenTTL: 2 * HOUR, CreateTime: "2025-11-23T00:00:00Z" });
    await write(upsertMethods(changed));
    expect(authMethods.get("okta")).toMatchObject({
      MaxTokenTTL: 2 * HOUR,
      CreateIndex: 1,
      ModifyIndex: 2,
      CreateTime: "2025-11-22T08:00:00Z",
    });
    expect(authMethods.index).toBe(store.appliedIndex);
  });

  it("writes nothing for an update that changes nothing, as Nomad's state store", async () => {
    const { write, authMethods } = await newStore();
    await write(upsertMethods(method("okta")));
    const outcomes = await write(upsertMethods(method("okta", { ModifyTime: "2025-11-24T00:00:00Z" })));
    expect(outcomes).toMatchObject([{ status: "applied" }]);
    expect(authMethods.get("okta")).toMatchObject({ ModifyIndex: 1, ModifyTime: "2025-11-22T08:00:00Z" });
    expect(authMethods.index).toBe(1);
  });

  it("still writes a change to a config field Nomad's hash leaves out", async () => {
    const { write, authMethods } = await newStore();
    await write(upsertMethods(method("okta")));
    await write(upsertMethods(method("okta", { Config: config({ JWKSURL: "https://idp.example/keys" }) })));
    expect(authMethods.get("okta")).toMatchObject({
      ModifyIndex: 2,
      Config: { JWKSURL: "https://idp.example/keys" },
    });
  });

  it("refuses a second default method, and a batch that would hold two", async () => {
    const { write, authMethods } = await newStore();
    await write(upsertMethods(method("a", { Default: true })));
    const [second] = await write(upsertMethods(method("b", { Default: true })));
    expect(second).toMatchObject({
      status: "rejected",
      code: 400,
      reason: "default ACL auth method already exists: a",
    });
    expect(authMethods.has("b")).toBe(false);

    // The same method may stay default; another may take over once it gives it up.
    expect(await write(upsertMethods(method("a", { Default: true, MaxTokenTTL: 2 * HOUR })))).toMatchObject([
      { status: "applied" },
    ]);
    expect(
      await write(upsertMethods(method("a", { Default: false }), method("b", { Default: true }))),
    ).toMatchObject([{ status: "applied" }]);
    expect(authMethods.get("b")?.Default).toBe(true);

    const [both] = await write(upsertMethods(method("c", { Default: true }), method("d", { Default: true })));
    expect(both).toMatchObject({ status: "rejected", reason: "default ACL auth method already exists: b" });
  });

  it("checks name, type and locality again at apply, writing nothing for any bad method of the batch", async () => {
    const { write, authMethods } = await newStore();
    const bad = { ...method("ok"), Name: "no spaces" };
    const [outcome] = await write(upsertMethods(method("fine"), bad));
    expect(outcome).toMatchObject({ status: "rejected", code: 400 });
    expect((outcome as { reason: string }).reason).toBe(
      "auth method 1 invalid: 1 error occurred:\n\t* invalid name 'no spaces'\n\n",
    );
    expect(authMethods.size).toBe(0);
    const [type] = await write(upsertMethods({ ...method("x"), Type: "SAML" as "OIDC" }));
    expect((type as { reason: string }).reason).toContain("invalid token type 'SAML'");
  });

  it("deletes all named methods or none, and leaves their binding rules", async () => {
    const { write, authMethods, bindingRules } = await newStore();
    await write(upsertMethods(method("a"), method("b")));
    await write(upsertRules([rule("r1", "a")]));
    const [missing] = await write(deleteMethods("a", "nope"));
    expect(missing).toMatchObject({ status: "rejected", code: 404, reason: "ACL auth method not found" });
    expect(authMethods.size).toBe(2);

    expect(await write(deleteMethods("a"))).toMatchObject([{ status: "applied" }]);
    expect(authMethods.has("a")).toBe(false);
    expect(bindingRules.get("r1")?.AuthMethod).toBe("a");
  });
});

describe("acl-sso projection: binding rules", () => {
  it("files rules by auth method and keeps CreateIndex on update", async () => {
    const { write, bindingRules } = await newStore();
    await write(upsertMethods(method("a"), method("b")));
    await write(upsertRules([rule("r1", "a"), rule("r2", "b"), rule("r3", "a")]));
    expect(bindingRules.by(BY_AUTH_METHOD, "a").map((r) => r.ID)).toEqual(["r1", "r3"]);
    await write(upsertRules([rule("r1", "a", { Selector: '"admins" in list.groups' })]));
    expect(bindingRules.get("r1")).toMatchObject({
      CreateIndex: 2,
      ModifyIndex: 3,
      Selector: '"admins" in list.groups',
    });
    // Unchanged: no write.
    await write(upsertRules([rule("r2", "b")]));
    expect(bindingRules.get("r2")?.ModifyIndex).toBe(2);
    expect(bindingRules.index).toBe(3);
  });

  it("refuses a rule whose method is gone, unless the event allows it (replication)", async () => {
    const { write, bindingRules } = await newStore();
    const [refused] = await write(upsertRules([rule("r1", "gone")]));
    expect(refused).toMatchObject({
      status: "rejected",
      code: 400,
      reason: "ACL binding rule insert failed: ACL auth method not found",
    });
    expect(bindingRules.size).toBe(0);
    expect(await write(upsertRules([rule("r1", "gone")], true))).toMatchObject([{ status: "applied" }]);
    expect(bindingRules.has("r1")).toBe(true);
  });

  it("refuses to move a rule to another method, and a malformed rule", async () => {
    const { write, bindingRules } = await newStore();
    await write(upsertMethods(method("a"), method("b")));
    await write(upsertRules([rule("r1", "a")]));
    const [moved] = await write(upsertRules([rule("r1", "b")]));
    expect(moved).toMatchObject({
      status: "rejected",
      reason: "cannot update auth method for binding rule, create a new rule instead",
    });
    const [management] = await write(
      upsertRules([rule("r2", "a", { BindType: "management", BindName: "x" })]),
    );
    expect((management as { reason: string }).reason).toContain("bind name should be empty");
    expect(bindingRules.size).toBe(1);
  });

  it("deletes all named rules or none", async () => {
    const { write, bindingRules } = await newStore();
    await write(upsertMethods(method("a")));
    await write(upsertRules([rule("r1", "a"), rule("r2", "a")]));
    const [missing] = await write(deleteRules("r1", "nope"));
    expect(missing).toMatchObject({ status: "rejected", code: 404, reason: "ACL binding rule not found" });
    expect(bindingRules.size).toBe(2);
    await write(deleteRules("r1", "r2"));
    expect(bindingRules.size).toBe(0);
  });

  it("replays the same log into the same tables", async () => {
    const first = await newStore();
    await first.write(
      upsertMethods(method("a", { Default: true })),
      upsertMethods(method("b", { Default: true })),
    );
    await first.write(upsertRules([rule("r1", "a"), rule("r2", "b")]), deleteRules("r2"), deleteMethods("b"));
    const again = await newStore(first.log);
    expect([...again.authMethods.all()]).toEqual([...first.authMethods.all()]);
    expect([...again.bindingRules.all()]).toEqual([...first.bindingRules.all()]);
    expect(again.authMethods.index).toBe(first.authMethods.index);
  });
});
