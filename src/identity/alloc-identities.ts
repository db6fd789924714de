import type { AllocRow } from "../../projections/allocs.ts";
import { activeRootKey, type RootKeyTable } from "../../projections/root-keys.ts";
import type { AllocationSpec } from "../../streams/allocs.ts";
import type { Keyring } from "../keyring/keyring.ts";
import { inSlices } from "../query/sliced-walk.ts";
import { identityClaims, issuedAtOf, taskNames } from "./claims.ts";
import { IdentitySigner, type SignElsewhere } from "./identity-signer.ts";

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
 * is never served; the oldest go first past the limit. A JWT being signed is
 * kept as its promise: a client that asks for it meanwhile (it is woken by
 * the same apply that started the signing) waits for it instead of signing
 * it twice.
 */
class SignedIdentityCache {
  private readonly jwts = new Map<string, string>();
  private readonly signing = new Map<string, Promise<string>>();
  readonly signer = new IdentitySigner();

  constructor(private readonly limit: number) {}

  jwt(key: string, sign: (signer: IdentitySigner) => string | Promise<string>): string | Promise<string> {
    const jwt = this.jwts.get(key) ?? this.signing.get(key);
    if (jwt !== undefined) return jwt;
    const made = sign(this.signer);
    if (typeof made === "string") {
      this.keep(key, made);
      return made;
    }
    const signed = made.then(
      (j) => {
        this.signing.delete(key);
        this.keep(key, j);
        return j;
      },
      (err: unknown) => {
        this.signing.delete(key);
        throw err;
      },
    );
    this.signing.set(key, signed);
    return signed;
  }

  private keep(key: string, jwt: string): void {
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
 * Where the identities of `keyring`'s server are signed from now on: in
 * batches by `elsewhere` (its scheduler threads), or on the event loop
 * (undefined, the default).
 */
export function signIdentitiesElsewhere(keyring: Keyring, elsewhere: SignElsewhere | undefined): void {
  cacheOf(keyring).signer.signElsewhere(elsewhere);
}

/** Identities all at hand, or a promise of them while some are being signed. */
type IdentitiesNowOrLater = SignedIdentities | Promise<SignedIdentities>;

/**
 * Nomad's SignedIdentities of one allocation, made again from what the log
 * keeps (SigningKeyID and CreateTime): one JWT per task of its group.
 * Undefined when it was placed without a key. Throws SigningKeyUnavailable
 * when this server lacks the key's material and has not signed them before.
 */
export async function allocIdentities(
  keyring: Keyring,
  alloc: IdentityAlloc,
): Promise<SignedIdentities | undefined> {
  return identitiesOf(keyring, alloc);
}

/** allocIdentities without a promise when every JWT is cached (the common case, and most of the calls). */
function identitiesOf(keyring: Keyring, alloc: IdentityAlloc): IdentitiesNowOrLater | undefined {
  const keyId = alloc.SigningKeyID;
  if (!keyId) return undefined;
  const cache = cacheOf(keyring);
  const iat = issuedAtOf(alloc);
  const out: SignedIdentities = {};
  const later: Promise<void>[] = [];
  for (const task of taskNames(alloc)) {
    const jwt = cache.jwt(`${alloc.ID}\u0000${task}\u0000${keyId}\u0000${iat}`, (signer) => {
      const material = keyring.get(keyId);
      if (!material) throw new SigningKeyUnavailable(keyId);
      return signer.sign(keyId, material.signingKey, identityClaims(alloc, alloc.Job, task, iat));
    });
    if (typeof jwt === "string") out[task] = jwt;
    else
      later.push(
        jwt.then((made) => {
          out[task] = made;
        }),
      );
  }
  return later.length > 0 ? Promise.all(later).then(() => out) : out;
}

type ServedAlloc = AllocRow | (AllocRow & { SignedIdentities: SignedIdentities });

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
): Promise<ServedAlloc[]> {
  const out: ServedAlloc[] = [];
  const later: Promise<void>[] = [];
  await inSlices(rows, (row) => {
    if (row.NodeID !== nodeID || !row.SigningKeyID) {
      out.push(row);
      return;
    }
    try {
      const identities = identitiesOf(keyring, row);
      if (identities === undefined) out.push(row);
      else if (!(identities instanceof Promise)) out.push({ ...row, SignedIdentities: identities });
      else {
        const at = out.push(row) - 1;
        later.push(
          identities.then((signed) => {
            out[at] = { ...row, SignedIdentities: signed };
          }),
        );
      }
    } catch (err) {
      if (!(err instanceof SigningKeyUnavailable)) throw err;
      onUnavailable(row, err);
      out.push(row);
    }
  });
  await Promise.all(later);
  return out;
}

/**
 * Signs the identities of `allocs` (those stamped with a key) into the
 * cache, in slices; resolves with how many JWTs they have once all are
 * made. An allocation whose key's material went away is skipped.
 */
export async function signIntoCache(keyring: Keyring, allocs: readonly IdentityAlloc[]): Promise<number> {
  let signed = 0;
  const later: Promise<unknown>[] = [];
  await inSlices(allocs, (alloc) => {
    try {
      const identities = identitiesOf(keyring, alloc);
      if (identities instanceof Promise)
        later.push(identities.then((made) => (signed += Object.keys(made).length)));
      else if (identities) signed += Object.keys(identities).length;
    } catch (err) {
      if (!(err instanceof SigningKeyUnavailable)) throw err;
    }
  });
  await Promise.all(later);
  return signed;
}
