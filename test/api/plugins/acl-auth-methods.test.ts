import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { startTestServer, type TestServer } from "../../server-harness.ts";

const SECRET = "oidc-client-secret-7f3a9c2e5b1d";
const OTHER_SECRET = "a-different-client-secret-40e1";

const running: TestServer[] = [];
afterEach(async () => {
  for (const s of running.splice(0)) await s.stop();
});

/**
 * A server with ACLs enabled, calling with a management token once the
 * bootstrap endpoint exists (before ACL enforcement is wired, none is needed).
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
  return { server, call };
}

async function rawFiles(dir: string): Promise<{ path: string; bytes: Buffer }[]> {
  const out: { path: string; bytes: Buffer }[] = [];
  for (const entry of await readdir(dir, { withFileTypes: true, recursive: true })) {
    if (!entry.isFile()) continue;
    const path = join(entry.parentPath, entry.name);
    out.push({ path, bytes: await readFile(path) });
  }
  return out;
}

function okta(fields: Record<string, unknown> = {}) {
  return {
    Name: "okta",
    Type: "OIDC",
    TokenLocality: "global",
    MaxTokenTTL: "1h",
    Default: false,
    Config: {
      OIDCDiscoveryURL: "https://idp.example.com",
      OIDCClientID: "nomad",
      OIDCClientSecret: SECRET,
      BoundAudiences: ["nomad"],
      AllowedRedirectURIs: ["http://localhost:4649/oidc/callback"],
      ClaimMappings: { email: "email" },
      ListClaimMappings: { groups: "groups" },
      ExpirationLeeway: "30s",
      NotBeforeLeeway: 2_000_000_000,
    },
    ...fields,
  };
}

type Json = Record<string, unknown>;

describe("/v1/acl/auth-method", () => {
  it("creates, reads, lists and deletes a method in Nomad 1.6.1's shapes", async () => {
    const { server, call } = await start();
    const created = await call("/v1/acl/auth-method", "PUT", okta());
    expect(created.status).toBe(200);
    const body = (await created.json()) as Json;
    expect(Object.keys(body)).toEqual([
      "MaxTokenTTL",
      "Name",
      "Type",
      "TokenLocality",
      "Default",
      "Config",
      "Hash",
      "CreateTime",
      "ModifyTime",
      "CreateIndex",
      "ModifyIndex",
    ]);
    expect(body).toMatchObject({
      MaxTokenTTL: "1h0m0s",
      Name: "okta",
      Type: "OIDC",
      TokenLocality: "global",
    });
    expect(body.Config).toMatchObject({
      ExpirationLeeway: "30s",
      NotBeforeLeeway: "2s",
      ClockSkewLeeway: "",
      OIDCClientSecret: SECRET,
      BoundAudiences: ["nomad"],
      SigningAlgs: null,
      ClaimMappings: { email: "email" },
    });
    expect(body.Hash).toMatch(/^[A-Za-z0-9+/]{43}=$/);
    expect(body.CreateTime).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/);
    expect(body.ModifyIndex).toBe(body.CreateIndex);
    expect(created.headers.get("x-nomad-index")).toBe(String(body.ModifyIndex));
    expect(server.log.lastIndex()).toBe(body.ModifyIndex);

    const list = await call("/v1/acl/auth-methods");
    expect(list.status).toBe(200);
    expect(await list.json()).toEqual([
      {
        Name: "okta",
        Type: "OIDC",
        Default: false,
        Hash: body.Hash,
        CreateIndex: body.CreateIndex,
        ModifyIndex: body.ModifyIndex,
      },
    ]);
    expect(list.headers.get("x-nomad-index")).toBe(String(body.ModifyIndex));

    const read = await call("/v1/acl/auth-method/okta");
    expect(read.status).toBe(200);
    expect(await read.json()).toEqual(body);

    const del = await call("/v1/acl/auth-method/okta", "DELETE");
    expect(del.status).toBe(200);
    expect(Number(del.headers.get("x-nomad-index"))).toBeGreaterThan(body.ModifyIndex as number);
    const gone = await call("/v1/acl/auth-method/okta");
    expect(gone.status).toBe(404);
    expect(await gone.text()).toBe("ACL auth-method not found");
    expect(await (await call("/v1/acl/auth-methods")).json()).toEqual([]);
  });

  it("keeps the client secret out of every file it writes", async () => {
    const { server, call } = await start();
    expect((await call("/v1/acl/auth-method", "POST", okta())).status).toBe(200);
    const changed = okta({ Config: { ...okta().Config, OIDCClientSecret: OTHER_SECRET } });
    expect((await call("/v1/acl/auth-method/okta", "PUT", changed)).status).toBe(200);
    const files = await rawFiles(server.dataDir);
    expect(files.length).toBeGreaterThan(0);
    for (const { path, bytes } of files) {
      expect(bytes.includes(SECRET), path).toBe(false);
      expect(bytes.includes(OTHER_SECRET), path).toBe(false);
    }
    // Yet the server can still give it back to a management token.
    const read = (await (await call("/v1/acl/auth-method/okta")).json()) as { Config: Json };
    expect(read.Config.OIDCClientSecret).toBe(OTHER_SECRET);
  });

  it("changes the hash with the secret, and not when the same secret is sealed again", async () => {
    const { call } = await start();
    const first = (await (await call("/v1/acl/auth-method", "PUT", okta())).json()) as Json;
    const same = (await (await call("/v1/acl/auth-method/okta", "PUT", okta())).json()) as Json;
    expect(same.Hash).toBe(first.Hash);
    // Nomad's state store: no change, no write.
    expect(same.ModifyIndex).toBe(first.ModifyIndex);
    const other = okta({ Config: { ...okta().Config, OIDCClientSecret: OTHER_SECRET } });
    const changed = (await (await call("/v1/acl/auth-method/okta", "PUT", other)).json()) as Json;
    expect(changed.Hash).not.toBe(first.Hash);
    expect(changed.ModifyIndex).toBeGreaterThan(first.ModifyIndex as number);
  });

  it("merges an update onto the stored method: empty fields and a missing config are kept", async () => {
    const { call } = await start();
    const first = (await (await call("/v1/acl/auth-method", "PUT", okta({ Default: true }))).json()) as Json;
    const res = await call("/v1/acl/auth-method/okta", "POST", {
      Name: "okta",
      MaxTokenTTL: 7_200_000_000_000,
    });
    expect(res.status).toBe(200);
    const updated = (await res.json()) as Json;
    expect(updated).toMatchObject({
      Name: "okta",
      Type: "OIDC",
      TokenLocality: "global",
      MaxTokenTTL: "2h0m0s",
      // Not merged, as in Nomad: left out means false.
      Default: false,
      CreateIndex: first.CreateIndex,
      CreateTime: first.CreateTime,
    });
    expect(updated.ModifyIndex).toBeGreaterThan(first.ModifyIndex as number);
    expect(updated.Config).toEqual(first.Config);

    // A config given replaces the stored one whole (its secret with it).
    const replaced = (await (
      await call("/v1/acl/auth-method/okta", "PUT", { Name: "okta", Config: { OIDCClientID: "other" } })
    ).json()) as { Config: Json };
    expect(replaced.Config).toMatchObject({
      OIDCClientID: "other",
      OIDCClientSecret: "",
      BoundAudiences: null,
    });
  });

  it("answers invalid methods 400 naming the problem, and appends nothing", async () => {
    const { server, call } = await start();
    const before = server.log.lastIndex();
    const cases: [unknown, string][] = [
      [
        okta({ Name: "no spaces" }),
        "auth method 0 invalid: 1 error occurred:\n\t* invalid name 'no spaces'\n\n",
      ],
      [
        okta({ Type: "", TokenLocality: "everywhere" }),
        "auth method 0 invalid: 2 errors occurred:\n\t* invalid token locality 'everywhere'\n\t* invalid token type ''\n\n",
      ],
      [
        okta({ MaxTokenTTL: "1s" }),
        "auth method 0 invalid: 1 error occurred:\n\t* invalid MaxTokenTTL value '1s' (should be between 1m0s and 24h0m0s)\n\n",
      ],
      [okta({ MaxTokenTTL: "1d" }), 'MaxTokenTTL: time: unknown unit "d" in duration "1d"'],
      [
        okta({ Config: { ClockSkewLeeway: "soon" } }),
        'Config.ClockSkewLeeway: time: invalid duration "soon"',
      ],
      [
        okta({ MaxTokenTTL: true }),
        'MaxTokenTTL: a duration must be a string such as "1h" or nanoseconds, not true',
      ],
      [okta({ Default: "yes" }), "body.Default must be boolean,null"],
    ];
    for (const [body, message] of cases) {
      const res = await call("/v1/acl/auth-method", "PUT", body);
      expect(res.status, message).toBe(400);
      expect(await res.text()).toBe(message);
    }
    const mismatch = await call("/v1/acl/auth-method/other", "PUT", okta());
    expect(mismatch.status).toBe(400);
    expect(await mismatch.text()).toBe("ACL auth-method name does not match request path");
    expect(server.log.lastIndex()).toBe(before);
  });

  it("allows one default method", async () => {
    const { server, call } = await start();
    expect((await call("/v1/acl/auth-method", "PUT", okta({ Name: "a", Default: true }))).status).toBe(200);
    const before = server.log.lastIndex();
    const second = await call("/v1/acl/auth-method", "PUT", okta({ Name: "b", Default: true }));
    expect(second.status).toBe(400);
    expect(await second.text()).toBe("default method already exists: a");
    expect(server.log.lastIndex()).toBe(before);
    // The default itself may be updated and stay default.
    expect(
      (await call("/v1/acl/auth-method/a", "PUT", okta({ Name: "a", Default: true, MaxTokenTTL: "2h" })))
        .status,
    ).toBe(200);
  });

  it("refuses to delete a method that does not exist, appending nothing", async () => {
    const { server, call } = await start();
    const before = server.log.lastIndex();
    const res = await call("/v1/acl/auth-method/nope", "DELETE");
    expect(res.status).toBe(404);
    expect(await res.text()).toBe("ACL auth method not found");
    expect(server.log.lastIndex()).toBe(before);
  });

  it("answers 400 ACL support disabled when ACLs are off", async () => {
    const { server, call } = await start([]);
    const before = server.log.lastIndex();
    for (const [path, method, body] of [
      ["/v1/acl/auth-methods", "GET", undefined],
      ["/v1/acl/auth-method", "PUT", okta()],
      ["/v1/acl/auth-method/okta", "GET", undefined],
      ["/v1/acl/auth-method/okta", "DELETE", undefined],
    ] as const) {
      const res = await call(path, method, body);
      expect(res.status, `${method} ${path}`).toBe(400);
      expect(await res.text()).toBe("ACL support disabled");
    }
    expect(server.log.lastIndex()).toBe(before);
  });

  it("refuses other methods with 405, and an empty name with 400", async () => {
    const { call } = await start();
    expect((await call("/v1/acl/auth-methods", "DELETE")).status).toBe(405);
    expect((await call("/v1/acl/auth-method", "GET")).status).toBe(405);
    const empty = await call("/v1/acl/auth-method/");
    expect(empty.status).toBe(400);
    expect(await empty.text()).toBe("missing ACL auth-method name");
  });

  it("lists stubs to anyone (Nomad's list is public), the method itself only to management", async () => {
    const { server, call } = await start();
    expect((await call("/v1/acl/auth-method", "PUT", okta())).status).toBe(200);
    const list = await server.call("/v1/acl/auth-methods");
    expect(list.status).toBe(200);
    expect(JSON.stringify(await list.json())).not.toContain(SECRET);
    expect((await server.call("/v1/acl/auth-method/okta")).status).toBe(403);
  });
});
