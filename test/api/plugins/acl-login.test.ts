import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { unpackPlain } from "../../../src/codec/envelope-codec.ts";
import { startTestIssuer, type TestIssuer } from "../../acl/login/test-issuer.ts";
import { startTestServer, type TestServer } from "../../server-harness.ts";

/**
 * ACL login end to end: a real server with ACLs on, a real provider
 * (test/acl/login/test-issuer.ts), and only HTTP between them, as Nomad's
 * CLI and UI drive it.
 */

let issuer: TestIssuer;
beforeAll(async () => {
  issuer = await startTestIssuer();
});
afterAll(async () => issuer.close());

const running: TestServer[] = [];
afterEach(async () => {
  for (const s of running.splice(0)) await s.stop();
});

const REDIRECT = "http://localhost:4649/oidc/callback";
const now = () => Math.floor(Date.now() / 1000);

interface Cluster {
  s: TestServer;
  root: string;
  send(path: string, method: string, body?: unknown, token?: string): Promise<Response>;
  write(path: string, body: unknown): Promise<Record<string, unknown>>;
}

async function cluster(args = ["--acl-enabled"]): Promise<Cluster> {
  const s = await startTestServer({ args });
  running.push(s);
  const send = (path: string, method: string, body?: unknown, token?: string) =>
    s.call(path, {
      method,
      headers: token ? { "X-Nomad-Token": token } : {},
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  if (!args.includes("--acl-enabled")) {
    return { s, root: "", send, write: async () => ({}) };
  }
  const boot = await send("/v1/acl/bootstrap", "POST");
  expect(boot.status, await boot.clone().text()).toBe(200);
  const root = ((await boot.json()) as { SecretID: string }).SecretID;
  const write = async (path: string, body: unknown) => {
    const res = await send(path, "PUT", body, root);
    const text = await res.text();
    expect(res.status, `PUT ${path}: ${text}`).toBe(200);
    return (text === "" ? {} : JSON.parse(text)) as Record<string, unknown>;
  };
  return { s, root, send, write };
}

async function withJwtMethod(c: Cluster) {
  await c.write("/v1/acl/policy/readers", {
    Name: "readers",
    Rules: 'namespace "default" { policy = "read" }',
  });
  await c.write("/v1/acl/policy/team-platform", { Name: "team-platform", Rules: 'node { policy = "read" }' });
  await c.write("/v1/acl/auth-method", {
    Name: "ci",
    Type: "JWT",
    TokenLocality: "local",
    MaxTokenTTL: "1h",
    Config: {
      JWKSURL: issuer.jwksUrl,
      BoundAudiences: ["nomad"],
      BoundIssuer: [issuer.url],
      ClaimMappings: { sub: "user", team: "team" },
      ListClaimMappings: { groups: "groups" },
    },
  });
  await c.write("/v1/acl/binding-rule", {
    AuthMethod: "ci",
    BindType: "policy",
    BindName: "readers",
    Selector: '"eng" in list.groups',
  });
  await c.write("/v1/acl/binding-rule", {
    AuthMethod: "ci",
    BindType: "policy",
    // biome-ignore lint/suspicious/noTemplateCurlyInString: a HIL bind name, written literally
    BindName: "team-${value.team}",
  });
}

const jwt = (claims: Record<string, unknown>) =>
  issuer.sign({ iss: issuer.url, aud: "nomad", exp: now() + 60, ...claims });

describe("PUT /v1/acl/login", () => {
  it("trades a JWT for a token whose policies come from the binding rules", async () => {
    const c = await cluster();
    await withJwtMethod(c);
    const res = await c.send("/v1/acl/login", "POST", {
      AuthMethodName: "ci",
      LoginToken: await jwt({ sub: "alice", team: "Platform", groups: ["eng"] }),
    });
    const text = await res.text();
    expect(res.status, text).toBe(200);
    const token = JSON.parse(text) as Record<string, unknown>;
    expect(token).toMatchObject({ Name: "JWT-ci", Type: "client", Global: false });
    expect([...(token.Policies as string[])].sort()).toEqual(["readers", "team-platform"]);
    expect(Number(res.headers.get("x-nomad-index"))).toBe(c.s.log.lastIndex());
    const lifetime = Date.parse(token.ExpirationTime as string) - Date.parse(token.CreateTime as string);
    expect(lifetime).toBe(3600_000);

    const self = await c.send("/v1/acl/token/self", "GET", undefined, token.SecretID as string);
    expect(self.status).toBe(200);
    expect(((await self.json()) as { AccessorID: string }).AccessorID).toBe(token.AccessorID);

    // The log says who logged in, through which method.
    let actor: unknown;
    for await (const batch of c.s.log.read(1)) {
      for (const record of batch) {
        const envelope = unpackPlain(record.bytes) as {
          type: string;
          by?: unknown;
          data: { Tokens?: { AccessorID: string }[] };
        };
        if (
          envelope.type === "ACLTokensUpserted" &&
          envelope.data.Tokens?.[0]?.AccessorID === token.AccessorID
        ) {
          actor = envelope.by;
        }
      }
    }
    expect(actor).toEqual({ kind: "server", id: "acl-login", name: "ci:alice" });
  });

  it("refuses with Nomad's words: missing fields, unknown method, bad token, nothing bound", async () => {
    const c = await cluster();
    await withJwtMethod(c);
    const before = c.s.log.lastIndex();
    const cases: [unknown, number, string][] = [
      [
        {},
        400,
        "invalid login request: 2 errors occurred:\n\t* missing auth method name\n\t* missing login token\n\n",
      ],
      [
        { AuthMethodName: "ci" },
        400,
        "invalid login request: 1 error occurred:\n\t* missing login token\n\n",
      ],
      [{ AuthMethodName: "nope", LoginToken: "x" }, 400, 'auth-method "nope" not found'],
      [
        { AuthMethodName: "ci", LoginToken: await jwt({ aud: "other", groups: ["eng"] }) },
        401,
        "unable to validate provided token: unable to verify signature of JWT token: invalid audience (aud) claim: audience claim does not match any expected audience",
      ],
      [
        {
          AuthMethodName: "ci",
          LoginToken: await issuer.sign(
            { iss: issuer.url, aud: "nomad", exp: now() + 60 },
            { key: "stranger" },
          ),
        },
        401,
        "unable to validate provided token: unable to verify signature of JWT token: error verifying token signature: failed to verify id token signature",
      ],
      [
        { AuthMethodName: "ci", LoginToken: await jwt({ sub: "bob", groups: ["sales"] }) },
        400,
        "no role or policy bindings matched",
      ],
    ];
    for (const [body, status, message] of cases) {
      const res = await c.send("/v1/acl/login", "PUT", body);
      expect(res.status, JSON.stringify(body)).toBe(status);
      expect(await res.text()).toBe(message);
    }
    expect(c.s.log.lastIndex()).toBe(before);
    const get = await c.send("/v1/acl/login", "GET");
    expect(get.status).toBe(405);
  });

  it("mints a management token for a management binding", async () => {
    const c = await cluster();
    await withJwtMethod(c);
    await c.write("/v1/acl/binding-rule", {
      AuthMethod: "ci",
      BindType: "management",
      Selector: 'value.user == "root"',
    });
    const res = await c.send("/v1/acl/login", "PUT", {
      AuthMethodName: "ci",
      LoginToken: await jwt({ sub: "root", groups: ["eng"] }),
    });
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ Type: "management", Policies: [] });
  });

  it("answers 400 ACL support disabled when ACLs are off", async () => {
    const c = await cluster([]);
    for (const path of ["/v1/acl/login", "/v1/acl/oidc/auth-url", "/v1/acl/oidc/complete-auth"]) {
      const res = await c.send(path, "PUT", {});
      expect(res.status, path).toBe(400);
      expect(await res.text()).toBe("ACL support disabled");
    }
  });
});

describe("the OIDC login", () => {
  it("goes auth-url → provider → complete-auth → token, with roles from the binding rules", async () => {
    const c = await cluster();
    await c.write("/v1/acl/policy/ops", { Name: "ops", Rules: 'node { policy = "write" }' });
    const role = await c.write("/v1/acl/role", { Name: "ops-platform", Policies: [{ Name: "ops" }] });
    await c.write("/v1/acl/auth-method", {
      Name: "sso",
      Type: "OIDC",
      TokenLocality: "local",
      MaxTokenTTL: "30m",
      Config: {
        OIDCDiscoveryURL: issuer.url,
        OIDCClientID: issuer.clientId,
        OIDCClientSecret: issuer.clientSecret,
        OIDCScopes: ["groups"],
        BoundAudiences: [issuer.clientId],
        AllowedRedirectURIs: [REDIRECT],
        ClaimMappings: { team: "team", email: "email" },
        ListClaimMappings: { groups: "groups" },
      },
    });
    await c.write("/v1/acl/binding-rule", {
      AuthMethod: "sso",
      BindType: "role",
      // biome-ignore lint/suspicious/noTemplateCurlyInString: a HIL bind name, written literally
      BindName: "ops-${value.team}",
      Selector: '"ops" in list.groups and value.email == "alice@example.com"',
    });
    issuer.user = {
      idToken: { sub: "alice", team: "Platform", groups: ["ops"] },
      userinfo: { email: "alice@example.com" },
    };

    const start = await c.send("/v1/acl/oidc/auth-url", "POST", {
      AuthMethodName: "sso",
      RedirectURI: REDIRECT,
      ClientNonce: "client-nonce-1",
    });
    const startText = await start.text();
    expect(start.status, startText).toBe(200);
    const { AuthURL } = JSON.parse(startText) as { AuthURL: string };
    const atProvider = await fetch(AuthURL, { redirect: "manual" });
    expect(atProvider.status).toBe(302);
    const callback = new URL(atProvider.headers.get("location") ?? "");
    expect(callback.origin + callback.pathname).toBe(REDIRECT);

    const done = await c.send("/v1/acl/oidc/complete-auth", "POST", {
      AuthMethodName: "sso",
      ClientNonce: "client-nonce-1",
      State: callback.searchParams.get("state"),
      Code: callback.searchParams.get("code"),
      RedirectURI: REDIRECT,
    });
    const doneText = await done.text();
    expect(done.status, doneText).toBe(200);
    const token = JSON.parse(doneText) as Record<string, unknown>;
    expect(token).toMatchObject({
      Name: "OIDC-sso",
      Type: "client",
      Policies: [],
      Roles: [{ ID: role.ID, Name: "ops-platform" }],
    });
    expect(Number(done.headers.get("x-nomad-index"))).toBe(c.s.log.lastIndex());

    // The state was used up.
    const again = await c.send("/v1/acl/oidc/complete-auth", "POST", {
      AuthMethodName: "sso",
      ClientNonce: "client-nonce-1",
      State: callback.searchParams.get("state"),
      Code: callback.searchParams.get("code"),
      RedirectURI: REDIRECT,
    });
    expect(again.status).toBe(400);
  });

  it("refuses what Nomad refuses before any provider is asked", async () => {
    const c = await cluster();
    await c.write("/v1/acl/auth-method", {
      Name: "sso",
      Type: "OIDC",
      TokenLocality: "local",
      MaxTokenTTL: "30m",
      Config: {
        OIDCDiscoveryURL: issuer.url,
        OIDCClientID: issuer.clientId,
        AllowedRedirectURIs: [REDIRECT],
      },
    });
    const cases: [string, unknown, number, string][] = [
      [
        "/v1/acl/oidc/auth-url",
        { AuthMethodName: "sso" },
        400,
        "invalid OIDC auth-url request: 2 errors occurred:\n\t* missing client nonce\n\t* missing redirect URI\n\n",
      ],
      [
        "/v1/acl/oidc/auth-url",
        { AuthMethodName: "sso", ClientNonce: "n", RedirectURI: "https://evil.example/cb" },
        400,
        "failed to generate auth URL: redirect URI https://evil.example/cb: unauthorized redirect_uri",
      ],
      [
        "/v1/acl/oidc/auth-url",
        { AuthMethodName: "ghost", ClientNonce: "n", RedirectURI: REDIRECT },
        400,
        'auth-method "ghost" not found',
      ],
      [
        "/v1/acl/oidc/complete-auth",
        { AuthMethodName: "sso", ClientNonce: "n", State: "s" },
        400,
        "invalid OIDC complete-auth request: 2 errors occurred:\n\t* missing code\n\t* missing redirect URI\n\n",
      ],
    ];
    for (const [path, body, status, message] of cases) {
      const res = await c.send(path, "PUT", body);
      expect(res.status, `${path} ${JSON.stringify(body)}`).toBe(status);
      expect(await res.text()).toBe(message);
    }
  });
});
