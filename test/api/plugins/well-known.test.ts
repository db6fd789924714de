import { createLocalJWKSet, type JSONWebKeySet, jwtVerify, SignJWT } from "jose";
import { afterEach, describe, expect, it } from "vitest";
import { startTestServer, type TestServer } from "../../server-harness.ts";

const JWKS = "/.well-known/jwks.json";
const OIDC = "/.well-known/openid-configuration";

describe("/.well-known", () => {
  const running: TestServer[] = [];
  const start = async (args: string[] = []) => {
    const s = await startTestServer({ args });
    running.push(s);
    return s;
  };
  afterEach(async () => {
    for (const s of running.splice(0)) await s.stop();
  });

  it("lists the cluster's key in the JWKS as soon as the server has started, as Nomad's api harness waits for", async () => {
    const s = await start();
    const res = await s.call(JWKS);
    expect(res.status).toBe(200);
    const { keys } = (await res.json()) as { keys: Record<string, unknown>[] };
    const [meta] = (await (await s.call("/v1/operator/keyring/keys")).json()) as { KeyID: string }[];
    expect(keys).toEqual([
      { use: "sig", kty: "OKP", kid: meta!.KeyID, crv: "Ed25519", alg: "EdDSA", x: expect.any(String) },
    ]);
    // A 32-byte Ed25519 public key, base64url without padding.
    expect(Buffer.from(keys[0]!.x as string, "base64url")).toHaveLength(32);
  });

  it("tells consumers to cache it for at least Nomad's 15 minutes", async () => {
    const s = await start();
    const res = await s.call(JWKS);
    const maxAge = Number(/^max-age=(\d+)$/.exec(res.headers.get("cache-control") ?? "")?.[1]);
    // Half of the 30-day rotation threshold left on a new key, plus up to a tenth of stagger.
    expect(maxAge).toBeGreaterThanOrEqual(15 * 60);
    expect(maxAge).toBeLessThanOrEqual(Math.ceil(15 * 24 * 3600 * 1.1));
  });

  it("publishes the key that verifies what the server signs with its root key", async () => {
    const s = await start();
    const jwks = (await (await s.call(JWKS)).json()) as JSONWebKeySet;
    const kid = jwks.keys[0]!.kid!;
    const material = s.keyring.get(kid);
    expect(material).toBeDefined();
    const jwt = await new SignJWT({ nomad_namespace: "default", nomad_job_id: "web" })
      .setProtectedHeader({ alg: "EdDSA", kid })
      .setIssuedAt()
      .sign(material!.signingKey);
    const { payload, protectedHeader } = await jwtVerify(jwt, createLocalJWKSet(jwks));
    expect(protectedHeader.kid).toBe(kid);
    expect(payload.nomad_job_id).toBe("web");
  });

  it("answers OIDC discovery 404 unless oidc_issuer is set, as Nomad", async () => {
    const plain = await start();
    const off = await plain.call(OIDC);
    expect(off.status).toBe(404);
    expect(await off.text()).toBe("OIDC Discovery endpoint disabled");

    const s = await start(["--oidc-issuer", "https://nomad.example.com:4646/"]);
    const res = await s.call(OIDC);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({
      issuer: "https://nomad.example.com:4646/",
      jwks_uri: "https://nomad.example.com:4646/.well-known/jwks.json",
      id_token_signing_alg_values_supported: ["EdDSA"],
      response_types_supported: ["code"],
      subject_types_supported: ["public"],
    });
  });

  it("answers other methods 405", async () => {
    const s = await start();
    expect((await s.call(JWKS, { method: "PUT" })).status).toBe(405);
    expect((await s.call(OIDC, { method: "POST" })).status).toBe(405);
  });
});
