import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type OidcAuthMethod, OidcFlow } from "../../../src/acl/login/oidc-flow.ts";
import { OidcLoginError, type OidcProviderConfig } from "../../../src/acl/login/oidc-provider.ts";
import { redirectRefusal } from "../../../src/acl/login/redirect-uri.ts";
import { startTestIssuer, type TestIssuer } from "./test-issuer.ts";
import { TEST_CA_PEM } from "./tls-fixture.ts";

let issuer: TestIssuer;
let tlsIssuer: TestIssuer;
beforeAll(async () => {
  issuer = await startTestIssuer();
  tlsIssuer = await startTestIssuer({ tls: true });
});
afterAll(async () => {
  await issuer.close();
  await tlsIssuer.close();
});

const REDIRECT = "http://localhost:4649/oidc/callback";

function method(i: TestIssuer, overrides: Partial<OidcProviderConfig> = {}, modifyIndex = 1): OidcAuthMethod {
  return {
    Name: "sso",
    ModifyIndex: modifyIndex,
    Config: {
      OIDCDiscoveryURL: i.url,
      OIDCClientID: i.clientId,
      OIDCScopes: ["groups"],
      BoundAudiences: [],
      AllowedRedirectURIs: [REDIRECT],
      DiscoveryCaPem: [],
      SigningAlgs: [],
      ...overrides,
    },
  };
}

/** What a browser does with the auth URL: the test issuer signs in at once and redirects with a code. */
async function followAuthUrl(authUrl: string): Promise<{ code: string; state: string }> {
  const res = await fetch(authUrl, { redirect: "manual" });
  expect(res.status, await res.clone().text()).toBe(302);
  const location = new URL(res.headers.get("location") ?? "");
  return { code: location.searchParams.get("code") ?? "", state: location.searchParams.get("state") ?? "" };
}

async function failure(p: Promise<unknown>): Promise<OidcLoginError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(OidcLoginError);
  return err as OidcLoginError;
}

describe("OidcFlow", () => {
  it("runs the code flow with PKCE and answers the ID token's and userinfo's claims", async () => {
    const flow = new OidcFlow({ timeoutMs: 5_000 });
    issuer.user = { idToken: { sub: "alice", groups: ["eng"] }, userinfo: { email: "alice@example.com" } };
    const authUrl = await flow.authUrl(method(issuer), { redirectUri: REDIRECT, clientNonce: "nonce-1" });
    expect(authUrl.startsWith(`${issuer.url}/authorize?`)).toBe(true);
    const { code, state } = await followAuthUrl(authUrl);
    const asked = issuer.authorizations.at(-1);
    expect(asked).toMatchObject({
      clientId: issuer.clientId,
      redirectUri: REDIRECT,
      scope: "openid groups",
      nonce: "nonce-1",
      codeChallengeMethod: "S256",
    });
    const claims = await flow.completeAuth(method(issuer), issuer.clientSecret, {
      state,
      code,
      redirectUri: REDIRECT,
      clientNonce: "nonce-1",
    });
    expect(claims.idClaims).toMatchObject({
      sub: "alice",
      groups: ["eng"],
      nonce: "nonce-1",
      iss: issuer.url,
    });
    expect(claims.userClaims).toEqual({ sub: "alice", email: "alice@example.com" });
  });

  it("goes on with the ID token alone when the provider has no userinfo endpoint", async () => {
    const bare = await startTestIssuer({ noUserinfo: true });
    try {
      const flow = new OidcFlow({ timeoutMs: 5_000 });
      const { code, state } = await followAuthUrl(
        await flow.authUrl(method(bare), { redirectUri: REDIRECT, clientNonce: "n" }),
      );
      const claims = await flow.completeAuth(method(bare), bare.clientSecret, {
        code,
        state,
        redirectUri: REDIRECT,
        clientNonce: "n",
      });
      expect(claims.userClaims).toBeUndefined();
      expect(claims.idClaims.sub).toBe("alice");
    } finally {
      await bare.close();
    }
  });

  it("completes a state once only, and only with its nonce and redirect URI", async () => {
    const flow = new OidcFlow({ timeoutMs: 5_000 });
    const start = async () =>
      followAuthUrl(await flow.authUrl(method(issuer), { redirectUri: REDIRECT, clientNonce: "n" }));
    const first = await start();
    const ok = { ...first, redirectUri: REDIRECT, clientNonce: "n" };
    await flow.completeAuth(method(issuer), issuer.clientSecret, ok);
    const again = await failure(flow.completeAuth(method(issuer), issuer.clientSecret, ok));
    expect(again.status).toBe(400);
    expect(again.message).toContain("unknown or expired state");

    const second = await start();
    const wrongNonce = await failure(
      flow.completeAuth(method(issuer), issuer.clientSecret, {
        ...second,
        redirectUri: REDIRECT,
        clientNonce: "x",
      }),
    );
    expect(wrongNonce.message).toContain("the client nonce is not the login's");

    const other = new OidcFlow({ timeoutMs: 5_000 });
    const third = await start();
    const elsewhere = await failure(
      other.completeAuth(method(issuer), issuer.clientSecret, {
        ...third,
        redirectUri: REDIRECT,
        clientNonce: "n",
      }),
    );
    expect(elsewhere.message).toContain("unknown or expired state");
  });

  it("forgets a login after its time", async () => {
    let now = Date.now();
    const flow = new OidcFlow({ timeoutMs: 5_000, now: () => now, pendingTtlMs: 1_000 });
    const { code, state } = await followAuthUrl(
      await flow.authUrl(method(issuer), { redirectUri: REDIRECT, clientNonce: "n" }),
    );
    now += 1_001;
    const late = await failure(
      flow.completeAuth(method(issuer), issuer.clientSecret, {
        code,
        state,
        redirectUri: REDIRECT,
        clientNonce: "n",
      }),
    );
    expect(late.message).toContain("unknown or expired state");
  });

  it("refuses a redirect URI the method does not allow; loopback URIs match whatever their port", async () => {
    const flow = new OidcFlow({ timeoutMs: 5_000 });
    const refused = await failure(
      flow.authUrl(method(issuer), { redirectUri: "https://evil.example/cb", clientNonce: "n" }),
    );
    expect(refused.status).toBe(400);
    expect(refused.message).toBe(
      "failed to generate auth URL: redirect URI https://evil.example/cb: unauthorized redirect_uri",
    );
    await expect(
      flow.authUrl(method(issuer), { redirectUri: "http://localhost:51234/oidc/callback", clientNonce: "n" }),
    ).resolves.toContain("redirect_uri=http%3A%2F%2Flocalhost%3A51234");
    expect(redirectRefusal("http://localhost:1/other", [REDIRECT])).toContain("unauthorized redirect_uri");
    expect(redirectRefusal("https://any.example/x", [])).toBeUndefined();
    expect(
      redirectRefusal("https://ui.example/ui/settings/tokens", ["https://ui.example/ui/settings/tokens"]),
    ).toBe(undefined);
  });

  it("answers 401 when the provider refuses the client secret", async () => {
    const flow = new OidcFlow({ timeoutMs: 5_000 });
    const { code, state } = await followAuthUrl(
      await flow.authUrl(method(issuer), { redirectUri: REDIRECT, clientNonce: "n" }),
    );
    const e = await failure(
      flow.completeAuth(method(issuer), "wrong", { code, state, redirectUri: REDIRECT, clientNonce: "n" }),
    );
    expect(e.status).toBe(401);
    expect(e.message).toBe(
      "failed to exchange token with provider: the token endpoint refused the code: invalid_client",
    );
  });

  it("checks the ID token's audience against BoundAudiences", async () => {
    const flow = new OidcFlow({ timeoutMs: 5_000 });
    const m = method(issuer, { BoundAudiences: ["someone-else"] });
    const { code, state } = await followAuthUrl(
      await flow.authUrl(m, { redirectUri: REDIRECT, clientNonce: "n" }),
    );
    const e = await failure(
      flow.completeAuth(m, issuer.clientSecret, { code, state, redirectUri: REDIRECT, clientNonce: "n" }),
    );
    expect(e.status).toBe(401);
    expect(e.message).toContain("invalid id_token audiences");
  });

  it("refuses an ID token signed with an algorithm the method does not allow", async () => {
    const flow = new OidcFlow({ timeoutMs: 5_000 });
    const m = method(issuer, { SigningAlgs: ["ES256"] });
    const { code, state } = await followAuthUrl(
      await flow.authUrl(m, { redirectUri: REDIRECT, clientNonce: "n" }),
    );
    const e = await failure(
      flow.completeAuth(m, issuer.clientSecret, { code, state, redirectUri: REDIRECT, clientNonce: "n" }),
    );
    expect(e.message).toContain("signed with unsupported algorithm RS256");
  });

  it("reaches an HTTPS provider through the method's CA", async () => {
    const flow = new OidcFlow({ timeoutMs: 5_000 });
    tlsIssuer.user = { idToken: { sub: "bob" }, userinfo: {} };
    const m = method(tlsIssuer, { DiscoveryCaPem: [TEST_CA_PEM] });
    const authUrl = await flow.authUrl(m, { redirectUri: REDIRECT, clientNonce: "n" });
    const { TEST_CA_PEM: ca } = await import("./tls-fixture.ts");
    const { request } = await import("node:https");
    const location = await new Promise<string>((resolve, reject) => {
      request(authUrl, { ca }, (res) => {
        res.resume();
        resolve(res.headers.location ?? "");
      })
        .on("error", reject)
        .end();
    });
    const back = new URL(location);
    const claims = await flow.completeAuth(m, tlsIssuer.clientSecret, {
      code: back.searchParams.get("code") ?? "",
      state: back.searchParams.get("state") ?? "",
      redirectUri: REDIRECT,
      clientNonce: "n",
    });
    expect(claims.idClaims.sub).toBe("bob");
    const untrusted = await failure(
      new OidcFlow({ timeoutMs: 5_000 }).authUrl(method(tlsIssuer), {
        redirectUri: REDIRECT,
        clientNonce: "n",
      }),
    );
    expect(untrusted.message).toMatch(/^failed to generate OIDC provider: /);
  });
});
