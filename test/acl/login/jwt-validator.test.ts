import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type JwtAuthMethod,
  type JwtValidationConfig,
  JwtValidator,
  TokenValidationError,
} from "../../../src/acl/login/jwt-validator.ts";
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

const S = 1e9;
const now = () => Math.floor(Date.now() / 1000);

function config(overrides: Partial<JwtValidationConfig> = {}): JwtValidationConfig {
  return {
    JWTValidationPubKeys: [],
    JWKSURL: "",
    JWKSCACert: "",
    OIDCDiscoveryURL: "",
    DiscoveryCaPem: [],
    BoundAudiences: [],
    BoundIssuer: [],
    SigningAlgs: [],
    ExpirationLeeway: 0,
    NotBeforeLeeway: 0,
    ClockSkewLeeway: 0,
    ...overrides,
  };
}

let modifyIndex = 1;
const method = (c: JwtValidationConfig, name = "jwt"): JwtAuthMethod => ({
  Name: name,
  ModifyIndex: modifyIndex++,
  Config: c,
});

async function rejection(p: Promise<unknown>): Promise<TokenValidationError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(TokenValidationError);
  const e = err as TokenValidationError;
  expect(e.status).toBe(401);
  expect(e.message.startsWith("unable to validate provided token: ")).toBe(true);
  return e;
}

describe("JwtValidator with a JWKS URL", () => {
  const v = new JwtValidator({ timeoutMs: 5_000 });
  const jwks = () =>
    config({ JWKSURL: issuer.jwksUrl, BoundAudiences: ["nomad"], BoundIssuer: [issuer.url] });

  it("accepts a good token and answers all its claims", async () => {
    const token = await issuer.sign({
      iss: issuer.url,
      aud: "nomad",
      sub: "bob",
      exp: now() + 60,
      groups: ["a"],
    });
    const claims = await v.validate(method(jwks()), token);
    expect(claims).toMatchObject({ sub: "bob", groups: ["a"], aud: "nomad" });
  });

  it("accepts an ES256 token when the method allows ES256", async () => {
    const token = await issuer.sign({ aud: ["x", "nomad"], iss: issuer.url, iat: now() }, { key: "ec" });
    await expect(v.validate(method(jwks()), token)).rejects.toThrow(
      "unable to validate provided token: unable to verify signature of JWT token: invalid algorithm (alg) header parameter: token signed with unexpected algorithm",
    );
    const claims = await v.validate(method({ ...jwks(), SigningAlgs: ["RS256", "ES256"] }), token);
    expect(claims.aud).toEqual(["x", "nomad"]);
  });

  it("refuses a wrong audience", async () => {
    const token = await issuer.sign({ iss: issuer.url, aud: "other", exp: now() + 60 });
    const e = await rejection(v.validate(method(jwks()), token));
    expect(e.message).toBe(
      "unable to validate provided token: unable to verify signature of JWT token: invalid audience (aud) claim: audience claim does not match any expected audience",
    );
  });

  it("refuses a wrong or missing issuer", async () => {
    const wrong = await issuer.sign({ iss: "https://elsewhere", aud: "nomad", exp: now() + 60 });
    expect((await rejection(v.validate(method(jwks()), wrong))).message).toBe(
      "unable to validate provided token: invalid JWT issuer: https://elsewhere",
    );
    const none = await issuer.sign({ aud: "nomad", exp: now() + 60 });
    expect((await rejection(v.validate(method(jwks()), none))).message).toBe(
      "unable to validate provided token: auth method specifies BoundIssuers but the provided token does not contain issuer information",
    );
  });

  it("refuses an expired token, within the clock skew leeway it may still pass", async () => {
    const token = await issuer.sign({ iss: issuer.url, aud: "nomad", exp: now() - 30 });
    // The default skew is 60 s.
    await expect(v.validate(method(jwks()), token)).resolves.toBeDefined();
    const e = await rejection(v.validate(method({ ...jwks(), ClockSkewLeeway: -1 }), token));
    expect(e.message).toBe(
      "unable to validate provided token: unable to verify signature of JWT token: invalid expiration time (exp) claim: token is expired",
    );
    const old = await issuer.sign({ iss: issuer.url, aud: "nomad", exp: now() - 120 });
    await rejection(v.validate(method(jwks()), old));
  });

  it("gives a token without exp a lifetime of ExpirationLeeway after iat (150 s by default)", async () => {
    const fresh = await issuer.sign({ iss: issuer.url, aud: "nomad", iat: now() - 100 });
    await expect(v.validate(method(jwks()), fresh)).resolves.toBeDefined();
    const stale = await issuer.sign({ iss: issuer.url, aud: "nomad", iat: now() - 300 });
    await rejection(v.validate(method(jwks()), stale));
    await expect(v.validate(method({ ...jwks(), ExpirationLeeway: 600 * S }), stale)).resolves.toBeDefined();
    const timeless = await issuer.sign({ iss: issuer.url, aud: "nomad" });
    expect((await rejection(v.validate(method(jwks()), timeless))).message).toContain(
      "no issued at (iat), not before (nbf), or expiration time (exp) claims in token",
    );
  });

  it("refuses a token not yet valid", async () => {
    const token = await issuer.sign({ iss: issuer.url, aud: "nomad", nbf: now() + 600, exp: now() + 900 });
    expect((await rejection(v.validate(method(jwks()), token))).message).toContain(
      "invalid not before (nbf) claim: token not yet valid",
    );
  });

  it("refuses a signature by a key the JWKS does not hold", async () => {
    const forged = await issuer.sign({ iss: issuer.url, aud: "nomad", exp: now() + 60 }, { key: "stranger" });
    expect((await rejection(v.validate(method(jwks()), forged))).message).toBe(
      "unable to validate provided token: unable to verify signature of JWT token: error verifying token signature: failed to verify id token signature",
    );
    const noKid = await issuer.sign(
      { iss: issuer.url, aud: "nomad", exp: now() + 60 },
      { key: "stranger", kid: null },
    );
    await rejection(v.validate(method(jwks()), noKid));
  });

  it("refuses a tampered token and garbage", async () => {
    const token = await issuer.sign({ iss: issuer.url, aud: "nomad", sub: "bob", exp: now() + 60 });
    const [h, , s] = token.split(".");
    const body = Buffer.from(JSON.stringify({ iss: issuer.url, aud: "nomad", sub: "root", exp: now() + 60 }));
    await rejection(v.validate(method(jwks()), `${h}.${body.toString("base64url")}.${s}`));
    await rejection(v.validate(method(jwks()), "not-a-jwt"));
  });

  it("says so when the JWKS cannot be fetched", async () => {
    const token = await issuer.sign({ exp: now() + 60 });
    const e = await rejection(v.validate(method(config({ JWKSURL: "http://127.0.0.1:1/jwks" })), token));
    expect(e.message).toContain("fetching keys from http://127.0.0.1:1/jwks");
  });

  it("caches the key set per method and ModifyIndex", async () => {
    const cached = new JwtValidator({ timeoutMs: 5_000 });
    const m = method(jwks(), "cached");
    const token = await issuer.sign({ iss: issuer.url, aud: "nomad", exp: now() + 60 });
    const before = issuer.requests.filter((r) => r === "GET /jwks").length;
    await cached.validate(m, token);
    await cached.validate(m, token);
    expect(issuer.requests.filter((r) => r === "GET /jwks").length).toBe(before + 1);
    await cached.validate({ ...m, ModifyIndex: m.ModifyIndex + 1 }, token);
    expect(issuer.requests.filter((r) => r === "GET /jwks").length).toBe(before + 2);
  });
});

describe("JwtValidator with static PEM keys", () => {
  const v = new JwtValidator();

  it("tries each key; the one that verifies wins", async () => {
    const c = config({
      JWTValidationPubKeys: [await issuer.publicKeyPem("stranger"), await issuer.publicKeyPem("rsa")],
    });
    const token = await issuer.sign({ sub: "carol", exp: now() + 60 });
    await expect(v.validate(method(c), token)).resolves.toMatchObject({ sub: "carol" });
    const other = config({ JWTValidationPubKeys: [await issuer.publicKeyPem("stranger")] });
    expect((await rejection(v.validate(method(other), token))).message).toBe(
      "unable to validate provided token: unable to verify signature of JWT token: error verifying token signature: no known key successfully validated the token signature",
    );
  });

  it("refuses a key that is not PEM", async () => {
    const token = await issuer.sign({ exp: now() + 60 });
    const e = await rejection(v.validate(method(config({ JWTValidationPubKeys: ["nope"] })), token));
    expect(e.message).toMatch(
      /^unable to validate provided token: unable to parse public key for JWT auth: /,
    );
  });

  it("prefers static keys over a JWKS URL, as Nomad's key source order says", async () => {
    const c = config({
      JWTValidationPubKeys: [await issuer.publicKeyPem("stranger")],
      JWKSURL: issuer.jwksUrl,
    });
    const token = await issuer.sign({ exp: now() + 60 });
    await rejection(v.validate(method(c), token));
  });

  it("refuses an unsupported SigningAlgs entry and a method without keys", async () => {
    const token = await issuer.sign({ exp: now() + 60 });
    const c = config({ JWTValidationPubKeys: [await issuer.publicKeyPem("rsa")], SigningAlgs: ["HS256"] });
    expect((await rejection(v.validate(method(c), token))).message).toContain(
      'unsupported signing algorithm "HS256"',
    );
    expect((await rejection(v.validate(method(config()), token))).message).toContain(
      "has no validation keys",
    );
  });
});

describe("JwtValidator with OIDC discovery", () => {
  const v = new JwtValidator({ timeoutMs: 5_000 });

  it("finds the keys through the discovery document", async () => {
    const token = await issuer.sign({ iss: issuer.url, sub: "dave", exp: now() + 60 });
    await expect(v.validate(method(config({ OIDCDiscoveryURL: issuer.url })), token)).resolves.toMatchObject({
      sub: "dave",
    });
  });

  it("refuses a discovery document naming another issuer", async () => {
    const token = await issuer.sign({ exp: now() + 60 });
    const e = await rejection(v.validate(method(config({ OIDCDiscoveryURL: `${issuer.url}/` })), token));
    expect(e.message).toContain("issuer did not match the returned issuer");
  });

  it("trusts the method's CA for an HTTPS provider, and only then", async () => {
    const token = await tlsIssuer.sign({ iss: tlsIssuer.url, sub: "erin", exp: now() + 60 });
    const withCa = config({ OIDCDiscoveryURL: tlsIssuer.url, DiscoveryCaPem: [TEST_CA_PEM] });
    await expect(v.validate(method(withCa), token)).resolves.toMatchObject({ sub: "erin" });
    const jwksWithCa = config({ JWKSURL: tlsIssuer.jwksUrl, JWKSCACert: TEST_CA_PEM });
    await expect(v.validate(method(jwksWithCa), token)).resolves.toMatchObject({ sub: "erin" });
    const without = config({ OIDCDiscoveryURL: tlsIssuer.url });
    expect((await rejection(v.validate(method(without), token))).message).toContain(
      "unable to get validation keys from OIDC provider",
    );
    const badCa = config({ JWKSURL: tlsIssuer.jwksUrl, JWKSCACert: "garbage" });
    expect((await rejection(v.validate(method(badCa), token))).message).toContain(
      "could not parse CA PEM value successfully",
    );
  });

  it("ends a provider call at the deadline", async () => {
    const { createServer } = await import("node:net");
    const silent = createServer(() => {});
    await new Promise<void>((r) => silent.listen(0, "127.0.0.1", r));
    const port = (silent.address() as { port: number }).port;
    const quick = new JwtValidator({ timeoutMs: 200 });
    const token = await issuer.sign({ exp: now() + 60 });
    const started = Date.now();
    const e = await rejection(
      quick.validate(method(config({ OIDCDiscoveryURL: `http://127.0.0.1:${port}` })), token),
    );
    expect(Date.now() - started).toBeLessThan(3_000);
    expect(e.message).toContain("timed out after 200 ms");
    silent.close();
  });
});
