import type { Logger } from "pino";
import { filter, type Subscription } from "rxjs";
import type { RootKeyRow, RootKeyTable } from "../../projections/root-keys.ts";
import type { Store } from "../store/store.ts";
import { type Clock, systemClock, type Timer } from "../util/clock.ts";
import { type KeyEncryptionKey, KeyUnwrapError, unwrapKey } from "./key-wrap.ts";
import type { Keyring } from "./keyring.ts";
import { type Keystore, KeystoreError } from "./keystore.ts";
import { type RootKeyMaterial, rootKeyMaterial } from "./root-key-material.ts";

/** How long a key that could not be obtained for now waits before the next try. */
export interface RetryPolicy {
  readonly firstMs: number;
  readonly maxMs: number;
}

/** 1s, doubling, at most a minute apart. */
export const DEFAULT_RETRY: RetryPolicy = { firstMs: 1_000, maxMs: 60_000 };

export interface RootKeyMaterialSyncDeps {
  readonly store: Store;
  readonly rootKeys: RootKeyTable;
  readonly keyring: Keyring;
  /** Absent with the memory log. */
  readonly keystore?: Keystore;
  readonly clusterKek?: KeyEncryptionKey;
  readonly logger: Logger;
  /** Runs the retries' timers; the system clock unless a test gives a virtual one. */
  readonly clock?: Clock;
  readonly retry?: RetryPolicy;
}

/** One attempt at a key: got it, or why not and whether trying again may help. */
type Attempt =
  | { readonly got: true }
  | { readonly got: false; readonly why: string[]; readonly transient: boolean };

/**
 * Runs on every server, leader or not: for each root key the log names, it
 * obtains the material into the in-memory keyring, from this server's
 * keystore or, with the cluster KEK, from the wrapped copy in the log (then
 * keeps it in the keystore too). Each key is obtained on its own: one that
 * cannot be had *now* (a keystore that cannot be read or written) is tried
 * again with backoff while the others proceed (Nomad's #15092: its
 * replicator once stopped at the first failing key). One that can never be
 * had here (no KEK for a wrapped copy, no copy at all) changes no table; it
 * says so once, naming why and what that means. A key deleted from the log
 * is forgotten: memory and keystore.
 */
export class RootKeyMaterialSync {
  private subscription: Subscription | undefined;
  private queue: Promise<void> = Promise.resolve();
  /** Keys that cannot be obtained here, ever (until a restart with other settings). */
  private readonly missing = new Set<string>();
  /** Keys waiting for their next try. */
  private readonly retries = new Map<string, { attempts: number; timer?: Timer }>();
  private stopped = false;

  constructor(private readonly deps: RootKeyMaterialSyncDeps) {}

  private get clock(): Clock {
    return this.deps.clock ?? systemClock;
  }

  /** Resolves once every key already in the table was looked for; later keys follow as they are applied. */
  start(): Promise<void> {
    this.stopped = false;
    this.subscription = this.deps.store.change$
      .pipe(filter((c) => c.table === "root_keys" && (c.before === undefined || c.after === undefined)))
      .subscribe((c) => {
        if (c.after === undefined) this.run(() => this.forget(c.key));
        else this.enqueue((c.after as RootKeyRow).KeyID);
      });
    for (const row of this.deps.rootKeys.all()) this.enqueue(row.KeyID);
    return this.queue;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.subscription?.unsubscribe();
    this.subscription = undefined;
    for (const retry of this.retries.values()) if (retry.timer) this.clock.clearTimeout(retry.timer);
    this.retries.clear();
    await this.queue;
  }

  /** Resolves once every attempt queued so far is over (tests). */
  idle(): Promise<void> {
    return this.queue;
  }

  /** KeyIDs whose material this server does not hold: for good, or until a retry succeeds. */
  unavailable(): readonly string[] {
    return [...new Set([...this.missing, ...this.retries.keys()])];
  }

  private run(step: () => Promise<void>): void {
    this.queue = this.queue.then(step).catch((err: unknown) => {
      this.deps.logger.error({ err }, "root key material sync step failed");
    });
  }

  private enqueue(keyId: string): void {
    this.run(() => this.obtain(keyId));
  }

  private async obtain(keyId: string): Promise<void> {
    const { keyring, rootKeys, logger } = this.deps;
    const row = rootKeys.get(keyId);
    if (this.stopped || !row || keyring.has(keyId)) {
      this.retries.delete(keyId);
      return;
    }
    const attempt = await this.attempt(row);
    if (attempt.got) {
      this.retries.delete(keyId);
      this.missing.delete(keyId);
      return;
    }
    if (attempt.transient) {
      const attempts = (this.retries.get(keyId)?.attempts ?? 0) + 1;
      const { firstMs, maxMs } = this.deps.retry ?? DEFAULT_RETRY;
      const retryMs = Math.min(maxMs, firstMs * 2 ** (attempts - 1));
      const timer = this.clock.setTimeout(() => {
        const retry = this.retries.get(keyId);
        if (retry) this.retries.set(keyId, { attempts: retry.attempts });
        this.enqueue(keyId);
      }, retryMs);
      this.retries.set(keyId, { attempts, timer });
      logger.warn(
        { keyId, attempts, retryMs },
        `cannot obtain root key ${keyId} material now: ${attempt.why.join("; ")}. Trying again in ${retryMs / 1000}s; the other keys are not held up`,
      );
      return;
    }
    this.retries.delete(keyId);
    if (this.missing.has(keyId)) return;
    this.missing.add(keyId);
    logger.warn(
      { keyId, state: row.State, kekId: row.Wrapped?.KekID },
      `root key ${keyId} material unavailable: ${attempt.why.join("; ")}. ` +
        "Every table is still rebuilt from the log, but on this server what this key encrypted " +
        "cannot be decrypted and nothing can be signed with it",
    );
  }

  private async attempt(row: RootKeyRow): Promise<Attempt> {
    const { keystore, clusterKek } = this.deps;
    const why: string[] = [];
    let transient = false;
    try {
      const stored = await keystore?.load(row.KeyID);
      if (stored) {
        const material = await this.verified(row, stored);
        if (material) {
          this.keep(material, "keystore");
          return { got: true };
        }
        why.push("the keystore's copy is not the key the log names (its public key differs)");
      } else {
        why.push(
          keystore ? `this server's keystore (${keystore.dir}) does not have it` : "there is no keystore",
        );
      }
    } catch (err) {
      why.push((err as Error).message);
      transient ||= !(err instanceof KeystoreError) || err.transient;
    }
    if (!row.Wrapped) {
      why.push("the log does not carry it (it was created without a cluster KEK)");
    } else if (!clusterKek) {
      why.push(
        `the log carries it wrapped under cluster KEK ${row.Wrapped.KekID}, but this server has no keyring_kek`,
      );
    } else {
      try {
        const material = await this.verified(row, unwrapKey(clusterKek, row.KeyID, row.Wrapped));
        if (material) {
          // Kept on disk before it is used, as the leader does with a key it creates.
          await keystore?.save(row, material.key);
          this.keep(material, "log");
          return { got: true };
        }
        why.push("the log's copy is not the key the log names (its public key differs)");
      } catch (err) {
        why.push((err as Error).message);
        // A wrong KEK or a forged copy stays so; a failed keystore write may not.
        transient ||= !(err instanceof KeyUnwrapError);
      }
    }
    return { got: false, why, transient };
  }

  /**
   * The public key in the log vouches for the material: a keystore file of
   * another cluster must not sign identities that no JWKS would verify.
   */
  private async verified(row: RootKeyRow, key: Buffer): Promise<RootKeyMaterial | undefined> {
    let material: RootKeyMaterial;
    try {
      material = await rootKeyMaterial(row.KeyID, key);
    } catch {
      return undefined; // not 32 bytes: no root key at all
    }
    return material.signingPublicKey.X === row.SigningKey.X ? material : undefined;
  }

  private keep(material: RootKeyMaterial, from: string): void {
    this.deps.keyring.add(material);
    this.deps.logger.debug({ keyId: material.keyId, from }, "root key material loaded");
  }

  /** Nomad's Keyring.Delete removes the key from the keyring; here every server does, and from its keystore. */
  private async forget(keyId: string): Promise<void> {
    const retry = this.retries.get(keyId);
    if (retry?.timer) this.clock.clearTimeout(retry.timer);
    this.retries.delete(keyId);
    this.missing.delete(keyId);
    this.deps.keyring.delete(keyId);
    try {
      await this.deps.keystore?.remove(keyId);
      this.deps.logger.info({ keyId }, "root key deleted: material forgotten");
    } catch (err) {
      this.deps.logger.warn({ err, keyId }, "root key deleted, but its keystore file could not be removed");
    }
  }
}
