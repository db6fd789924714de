import { decodeJwt, decodeProtectedHeader } from "jose";
import { describe, expect, it } from "vitest";
import { minimalAllocJob } from "../../src/bench/minimal-alloc-job.ts";
import {
  allocIdentities,
  chooseSigningKey,
  IDENTITY_CACHE_LIMIT,
  SignedAlloc,
  SigningKeyUnavailable,
  signIdentitiesElsewhere,
  signIntoCache,
  withSignedIdentities,
} from "../../src/identity/alloc-identities.ts";
import { identityClaims, issuedAtOf } from "../../src/identity/claims.ts";
import { IdentityVerifier } from "../../src/identity/identity-verifier.ts";
import { signIdentity, signJwsInput } from "../../src/identity/jwt.ts";
import { IdentityWorld, NOW_MS } from "./identity-fixtures.ts";

describe("an allocation's signed identities", () => {
  it("are one JWT per task of its group, signed with the key it records", async () => {
    const world = new IdentityWorld();
    const key = await world.addKey();
    const alloc = world.addAlloc({ SigningKeyID: key.keyId });
    const identities = (await allocIdentities(world.keyring, alloc))!;
    expect(Object.keys(identities)).toEqual(["server", "sidecar"]);
    expect(decodeJwt(identities.server!)).toMatchObject({
      nomad_task: "server",
      nomad_allocation_id: alloc.ID,
    });
    const verifier = new IdentityVerifier(world);
    expect(verifier.verify(identities.sidecar!, NOW_MS).claims.nomad_task).toBe("sidecar");
    // Made again, they are the same.
    expect(await allocIdentities(world.keyring, { ...alloc })).toEqual(identities);
  });

  it("are served from memory to a newer row of the same allocation, signed again for another key or time", async () => {
    const world = new IdentityWorld();
    const first = await world.addKey({ state: "inactive" });
    const second = await world.addKey();
    const signed: string[] = [];
    signIdentitiesElsewhere(world.keyring, async (k, inputs) => {
      signed.push(...inputs);
      return inputs.map((input) => signJwsInput(k, input));
    });
    try {
      const placed = world.addAlloc({ SigningKeyID: first.keyId });
      const atPlan = (await allocIdentities(world.keyring, placed))!;
      expect(signed).toHaveLength(2);
      // The client's status update replaces the row: nothing is signed again.
      const running = world.update(placed, { ClientStatus: "running" });
      expect(await allocIdentities(world.keyring, running)).toEqual(atPlan);
      expect(signed).toHaveLength(2);

      // Updated in place under another key, then an issue time moved: never the JWTs of before.
      const rekeyed = world.update(running, { SigningKeyID: second.keyId });
      const underSecond = (await allocIdentities(world.keyring, rekeyed))!;
      expect(signed).toHaveLength(4);
      expect(decodeProtectedHeader(underSecond.server!).kid).toBe(second.keyId);
      const later = world.update(rekeyed, { CreateTime: rekeyed.CreateTime + 2e9 });
      const atLater = (await allocIdentities(world.keyring, later))!;
      expect(signed).toHaveLength(6);
      expect(decodeJwt(atLater.server!).iat).toBe(decodeJwt(underSecond.server!).iat! + 2);
      // And back: signed again into the same JWTs as at first (Ed25519 is deterministic).
      expect(await allocIdentities(world.keyring, running)).toEqual(atPlan);
      expect(signed).toHaveLength(8);
    } finally {
      signIdentitiesElsewhere(world.keyring, undefined);
    }
  });

  it("are answered as one object while the allocation keeps its job and group, made again for another job", async () => {
    const world = new IdentityWorld();
    const key = await world.addKey();
    const placed = world.addAlloc({ SigningKeyID: key.keyId });
    const first = (await allocIdentities(world.keyring, placed))!;
    // A newer row of the allocation (a client's update) is answered with the same object, which no reply may change.
    const running = world.update(placed, { ClientStatus: "running" });
    expect(await allocIdentities(world.keyring, running)).toBe(first);
    expect(Object.isFrozen(first)).toBe(true);
    // An in-place update to a job version with another task: its task is in the answer.
    const job = placed.Job as unknown as {
      TaskGroups: readonly { Name: string; Tasks: readonly { Name: string }[] }[];
    };
    const [group] = job.TaskGroups;
    const withLogger = world.update(running, {
      Job: {
        ...placed.Job!,
        Version: 1,
        TaskGroups: [{ ...group!, Tasks: [...group!.Tasks, { Name: "logger" }] }],
      } as typeof placed.Job,
    });
    const again = (await allocIdentities(world.keyring, withLogger))!;
    expect(Object.keys(again)).toEqual(["server", "sidecar", "logger"]);
    expect(again.server).toBe(first.server);
    expect(decodeJwt(again.logger!)).toMatchObject({ nomad_task: "logger", nomad_allocation_id: placed.ID });
    // Back on the first row's job, it is answered with that job's tasks again.
    expect(Object.keys((await allocIdentities(world.keyring, running))!)).toEqual(["server", "sidecar"]);
    // Another key, and the answer is signed with it.
    const rekeyed = world.update(running, { SigningKeyID: (await world.addKey()).keyId });
    const underNew = (await allocIdentities(world.keyring, rekeyed))!;
    expect(underNew).not.toBe(first);
    expect(decodeProtectedHeader(underNew.server!).kid).toBe(rekeyed.SigningKeyID);
  });

  it("are none for an allocation placed without a key", async () => {
    const world = new IdentityWorld();
    expect(await allocIdentities(world.keyring, world.addAlloc())).toBeUndefined();
  });

  it("cannot be made by a server without the key's material", async () => {
    const world = new IdentityWorld();
    const key = await world.addKey({ held: false });
    await expect(allocIdentities(world.keyring, world.addAlloc({ SigningKeyID: key.keyId }))).rejects.toThrow(
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
    expect(served[0]).toBeInstanceOf(SignedAlloc);
    const signed = served[0] as SignedAlloc;
    expect(signed.row).toBe(mine);
    expect(Object.keys(signed.identities)).toEqual(["server", "sidecar"]);
    // Any other encoder (msgpack, JSON.stringify) writes the allocation with them last.
    expect(Object.keys(signed.toJSON()).at(-1)).toBe("SignedIdentities");
    expect(signed.toJSON()).toEqual({ ...mine, SignedIdentities: signed.identities });
    expect(served[1]).toBe(theirs);
    expect(served[2]).toBe(unsigned);
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

  it("are signed in batches elsewhere into the same JWTs as on the event loop", async () => {
    const world = new IdentityWorld();
    const key = await world.addKey();
    const allocs = Array.from({ length: 600 }, () => world.addAlloc({ SigningKeyID: key.keyId }));
    const here = await Promise.all(allocs.map((a) => allocIdentities(world.keyring, a)));

    const batches: number[] = [];
    signIdentitiesElsewhere(world.keyring, async (k, inputs) => {
      batches.push(inputs.length);
      return inputs.map((input) => signJwsInput(k, input));
    });
    try {
      // New issue times: nothing of the above is in the cache.
      const later = allocs.map((a) => ({ ...a, CreateTime: a.CreateTime + 1e9 }));
      const there = await Promise.all(later.map((a) => allocIdentities(world.keyring, a)));
      // Two tasks each, asked for in one turn: parts of at most 64.
      expect(batches).toEqual([...Array(18).fill(64), 48]);
      const material = world.keyring.get(key.keyId)!;
      later.forEach((a, i) => {
        const claims = identityClaims(a, a.Job, "server", issuedAtOf(a));
        expect(there[i]!.server).toBe(signIdentity(key.keyId, material.signingKey, claims));
        expect(there[i]!.server).not.toBe(here[i]!.server);
      });
    } finally {
      signIdentitiesElsewhere(world.keyring, undefined);
    }
  });

  it("are signed on the event loop when signing elsewhere fails", async () => {
    const world = new IdentityWorld();
    const key = await world.addKey();
    const alloc = world.addAlloc({ SigningKeyID: key.keyId });
    signIdentitiesElsewhere(world.keyring, () => Promise.reject(new Error("thread lost")));
    try {
      const identities = (await allocIdentities(world.keyring, alloc))!;
      const material = world.keyring.get(key.keyId)!;
      const claims = identityClaims(alloc, alloc.Job, "sidecar", issuedAtOf(alloc));
      expect(identities.sidecar).toBe(signIdentity(key.keyId, material.signingKey, claims));
    } finally {
      signIdentitiesElsewhere(world.keyring, undefined);
    }
  });

  it("are signed once when a client asks while the plan applier is still signing them", async () => {
    const world = new IdentityWorld();
    const key = await world.addKey();
    const alloc = world.addAlloc({ SigningKeyID: key.keyId, NodeID: "node-1" });
    const signed: string[] = [];
    signIdentitiesElsewhere(world.keyring, async (k, inputs) => {
      signed.push(...inputs);
      return inputs.map((input) => signJwsInput(k, input));
    });
    try {
      const [atPlan, served] = await Promise.all([
        allocIdentities(world.keyring, alloc),
        withSignedIdentities(world.keyring, [alloc], "node-1", () => {
          throw new Error("unexpected");
        }),
      ]);
      // One signature per task: the second caller waited for the first one's.
      expect(signed).toHaveLength(2);
      expect((served[0] as SignedAlloc).identities).toEqual(atPlan);
      expect(await allocIdentities(world.keyring, alloc)).toEqual(atPlan);
      expect(signed).toHaveLength(2);
    } finally {
      signIdentitiesElsewhere(world.keyring, undefined);
    }
  });

  it("are kept up to the limit, the oldest allocations' going first", async () => {
    const world = new IdentityWorld();
    const key = await world.addKey();
    const signed: string[] = [];
    // Signatures stand-ins: what is kept, not what it says, is under test.
    signIdentitiesElsewhere(world.keyring, async (_k, inputs) => {
      signed.push(...inputs);
      return inputs.map(() => "c2ln");
    });
    try {
      const allocs = Array.from({ length: IDENTITY_CACHE_LIMIT / 2 }, () =>
        world.addAlloc({ SigningKeyID: key.keyId }),
      );
      expect(await signIntoCache(world.keyring, allocs)).toBe(IDENTITY_CACHE_LIMIT);
      // Served from memory while within the limit: the first as much as the last.
      await allocIdentities(world.keyring, allocs[0]!);
      expect(signed).toHaveLength(IDENTITY_CACHE_LIMIT);
      // Two more JWTs: the oldest allocation (now the second: the first was just answered, not moved) goes.
      const newer = world.addAlloc({ SigningKeyID: key.keyId });
      await allocIdentities(world.keyring, newer);
      expect(signed).toHaveLength(IDENTITY_CACHE_LIMIT + 2);
      await allocIdentities(world.keyring, allocs[1]!);
      await allocIdentities(world.keyring, allocs[2]!);
      expect(signed).toHaveLength(IDENTITY_CACHE_LIMIT + 2);
      await allocIdentities(world.keyring, allocs[0]!);
      expect(signed).toHaveLength(IDENTITY_CACHE_LIMIT + 4);
      // Taking the first's place again pushed out the next oldest, the second.
      await allocIdentities(world.keyring, allocs[2]!);
      expect(signed).toHaveLength(IDENTITY_CACHE_LIMIT + 4);
      await allocIdentities(world.keyring, allocs[1]!);
      expect(signed).toHaveLength(IDENTITY_CACHE_LIMIT + 6);
    } finally {
      signIdentitiesElsewhere(world.keyring, undefined);
    }
  }, 60_000);

  it("leave out a task named __proto__, as a plain object's keys always did, and are kept all the same", async () => {
    const world = new IdentityWorld();
    const key = await world.addKey();
    const signed: string[] = [];
    signIdentitiesElsewhere(world.keyring, async (k, inputs) => {
      signed.push(...inputs);
      return inputs.map((input) => signJwsInput(k, input));
    });
    try {
      const job = minimalAllocJob("web", [
        { Name: "frontend", Count: 1, Tasks: [{ Name: "__proto__" }, { Name: "server" }] },
      ]);
      const alloc = world.addAlloc({ SigningKeyID: key.keyId, Job: job });
      const first = (await allocIdentities(world.keyring, alloc))!;
      expect(Object.getPrototypeOf(first)).toBe(Object.prototype);
      expect(Object.keys(first)).toEqual(["server"]);
      const again = (await allocIdentities(world.keyring, alloc))!;
      expect(Object.getPrototypeOf(again)).toBe(Object.prototype);
      expect(again).toEqual(first);
      expect(await allocIdentities(world.keyring, alloc)).toBe(again);
      expect(signed).toHaveLength(1);
    } finally {
      signIdentitiesElsewhere(world.keyring, undefined);
    }
  });
});
