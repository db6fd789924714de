import { afterEach, describe, expect, it } from "vitest";
import { startTestServer, type TestServer } from "../../server-harness.ts";

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

const running: TestServer[] = [];
afterEach(async () => {
  for (const s of running.splice(0)) await s.stop();
});

/**
 * A server with ACLs enabled and two auth methods, calling with a management
 * token once the bootstrap endpoint exists (before ACL enforcement is wired,
 * none is needed).
 */
async function start(args: string[] = ["--acl-enabled"]) {
  const server = await startTestServer({ args });
  running.push(server);
  let headers: Record<string, string> = {};
  const boot = await server.call("/v1/acl/bootstrap", { method: "POST" });
  if (boot.status === 200)
    headers = { "X-Nomad-Token": ((await boot.json()) as { SecretID: string }).SecretID };
  const call = (path: string, method = "GET", body?: unknown) =>
    server.call(path, { method, headers, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
  for (const Name of ["okta", "github"]) {
    const res = await call("/v1/acl/auth-method", "PUT", {
      Name,
      Type: "JWT",
      TokenLocality: "local",
      MaxTokenTTL: "1h",
      Config: { JWKSURL: "https://idp.example.com/keys" },
    });
    if (res.status !== 200) throw new Error(`auth method ${Name}: ${res.status} ${await res.text()}`);
  }
  return { server, call };
}

type Json = Record<string, unknown>;

const engineers = {
  Description: "engineers read",
  AuthMethod: "okta",
  Selector: '"engineering" in list.groups',
  BindType: "policy",
  BindName: "readers",
};

describe("/v1/acl/binding-rule", () => {
  it("creates, reads, lists, updates and deletes a rule in Nomad 1.6.1's shapes", async () => {
    const { server, call } = await start();
    const created = await call("/v1/acl/binding-rule", "POST", engineers);
    expect(created.status).toBe(200);
    const rule = (await created.json()) as Json;
    expect(Object.keys(rule)).toEqual([
      "ID",
      "Description",
      "AuthMethod",
      "Selector",
      "BindType",
      "BindName",
      "Hash",
      "CreateTime",
      "ModifyTime",
      "CreateIndex",
      "ModifyIndex",
    ]);
    expect(rule).toMatchObject(engineers);
    expect(rule.ID).toMatch(UUID);
    expect(rule.Hash).toMatch(/^[A-Za-z0-9+/]{43}=$/);
    expect(created.headers.get("x-nomad-index")).toBe(String(rule.ModifyIndex));
    expect(server.log.lastIndex()).toBe(rule.ModifyIndex);

    const list = await call("/v1/acl/binding-rules");
    expect(await list.json()).toEqual([
      {
        ID: rule.ID,
        Description: "engineers read",
        AuthMethod: "okta",
        Hash: rule.Hash,
        CreateIndex: rule.CreateIndex,
        ModifyIndex: rule.ModifyIndex,
      },
    ]);
    expect(await (await call(`/v1/acl/binding-rule/${rule.ID}`)).json()).toEqual(rule);

    // The path's ID stands in for the body's; BindType, BindName and
    // AuthMethod left empty are kept, Description and Selector taken as sent.
    const res = await call(`/v1/acl/binding-rule/${rule.ID}`, "PUT", { Description: "everyone reads" });
    expect(res.status).toBe(200);
    const updated = (await res.json()) as Json;
    expect(updated).toMatchObject({
      ID: rule.ID,
      Description: "everyone reads",
      AuthMethod: "okta",
      Selector: "",
      BindType: "policy",
      BindName: "readers",
      CreateIndex: rule.CreateIndex,
      CreateTime: rule.CreateTime,
    });
    expect(updated.ModifyIndex).toBeGreaterThan(rule.ModifyIndex as number);
    expect(updated.Hash).not.toBe(rule.Hash);

    const del = await call(`/v1/acl/binding-rule/${rule.ID}`, "DELETE");
    expect(del.status).toBe(200);
    const gone = await call(`/v1/acl/binding-rule/${rule.ID}`);
    expect(gone.status).toBe(404);
    expect(await gone.text()).toBe("ACL binding rule not found");
    expect(await (await call("/v1/acl/binding-rules")).json()).toEqual([]);
  });

  it("answers invalid rules 400 naming the problem, and appends nothing", async () => {
    const { server, call } = await start();
    const before = server.log.lastIndex();
    const cases: [unknown, RegExp | string][] = [
      [
        { ...engineers, Selector: '"engineering" in ' },
        /^binding rule 0 invalid: 1 error occurred:\n\t\* selector is invalid: 1:18 \(17\): rule "match": Invalid selector\n\n$/,
      ],
      [
        { ...engineers, BindType: "group" },
        'binding rule 0 invalid: 1 error occurred:\n\t* unsupported bind type: "group"\n\n',
      ],
      [
        { ...engineers, BindType: "management" },
        "binding rule 0 invalid: 1 error occurred:\n\t* bind name should be empty\n\n",
      ],
      [
        { Description: "x".repeat(257), BindType: "role" },
        "binding rule 0 invalid: 3 errors occurred:\n\t* auth method is missing\n\t* description longer than 256\n\t* bind name is missing\n\n",
      ],
      [{ ...engineers, AuthMethod: "nope" }, "ACL auth method nope not found"],
      [
        { ...engineers, ID: "5b3e9a1c-2d4f-4e6a-8b7c-9d0e1f2a3b4c" },
        "cannot find binding rule 5b3e9a1c-2d4f-4e6a-8b7c-9d0e1f2a3b4c",
      ],
      [{ ...engineers, BindName: 7 }, "body.BindName must be string"],
    ];
    for (const [body, message] of cases) {
      const res = await call("/v1/acl/binding-rule", "PUT", body);
      expect(res.status, String(message)).toBe(400);
      const text = await res.text();
      if (typeof message === "string") expect(text).toBe(message);
      else expect(text).toMatch(message);
    }
    expect(server.log.lastIndex()).toBe(before);
  });

  it("keeps a rule on its auth method and its ID on its path", async () => {
    const { server, call } = await start();
    const rule = (await (await call("/v1/acl/binding-rule", "PUT", engineers)).json()) as Json;
    const before = server.log.lastIndex();
    const moved = await call(`/v1/acl/binding-rule/${rule.ID}`, "PUT", {
      ...engineers,
      AuthMethod: "github",
    });
    expect(moved.status).toBe(400);
    expect(await moved.text()).toBe("cannot update auth method for binding rule, create a new rule instead");
    const mismatch = await call("/v1/acl/binding-rule/other-id", "PUT", { ...engineers, ID: rule.ID });
    expect(mismatch.status).toBe(400);
    expect(await mismatch.text()).toBe("ACL binding rule ID does not match request path");
    expect(server.log.lastIndex()).toBe(before);
  });

  it("leaves a method's rules when the method is deleted, and refuses to delete a missing rule", async () => {
    const { server, call } = await start();
    const rule = (await (await call("/v1/acl/binding-rule", "PUT", engineers)).json()) as Json;
    expect((await call("/v1/acl/auth-method/okta", "DELETE")).status).toBe(200);
    expect((await call(`/v1/acl/binding-rule/${rule.ID}`)).status).toBe(200);
    const before = server.log.lastIndex();
    const missing = await call("/v1/acl/binding-rule/nope", "DELETE");
    expect(missing.status).toBe(404);
    expect(await missing.text()).toBe("ACL binding rule not found");
    const empty = await call("/v1/acl/binding-rule/", "DELETE");
    expect(empty.status).toBe(400);
    expect(await empty.text()).toBe("missing ACL binding rule ID");
    expect(server.log.lastIndex()).toBe(before);
  });

  it("answers 400 ACL support disabled when ACLs are off", async () => {
    const server = await startTestServer({ args: [] });
    running.push(server);
    for (const [path, method] of [
      ["/v1/acl/binding-rules", "GET"],
      ["/v1/acl/binding-rule", "PUT"],
      ["/v1/acl/binding-rule/x", "GET"],
      ["/v1/acl/binding-rule/x", "DELETE"],
    ] as const) {
      const res = await server.call(path, {
        method,
        ...(method === "PUT" ? { body: JSON.stringify(engineers) } : {}),
      });
      expect(res.status, `${method} ${path}`).toBe(400);
      expect(await res.text()).toBe("ACL support disabled");
    }
  });
});
