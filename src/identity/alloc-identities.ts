import { setImmediate as nextTurn } from "node:timers/promises";
import type { AllocRow } from "../../projections/allocs.ts";
import { activeRootKey, type RootKeyTable } from "../../projections/root-keys.ts";
import type { AllocationSpec } from "../../streams/allocs.ts";
import type { Keyring } from "../keyring/keyring.ts";
import { SLICE_MS } from "../query/sliced-walk.ts";
import { identityClaims, issuedAtOf, taskNames } from "./claims.ts";
import { signIdentity } from "./jwt.ts";

/** An allocation as its identities need it. */
export type IdentityAlloc = Pick<
  AllocationSpec,
  "ID" | "Namespace" | "JobID" | "Job" | "TaskGroup" | "SigningKeyID" | "CreateTime"
>;

/** Nomad's Allocation.SignedIdentities: task name → JWT. */
export type SignedIdentities = Record<string, string>;

/** The key the plan applier signs with, or why there is none. */
export type SigningKeyChoice = { readonly keyId: string } | { readonly reason: string };

/**
 * Nomad's Encrypter.SignClaims picks the active root key; so does the plan
 * applier here, and only if this server holds its material (Nomad waits up
 * to 5 s for it; here the plan applies without identities and says why).
 */
export function chooseSigningKey(keyring: Keyring, rootKeys: RootKeyTable): SigningKeyChoice {
  const active = activeRootKey(rootKeys);
  if (!active) return { reason: "no active root key" };
  if (!keyring.has(active.KeyID)) {
    return { reason: `this server does not hold the material of active root key ${active.KeyID}` };
  }
  return { keyId: active.KeyID };
}

/** The material of `keyId` is not on this server: its identities cannot be made here. */
export class SigningKeyUnavailable extends Error {
  constructor(readonly keyId: string) {
    super(`workload identities of key ${keyId} cannot be signed: this server does not hold its material`);
  }
}

/**
 * Signed JWTs in memory, so the leader serves a client the identities it
 * signed at placement without signing again. Never written anywhere; a miss
 * signs again and gets the same JWT. Entries are keyed by everything the
 * JWT depends on that could change (the key, the issue time), so a stale one
 * is never served; the oldest go first past the limit.
 */
class SignedIdentityCache {
  private readonly jwts = new Map<string, string>();

  constructor(private readonly limit: number) {}

  get(key: string): string | undefined {
    return this.jwts.get(key);
  }

  set(key: string, jwt: string): void {
    if (this.jwts.size >= this.limit) this.jwts.delete(this.jwts.keys().next().value!);
    this.jwts.set(key, jwt);
  }
}

/** ~500 bytes a JWT: about 32 MB at most. */
const CACHE_LIMIT = 65_536;

// One cache per keyring, i.e. per server: the plan applier and the client RPC share it.
const caches = new WeakMap<Keyring, SignedIdentityCache>();

function cacheOf(keyring: Keyring): SignedIdentityCache {
  let cache = caches.get(keyring);
  if (!cache) {
    cache = new SignedIdentityCache(CACHE_LIMIT);
    caches.set(keyring, cache);
  }
  return cache;
}

/**
 * Nomad's SignedIdentities of one allocation, made again from what the log
 * keeps (SigningKeyID and CreateTime): one JWT per task of its group.
 * Undefined when it was placed without a key. Throws SigningKeyUnavailable
 * when this server lacks the key's material and has not signed them before.
 */
export function allocIdentities(keyring: Keyring, alloc: IdentityAlloc): SignedIdentities | undefined {
  const keyId = alloc.SigningKeyID;
  if (!keyId) return undefined;
  const cache = cacheOf(keyring);
  const iat = issuedAtOf(alloc);
  const out: SignedIdentities = {};
  for (const task of taskNames(alloc)) {
    const cacheKey = `${alloc.ID}\u0000${task}\u0000${keyId}\u0000${iat}`;
    let jwt = cache.get(cacheKey);
    if (jwt === undefined) {
      const material = keyring.get(keyId);
      if (!material) throw new SigningKeyUnavailable(keyId);
      jwt = signIdentity(keyId, material.signingKey, identityClaims(alloc, alloc.Job, task, iat));
      cache.set(cacheKey, jwt);
    }
    out[task] = jwt;
  }
  return out;
}

/**
 * Runs `each` over `items`, yielding to the event loop whenever a slice's
 * time is spent: signing costs ~35 µs a JWT, so ten thousand allocations of
 * a few tasks would otherwise hold the loop for a second.
 */
export async function inSlices<T>(items: Iterable<T>, each: (item: T) => void): Promise<void> {
  let sliceEnd = performance.now() + SLICE_MS;
  for (const item of items) {
    if (performance.now() > sliceEnd) {
      await nextTurn();
      sliceEnd = performance.now() + SLICE_MS;
    }
    each(item);
  }
}

/**
 * Allocations as a client receives them (Alloc.GetAllocs), with
 * SignedIdentities on those of `nodeID`, the caller's own: Nomad's client
 * reads them there. Computed at read time, never stored; the HTTP API never
 * shows them (Nomad's `json:"-"`). An allocation whose key's material this
 * server lacks goes without, reported through `onUnavailable`.
 */
export async function withSignedIdentities(
  keyring: Keyring,
  rows: readonly AllocRow[],
  nodeID: string,
  onUnavailable: (alloc: AllocRow, err: SigningKeyUnavailable) => void,
): Promise<(AllocRow | (AllocRow & { SignedIdentities: SignedIdentities }))[]> {
  const out: (AllocRow | (AllocRow & { SignedIdentities: SignedIdentities }))[] = [];
  await inSlices(rows, (row) => {
    if (row.NodeID !== nodeID || !row.SigningKeyID) {
      out.push(row);
      return;
    }
    try {
      const identities = allocIdentities(keyring, row);
      out.push(identities ? { ...row, SignedIdentities: identities } : row);
    } catch (err) {
      if (!(err instanceof SigningKeyUnavailable)) throw err;
      onUnavailable(row, err);
      out.push(row);
    }
  });
  return out;
}
