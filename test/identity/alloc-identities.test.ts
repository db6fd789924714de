import { decodeJwt } from "jose";
import { describe, expect, it } from "vitest";
import {
  allocIdentities,
  chooseSigningKey,
  SigningKeyUnavailable,
  withSignedIdentities,
} from "../../src/identity/alloc-identities.ts";
import { IdentityVerifier } from "../../src/identity/identity-verifier.ts";
import { IdentityWorld, NOW_MS } from "./identity-fixtures.ts";

describe("an allocation's signed identities", () => {
  it("are one JWT per task of its group, signed with the key it records", async () => {
    const world = new IdentityWorld();
    const key = await world.addKey();
    const alloc = world.addAlloc({ SigningKeyID: key.keyId });
    const identities = allocIdentities(world.keyring, alloc)!;
    expect(Object.keys(identities)).toEqual(["server", "sidecar"]);
    expect(decodeJwt(identities.server!)).toMatchObject({
      nomad_task: "server",
      nomad_allocation_id: alloc.ID,
    });
    const verifier = new IdentityVerifier(world);
    expect(verifier.verify(identities.sidecar!, NOW_MS).claims.nomad_task).toBe("sidecar");
    // Made again, they are the same.
    expect(allocIdentities(world.keyring, { ...alloc })).toEqual(identities);
  });

  it("are none for an allocation placed without a key", () => {
    const world = new IdentityWorld();
    expect(allocIdentities(world.keyring, world.addAlloc())).toBeUndefined();
  });

  it("cannot be made by a server without the key's material", async () => {
    const world = new IdentityWorld();
    const key = await world.addKey({ held: false });
    expect(() => allocIdentities(world.keyring, world.addAlloc({ SigningKeyID: key.keyId }))).toThrow(
      SigningKeyUnavailable,
    );
    expect(chooseSigningKey(world.keyring, world.rootKeys)).toEqual({
      reason: `this server does not hold the material of active root key ${key.keyId}`,
    });
  });

  it("the plan applier signs with the active key only", async () => {
    const world = new IdentityWorld();
    expect(chooseSigningKey(world.keyring, world.rootKeys)).toEqual({ reason: "no active root key" });
    await world.addKey({ state: "inactive" });
    const active = await world.addKey();
    expect(chooseSigningKey(world.keyring, world.rootKeys)).toEqual({ keyId: active.keyId });
  });

  it("go to the allocation's own node only, and nowhere else", async () => {
    const world = new IdentityWorld();
    const key = await world.addKey();
    const mine = world.addAlloc({ SigningKeyID: key.keyId, NodeID: "node-1" });
    const theirs = world.addAlloc({ SigningKeyID: key.keyId, NodeID: "node-2" });
    const unsigned = world.addAlloc({ NodeID: "node-1" });
    const served = await withSignedIdentities(world.keyring, [mine, theirs, unsigned], "node-1", () => {
      throw new Error("unexpected");
    });
    expect(Object.keys((served[0] as { SignedIdentities: object }).SignedIdentities)).toEqual([
      "server",
      "sidecar",
    ]);
    expect(served[1]).not.toHaveProperty("SignedIdentities");
    expect(served[2]).not.toHaveProperty("SignedIdentities");
    // The stored rows are left as they were.
    expect(mine).not.toHaveProperty("SignedIdentities");
  });

  it("are left out, and reported, when the key's material is not held", async () => {
    const world = new IdentityWorld();
    const key = await world.addKey({ held: false });
    const alloc = world.addAlloc({ SigningKeyID: key.keyId });
    const missing: string[] = [];
    const served = await withSignedIdentities(world.keyring, [alloc], "node-1", (a, err) =>
      missing.push(`${a.ID}:${err.keyId}`),
    );
    expect(served[0]).not.toHaveProperty("SignedIdentities");
    expect(missing).toEqual([`${alloc.ID}:${key.keyId}`]);
  });
});
