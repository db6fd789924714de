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

/** The JWTs of one allocation's tasks, for the key and issue time they are signed with. */
interface AllocJwts {
  readonly allocID: string;
  readonly keyId: string;
  readonly iat: number;
  /** Task name → its JWT, or the promise of it while it is being signed. */
  readonly tasks: Map<string, string | Promise<string>>;
  /** The whole SignedIdentities once every task's JWT was at hand, for the job and group it was made from. */
  whole?: WholeIdentities;
}

/**
 * An allocation's SignedIdentities as last answered, served again as long
 * as the entry stands (same key, same issue time) and the allocation has the
 * same job object and group: rows, and the jobs they carry, are never
 * changed once stored, so the same job object and group name give the same
 * task names, and the tasks' JWTs are those of the entry. A client pulls
 * its allocations again after each change of theirs; this spares each pull
 * the task names' walk, a map lookup per task and a new object.
 */
interface WholeIdentities {
  readonly job: object | null;
  readonly group: string;
  /** Frozen: every reply that carries it shares it. */
  readonly identities: SignedIdentities;
}

/**
 * Signed JWTs in memory, so the leader serves a client the identities it
 * signed at placement without signing again. Never written anywhere; a miss
 * signs again and gets the same JWT. Kept by allocation ID (a row's own
 * string, so a lookup builds no key) with the key and issue time they were
 * signed with: JWTs of another key or time are dropped, never served, and
 * an allocation replaced by a newer row finds its JWTs all the same. The
 * oldest allocations go first past the limit. A JWT being signed is kept as
 * its promise: a client that asks for it meanwhile (it is woken by the same
 * apply that started the signing) waits for it instead of signing it twice.
 */
class SignedIdentityCache {
  private readonly allocs = new Map<string, AllocJwts>();
  /** JWTs, and promises of them, in `allocs`. */
  private size = 0;
  readonly signer = new IdentitySigner();

  constructor(private readonly limit: number) {}

  jwt(
    keyring: Keyring,
    alloc: IdentityAlloc,
    keyId: string,
    iat: number,
    task: string,
  ): string | Promise<string> {
    let entry = this.allocs.get(alloc.ID);
    if (entry !== undefined && (entry.keyId !== keyId || entry.iat !== iat)) {
      this.drop(entry);
      entry = undefined;
    }
    const kept = entry?.tasks.get(task);
    if (kept !== undefined) return kept;
    const made = signTask(this.signer, keyring, alloc, keyId, iat, task);
    if (entry === undefined) {
      entry = { allocID: alloc.ID, keyId, iat, tasks: new Map() };
      this.allocs.set(alloc.ID, entry);
    }
    this.keep(entry, task, made);
    if (typeof made === "string") return made;
    const into = entry;
    const signed = made.then(
      (jwt) => {
        if (into.tasks.get(task) === signed) into.tasks.set(task, jwt);
        return jwt;
      },
      (err: unknown) => {
        if (into.tasks.get(task) === signed) {
          into.tasks.delete(task);
          if (this.allocs.get(into.allocID) === into) this.size--;
        }
        throw err;
      },
    );
    into.tasks.set(task, signed);
    return signed;
  }

  /** The identities answered last for this allocation, if they still are its answer (see WholeIdentities). */
  whole(alloc: IdentityAlloc, keyId: string, iat: number): SignedIdentities | undefined {
    const entry = this.allocs.get(alloc.ID);
    const whole = entry?.whole;
    if (whole === undefined || entry!.keyId !== keyId || entry!.iat !== iat) return undefined;
    return whole.job === alloc.Job && whole.group === alloc.TaskGroup ? whole.identities : undefined;
  }

  /** Keeps `identities`, every one a JWT of this entry, as the allocation's whole answer. */
  keepWhole(alloc: IdentityAlloc, keyId: string, iat: number, identities: SignedIdentities): void {
    const entry = this.allocs.get(alloc.ID);
    // Past the limit the entry may have gone (or been made again) while the tasks were looked up.
    if (entry === undefined || entry.keyId !== keyId || entry.iat !== iat) return;
    entry.whole = { job: alloc.Job, group: alloc.TaskGroup, identities: Object.freeze(identities) };
  }

  private keep(entry: AllocJwts, task: string, jwt: string | Promise<string>): void {
    entry.tasks.set(task, jwt);
    this.size++;
    for (const oldest of this.allocs.values()) {
      if (this.size <= this.limit || oldest === entry) break;
      this.drop(oldest);
    }
  }

  private drop(entry: AllocJwts): void {
    this.allocs.delete(entry.allocID);
    this.size -= entry.tasks.size;
  }
}

/** One task's JWT, signed now or (elsewhere) later. */
function signTask(
  signer: IdentitySigner,
  keyring: Keyring,
  alloc: IdentityAlloc,
  keyId: string,
  iat: number,
  task: string,
): string | Promise<string> {
  const material = keyring.get(keyId);
  if (!material) throw new SigningKeyUnavailable(keyId);
  return signer.sign(keyId, material.signingKey, identityClaims(alloc, alloc.Job, task, iat));
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
  const kept = cache.whole(alloc, keyId, iat);
  if (kept !== undefined) return kept;
  const out: SignedIdentities = {};
  let later: Promise<unknown>[] | undefined;
  for (const task of taskNames(alloc)) {
    const jwt = cache.jwt(keyring, alloc, keyId, iat, task);
    if (typeof jwt === "string") out[task] = jwt;
    else {
      later ??= [];
      later.push(
        jwt.then((made) => {
          out[task] = made;
        }),
      );
    }
  }
  // Kept only when every JWT was at hand: one being signed may yet fail.
  if (later === undefined) {
    cache.keepWhole(alloc, keyId, iat, out);
    return out;
  }
  return Promise.all(later).then(() => out);
}

/**
 * An allocation as its own node receives it: the row, and its tasks'
 * identities (Nomad's Allocation.SignedIdentities), kept apart so that the
 * reply's JSON is written from the row as it is stored, without a copy
 * (client-rpc/reply-json.ts). toJSON is the one object any other encoder
 * writes (msgpack honours it as JSON.stringify does).
 */
export class SignedAlloc {
  constructor(
    readonly row: AllocRow,
    readonly identities: SignedIdentities,
  ) {}

  toJSON(): AllocRow & { SignedIdentities: SignedIdentities } {
    return { ...this.row, SignedIdentities: this.identities };
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
): Promise<(AllocRow | SignedAlloc)[]> {
  const out: (AllocRow | SignedAlloc)[] = [];
  const later: Promise<void>[] = [];
  await inSlices(rows, (row) => {
    if (row.NodeID !== nodeID || !row.SigningKeyID) {
      out.push(row);
      return;
    }
    try {
      const identities = identitiesOf(keyring, row);
      if (identities === undefined) out.push(row);
      else if (!(identities instanceof Promise)) out.push(new SignedAlloc(row, identities));
      else {
        const at = out.push(row) - 1;
        later.push(
          identities.then((signed) => {
            out[at] = new SignedAlloc(row, signed);
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
