import { sign } from "node:crypto";
import { createLocalJWKSet, decodeProtectedHeader, jwtVerify } from "jose";
import { beforeAll, describe, expect, it } from "vitest";
import { identityClaims, issuedAtOf } from "../../src/identity/claims.ts";
import { IdentityVerifier } from "../../src/identity/identity-verifier.ts";
import { looksLikeJwt, signIdentity } from "../../src/identity/jwt.ts";
import type { RootKeyMaterial } from "../../src/keyring/root-key-material.ts";
import { IdentityWorld, NOW_MS, PLACED_NS } from "./identity-fixtures.ts";

const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString("base64url");

describe("workload identity JWTs", () => {
  const world = new IdentityWorld();
  const verifier = new IdentityVerifier(world);
  let key: RootKeyMaterial;
  let other: RootKeyMaterial;
  beforeAll(async () => {
    key = await world.addKey();
    // Known to the cluster, but not the key that signed what is presented below.
    other = await world.addKey({ state: "inactive" });
  });

  const tokenFor = (alloc = world.addAlloc(), task = "server", material = key) =>
    signIdentity(
      material.keyId,
      material.signingKey,
      identityClaims(alloc, alloc.Job, task, issuedAtOf(alloc)),
    );

  /** A JWS over any header and payload, signed with `material`. */
  const forged = (header: Record<string, unknown>, payload: Record<string, unknown>, material = key) => {
    const input = `${b64(header)}.${b64(payload)}`;
    return `${input}.${sign(null, Buffer.from(input), material.signingKey).toString("base64url")}`;
  };

  const refusal = (token: string, nowMs = NOW_MS) => {
    try {
      verifier.verify(token, nowMs);
    } catch (err) {
      return (err as Error).message;
    }
    return "accepted";
  };

  it("round-trip: what is signed verifies, with the claims and key it was signed with", () => {
    const alloc = world.addAlloc();
    const jwt = tokenFor(alloc, "sidecar");
    expect(looksLikeJwt(jwt)).toBe(true);
    expect(decodeProtectedHeader(jwt)).toEqual({ alg: "EdDSA", kid: key.keyId, typ: "JWT" });
    const verified = verifier.verify(jwt, NOW_MS);
    expect(verified.keyId).toBe(key.keyId);
    expect(verified.alloc.ID).toBe(alloc.ID);
    expect(verified.claims).toEqual({
      nomad_namespace: "default",
      nomad_job_id: "web",
      nomad_allocation_id: alloc.ID,
      nomad_task: "sidecar",
      nbf: PLACED_NS / 1e9,
      iat: PLACED_NS / 1e9,
    });
    // Checked again from the cache of verified tokens: same answer.
    expect(verifier.verify(jwt, NOW_MS).claims.nomad_task).toBe("sidecar");
  });

  it("is deterministic: the same key and claims give the same JWT, which is why the log keeps none", () => {
    const alloc = world.addAlloc();
    expect(tokenFor(alloc)).toBe(tokenFor(alloc));
    expect(tokenFor(alloc, "server")).not.toBe(tokenFor(alloc, "sidecar"));
  });

  it("verifies with jose against the public keys of the root_keys table (the JWKS)", async () => {
    const jwks = createLocalJWKSet({
      keys: [...world.rootKeys.all()].map((k) => ({
        kty: "OKP",
        crv: "Ed25519",
        alg: "EdDSA",
        use: "sig",
        kid: k.KeyID,
        x: k.SigningKey.X,
      })),
    });
    const alloc = world.addAlloc();
    const { payload } = await jwtVerify(tokenFor(alloc), jwks, { currentDate: new Date(NOW_MS) });
    expect(payload.nomad_allocation_id).toBe(alloc.ID);
  });

  it("refuses a kid the cluster does not have, and a token without one", () => {
    const alloc = world.addAlloc();
    const claims = identityClaims(alloc, alloc.Job, "server", issuedAtOf(alloc));
    expect(
      refusal(forged({ alg: "EdDSA", kid: "11111111-2222-3333-4444-555555555555" }, { ...claims })),
    ).toBe('failed to verify token: no such key "11111111-2222-3333-4444-555555555555" in keyring');
    expect(refusal(forged({ alg: "EdDSA", typ: "JWT" }, { ...claims }))).toBe(
      "failed to verify token: missing key ID header",
    );
  });

  it("refuses a token signed by another key than its kid names", () => {
    const alloc = world.addAlloc();
    const claims = identityClaims(alloc, alloc.Job, "server", issuedAtOf(alloc));
    expect(refusal(forged({ alg: "EdDSA", kid: key.keyId }, { ...claims }, other))).toBe(
      "failed to verify token: ed25519: verification error",
    );
  });

  it("refuses a tampered token: another task, another allocation, or the signature itself", () => {
    const alloc = world.addAlloc();
    const victim = world.addAlloc();
    const [h, p, s] = tokenFor(alloc).split(".") as [string, string, string];
    const claims = JSON.parse(Buffer.from(p, "base64url").toString()) as Record<string, unknown>;
    for (const change of [
      { nomad_task: "sidecar" },
      { nomad_allocation_id: victim.ID },
      { nomad_job_id: "db" },
    ]) {
      expect(refusal(`${h}.${b64({ ...claims, ...change })}.${s}`)).toBe(
        "failed to verify token: ed25519: verification error",
      );
    }
    const flipped = Buffer.from(s, "base64url");
    flipped[0] = flipped[0]! ^ 1;
    expect(refusal(`${h}.${p}.${flipped.toString("base64url")}`)).toBe(
      "failed to verify token: ed25519: verification error",
    );
  });

  it("accepts EdDSA only: alg none and HMAC tokens are refused", () => {
    const alloc = world.addAlloc();
    const claims = { ...identityClaims(alloc, alloc.Job, "server", issuedAtOf(alloc)) };
    expect(refusal(`${b64({ alg: "none", kid: key.keyId })}.${b64(claims)}.AAAA`)).toBe(
      "failed to verify token: unexpected signing method: none",
    );
    expect(refusal(forged({ alg: "HS256", kid: key.keyId }, claims))).toBe(
      "failed to verify token: unexpected signing method: HS256",
    );
  });

  it("refuses a token used before it is valid, beyond the clock leeway", () => {
    const alloc = world.addAlloc();
    const jwt = tokenFor(alloc);
    expect(refusal(jwt, PLACED_NS / 1e6 - 3_600_000)).toBe(
      "failed to verify token: Token used before issued",
    );
    expect(refusal(jwt, PLACED_NS / 1e6 - 30_000)).toBe("accepted");
  });

  it("refuses the identity of a client-terminal allocation, and of one that is gone", () => {
    const alloc = world.addAlloc();
    const jwt = tokenFor(alloc);
    expect(refusal(jwt)).toBe("accepted");
    // Stopped by the server while the client still runs it (poststop tasks): still valid.
    const stopping = world.update(alloc, { DesiredStatus: "stop" });
    expect(refusal(jwt)).toBe("accepted");
    world.update(stopping, { ClientStatus: "complete" });
    expect(refusal(jwt)).toBe("allocation is terminal");
    const gone = world.addAlloc();
    const goneJwt = tokenFor(gone);
    world.allocs.delete(gone.ID, 999);
    expect(refusal(goneJwt)).toBe("allocation does not exist");
  });

  it("refuses every token of a key once the key is deleted, cached or not", async () => {
    const doomed = await world.addKey({ state: "inactive" });
    const jwt = tokenFor(world.addAlloc(), "server", doomed);
    expect(refusal(jwt)).toBe("accepted");
    world.rootKeys.delete(doomed.keyId, 1000);
    expect(refusal(jwt)).toBe(`failed to verify token: no such key "${doomed.keyId}" in keyring`);
  });

  it("tells JWTs from other secrets by their shape", () => {
    expect(looksLikeJwt("c0ffee00-1111-2222-3333-444444444444")).toBe(false);
    expect(looksLikeJwt("a.b")).toBe(false);
    expect(looksLikeJwt("a.b.c.d")).toBe(false);
    expect(looksLikeJwt("a.b+.c")).toBe(false);
    expect(looksLikeJwt(`a.${"b".repeat(5000)}.c`)).toBe(false);
    expect(refusal("a.b.c")).toBe("failed to verify token: token is malformed");
  });
});
