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

/** The key and issue time of an allocation's JWTs: one object for the allocations signed alike in a row (a plan's). */
interface Stamp {
  readonly keyId: string;
  readonly iat: number;
}

/** A task's JWT, or the promise of it while it is being signed. */
type KeptJwt = string | Promise<string>;

/** `job` of an entry not yet answered whole: no allocation's Job is this object. */
const NOT_ANSWERED: object = Object.freeze({});

/**
 * The JWTs of one allocation's tasks, for the key and issue time they are
 * signed with. `jwts` is the answer itself once it was answered whole (every
 * task's JWT at hand, in the job's order): frozen then, since every reply
 * that carries it shares it, and served again as long as the allocation has
 * the same job object and group. Rows, and the jobs they carry, are never
 * changed once stored, so the same job object and group name give the same
 * task names, and the tasks' JWTs are those of the entry. A client pulls its
 * allocations again after each change of theirs; this spares each pull the
 * task names' walk, a lookup per task and a new object. One object and the
 * JWTs an allocation, besides the map's slot: what a scavenge copies while
 * the burst places them.
 */
class AllocJwts {
  /** Task name → its JWT or the promise of it. Frozen once answered whole; copied to be changed then. */
  jwts: Record<string, KeptJwt> = {};
  /** JWTs and promises in `jwts`. */
  count = 0;
  /** Promises in `jwts`. */
  pending = 0;
  /** The job object and group `jwts` is the whole answer for (NOT_ANSWERED until it is one). */
  job: object | null = NOT_ANSWERED;
  group = "";

  constructor(readonly stamp: Stamp) {}
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
  private lastStamp: Stamp = { keyId: "", iat: Number.NaN };
  readonly signer = new IdentitySigner();

  constructor(private readonly limit: number) {}

  /** The identities of `alloc`'s tasks, signing those not kept. */
  identities(keyring: Keyring, alloc: IdentityAlloc, keyId: string, iat: number): IdentitiesNowOrLater {
    const whole = this.whole(alloc, keyId, iat);
    if (whole !== undefined) return whole;
    const tasks = answeredTasks(alloc);
    const entry = this.signMissing(keyring, alloc, keyId, iat, tasks);
    if (entry === undefined) return {};
    if (entry.pending === 0) return this.answer(entry, alloc, tasks);
    const kept = entry.jwts;
    return Promise.all(tasks.map((task) => kept[task])).then((jwts) => {
      const out: SignedIdentities = {};
      for (const [i, task] of tasks.entries()) out[task] = jwts[i]!;
      return out;
    });
  }

  /**
   * Signs what is not kept of `alloc`'s identities, as the plan applier
   * does after apply: pushes the promises of those being signed to `later`
   * and says how many JWTs the allocation has. No answer is made for it: its
   * node's first pull makes that, once the JWTs are at hand.
   */
  sign(
    keyring: Keyring,
    alloc: IdentityAlloc,
    keyId: string,
    iat: number,
    later: Promise<unknown>[],
  ): number {
    const whole = this.whole(alloc, keyId, iat);
    if (whole !== undefined) return Object.keys(whole).length;
    const tasks = answeredTasks(alloc);
    const entry = this.signMissing(keyring, alloc, keyId, iat, tasks);
    if (entry !== undefined && entry.pending !== 0) {
      for (const task of tasks) {
        const jwt = entry.jwts[task];
        if (typeof jwt !== "string") later.push(jwt!);
      }
    }
    return tasks.length;
  }

  /** The entry's answer if it still is the allocation's; drops an entry of another key or time. */
  private whole(alloc: IdentityAlloc, keyId: string, iat: number): SignedIdentities | undefined {
    const entry = this.allocs.get(alloc.ID);
    if (entry === undefined) return undefined;
    if (entry.stamp.keyId !== keyId || entry.stamp.iat !== iat) {
      this.drop(alloc.ID, entry);
      return undefined;
    }
    return entry.job === alloc.Job && entry.group === alloc.TaskGroup
      ? (entry.jwts as SignedIdentities)
      : undefined;
  }

  /** Signs the tasks not kept; the allocation's entry after, undefined if it has none (no task). */
  private signMissing(
    keyring: Keyring,
    alloc: IdentityAlloc,
    keyId: string,
    iat: number,
    tasks: readonly string[],
  ): AllocJwts | undefined {
    let entry = this.allocs.get(alloc.ID);
    for (const task of tasks) {
      if (entry !== undefined && Object.hasOwn(entry.jwts, task)) continue;
      const made = signTask(this.signer, keyring, alloc, keyId, iat, task);
      entry ??= this.enter(alloc.ID, keyId, iat);
      this.keep(alloc.ID, entry, task, made);
    }
    return entry;
  }

  /**
   * Every task's JWT is at hand: the entry's own object when it holds just
   * these tasks in this order (then kept as the whole answer), otherwise a new
   * one made so, and kept instead.
   */
  private answer(entry: AllocJwts, alloc: IdentityAlloc, tasks: readonly string[]): SignedIdentities {
    let i = 0;
    let inOrder = entry.count === tasks.length;
    if (inOrder) {
      for (const task in entry.jwts) {
        if (task !== tasks[i++]) {
          inOrder = false;
          break;
        }
      }
    }
    if (inOrder) {
      if (!Object.isFrozen(entry.jwts)) Object.freeze(entry.jwts);
    } else {
      const out: SignedIdentities = {};
      for (const task of tasks) out[task] = entry.jwts[task] as string;
      const wholeOut = Object.freeze(out);
      // The JWTs of tasks this job lacks go (a row of the job that has them signs them again): the answer is all it keeps.
      const kept = Object.keys(wholeOut).length;
      if (this.allocs.get(alloc.ID) === entry) this.size += kept - entry.count;
      entry.count = kept;
      entry.jwts = wholeOut;
    }
    entry.job = alloc.Job;
    entry.group = alloc.TaskGroup;
    return entry.jwts as SignedIdentities;
  }

  private enter(allocID: string, keyId: string, iat: number): AllocJwts {
    let stamp = this.lastStamp;
    if (stamp.keyId !== keyId || stamp.iat !== iat) {
      stamp = { keyId, iat };
      this.lastStamp = stamp;
    }
    const entry = new AllocJwts(stamp);
    this.allocs.set(allocID, entry);
    return entry;
  }

  private keep(allocID: string, entry: AllocJwts, task: string, made: KeptJwt): void {
    if (Object.isFrozen(entry.jwts)) {
      entry.jwts = { ...entry.jwts };
      entry.job = NOT_ANSWERED;
    }
    const jwts = entry.jwts;
    if (typeof made === "string") jwts[task] = made;
    else {
      const signed: Promise<string> = made.then(
        (jwt) => {
          if (entry.jwts[task] === signed) {
            entry.jwts[task] = jwt;
            entry.pending--;
          }
          return jwt;
        },
        (err: unknown) => {
          if (entry.jwts[task] === signed) {
            delete entry.jwts[task];
            entry.pending--;
            entry.count--;
            if (this.allocs.get(allocID) === entry) this.size--;
          }
          throw err;
        },
      );
      jwts[task] = signed;
      entry.pending++;
    }
    entry.count++;
    if (++this.size > this.limit) this.evict(entry);
  }

  /** The oldest allocations go until the cache is within its limit, `keeping` and those after it stay. */
  private evict(keeping: AllocJwts): void {
    for (const [oldestID, oldest] of this.allocs) {
      if (this.size <= this.limit || oldest === keeping) break;
      this.drop(oldestID, oldest);
    }
  }

  private drop(allocID: string, entry: AllocJwts): void {
    this.allocs.delete(allocID);
    this.size -= entry.count;
  }
}

/** The tasks an answer has, in the job's order. */
function answeredTasks(alloc: IdentityAlloc): string[] {
  const tasks = taskNames(alloc);
  // A plain object cannot hold it as its own property (it sets the prototype): no answer ever had it.
  if (tasks.includes("__proto__")) tasks.splice(tasks.indexOf("__proto__"), 1);
  return tasks;
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

/** JWTs the cache keeps at most. ~400 bytes a JWT and ~160 an allocation: about 36 MB at most. */
export const IDENTITY_CACHE_LIMIT = 65_536;

// One cache per keyring, i.e. per server: the plan applier and the client RPC share it.
const caches = new WeakMap<Keyring, SignedIdentityCache>();

function cacheOf(keyring: Keyring): SignedIdentityCache {
  let cache = caches.get(keyring);
  if (!cache) {
    cache = new SignedIdentityCache(IDENTITY_CACHE_LIMIT);
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
  return cacheOf(keyring).identities(keyring, alloc, keyId, issuedAtOf(alloc));
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
  const cache = cacheOf(keyring);
  let signed = 0;
  const later: Promise<unknown>[] = [];
  await inSlices(allocs, (alloc) => {
    const keyId = alloc.SigningKeyID;
    if (!keyId) return;
    try {
      signed += cache.sign(keyring, alloc, keyId, issuedAtOf(alloc), later);
    } catch (err) {
      if (!(err instanceof SigningKeyUnavailable)) throw err;
    }
  });
  await Promise.all(later);
  return signed;
}
