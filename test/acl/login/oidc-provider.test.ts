import { createHash } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  discoverProvider,
  type IdTokenChecks,
  OidcLoginError,
  type OidcProvider,
  verifyIdToken,
} from "../../../src/acl/login/oidc-provider.ts";
import { startTestIssuer, type TestIssuer } from "./test-issuer.ts";

let issuer: TestIssuer;
let provider: OidcProvider;
beforeAll(async () => {
  issuer = await startTestIssuer();
  provider = await discoverProvider(
    {
      OIDCDiscoveryURL: issuer.url,
      OIDCClientID: issuer.clientId,
      OIDCScopes: [],
      BoundAudiences: [],
      AllowedRedirectURIs: [],
      DiscoveryCaPem: [],
      SigningAlgs: [],
    },
    5_000,
  );
});
afterAll(async () => issuer.close());

const nowS = () => Math.floor(Date.now() / 1000);

function checks(overrides: Partial<IdTokenChecks> = {}): IdTokenChecks {
  return {
    clientId: issuer.clientId,
    nonce: "n-1",
    boundAudiences: [],
    signingAlgs: [],
    accessToken: "access-1",
    now: Date.now(),
    ...overrides,
  };
}

const idToken = (claims: Record<string, unknown>, key: "rsa" | "stranger" = "rsa") =>
  issuer.sign(
    {
      iss: issuer.url,
      aud: issuer.clientId,
      sub: "alice",
      nonce: "n-1",
      iat: nowS(),
      exp: nowS() + 60,
      ...claims,
    },
    { key },
  );

async function refusal(claims: Record<string, unknown>, c = checks(), key: "rsa" | "stranger" = "rsa") {
  const err = await verifyIdToken(provider, await idToken(claims, key), c).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(OidcLoginError);
  expect((err as OidcLoginError).status).toBe(401);
  return (err as OidcLoginError).message;
}

describe("verifyIdToken", () => {
  it("accepts a good ID token and answers its claims", async () => {
    const atHash = createHash("sha256").update("access-1").digest().subarray(0, 16).toString("base64url");
    const claims = await verifyIdToken(provider, await idToken({ at_hash: atHash, groups: ["x"] }), checks());
    expect(claims).toMatchObject({ sub: "alice", groups: ["x"] });
  });

  it("refuses each thing cap refuses", async () => {
    expect(await refusal({ nonce: "other" })).toContain("invalid id_token nonce");
    expect(await refusal({ iss: "https://elsewhere" })).toContain("id token issued by a different provider");
    expect(await refusal({ exp: nowS() - 5 })).toContain("token is expired");
    expect(await refusal({ iat: nowS() + 600, exp: nowS() + 900 })).toContain("before the iat");
    expect(await refusal({ sub: "" })).toContain("sub: missing claim");
    expect(await refusal({ aud: [] })).toContain("aud: missing claim");
    expect(await refusal({ aud: "someone-else" })).toContain("which is not the client_id");
    expect(await refusal({ aud: [issuer.clientId, "other"] })).toContain("multiple audiences");
    expect(await refusal({ azp: "other" })).toContain("authorized party (other) is not equal client_id");
    expect(await refusal({ at_hash: "AAAA" })).toContain("at_hash does not match");
    expect(await refusal({}, checks(), "stranger")).toContain("failed to verify id token signature");
    expect(await refusal({}, checks({ boundAudiences: ["api"] }))).toContain("invalid id_token audiences");
    expect(await refusal({}, checks({ signingAlgs: ["ES256"] }))).toContain(
      "signed with unsupported algorithm",
    );
  });

  it("accepts one foreign audience when the client is the authorized party, and a bound audience among several", async () => {
    await expect(
      verifyIdToken(
        provider,
        await idToken({ aud: "api", azp: issuer.clientId }),
        checks({ boundAudiences: ["api"] }),
      ),
    ).resolves.toBeDefined();
    await expect(
      verifyIdToken(
        provider,
        await idToken({ aud: [issuer.clientId, "api"], azp: issuer.clientId }),
        checks({ boundAudiences: ["api"] }),
      ),
    ).resolves.toBeDefined();
  });
});
