import type { Logger } from "pino";
import { filter, type Subscription } from "rxjs";
import type { RootKeyRow, RootKeyTable } from "../../projections/root-keys.ts";
import type { Store } from "../store/store.ts";
import { type KeyEncryptionKey, unwrapKey } from "./key-wrap.ts";
import type { Keyring } from "./keyring.ts";
import type { Keystore } from "./keystore.ts";
import { rootKeyMaterial } from "./root-key-material.ts";

export interface RootKeyMaterialSyncDeps {
  readonly store: Store;
  readonly rootKeys: RootKeyTable;
  readonly keyring: Keyring;
  /** Absent with the memory log. */
  readonly keystore?: Keystore;
  readonly clusterKek?: KeyEncryptionKey;
  readonly logger: Logger;
}

/**
 * Runs on every server, leader or not: for each root key the log names, it
 * obtains the material into the in-memory keyring, from this server's
 * keystore or, with the cluster KEK, from the wrapped copy in the log (then
 * keeps it in the keystore too). A key it cannot obtain changes no table;
 * it says, once per key, why and what that means.
 */
export class RootKeyMaterialSync {
  private subscription: Subscription | undefined;
  private queue: Promise<void> = Promise.resolve();
  private readonly missing = new Set<string>();

  constructor(private readonly deps: RootKeyMaterialSyncDeps) {}

  /** Resolves once every key already in the table was looked for; later keys follow as they are applied. */
  start(): Promise<void> {
    this.subscription = this.deps.store.change$
      .pipe(filter((c) => c.table === "root_keys" && c.before === undefined && c.after !== undefined))
      .subscribe((c) => this.enqueue(c.after as RootKeyRow));
    for (const row of this.deps.rootKeys.all()) this.enqueue(row);
    return this.queue;
  }

  async stop(): Promise<void> {
    this.subscription?.unsubscribe();
    this.subscription = undefined;
    await this.queue;
  }

  /** KeyIDs whose material this server could not obtain. */
  unavailable(): readonly string[] {
    return [...this.missing];
  }

  private enqueue(row: RootKeyRow): void {
    this.queue = this.queue.then(() =>
      this.obtain(row).catch((err: unknown) =>
        this.deps.logger.error({ err, keyId: row.KeyID }, "cannot load root key material"),
      ),
    );
  }

  private async obtain(row: RootKeyRow): Promise<void> {
    const { keyring, keystore, clusterKek, logger } = this.deps;
    if (keyring.has(row.KeyID)) return;
    const why: string[] = [];
    try {
      const stored = await keystore?.load(row.KeyID);
      if (stored) {
        if (await this.accept(row, stored, "keystore")) return;
        why.push("the keystore's copy does not match the public key in the log");
      } else {
        why.push(
          keystore ? `this server's keystore (${keystore.dir}) does not have it` : "there is no keystore",
        );
      }
    } catch (err) {
      why.push((err as Error).message);
    }
    if (!row.Wrapped) {
      why.push("the log does not carry it (it was created without a cluster KEK)");
    } else if (!clusterKek) {
      why.push(
        `the log carries it wrapped under cluster KEK ${row.Wrapped.KekID}, but this server has no keyring_kek`,
      );
    } else {
      try {
        const key = unwrapKey(clusterKek, row.KeyID, row.Wrapped);
        if (await this.accept(row, key, "log")) {
          await keystore?.save(row, key);
          return;
        }
        why.push("the log's copy does not match the public key in the log");
      } catch (err) {
        why.push((err as Error).message);
      }
    }
    this.missing.add(row.KeyID);
    logger.warn(
      { keyId: row.KeyID, state: row.State, kekId: row.Wrapped?.KekID },
      `root key ${row.KeyID} material unavailable: ${why.join("; ")}. ` +
        "Every table is still rebuilt from the log, but on this server what this key encrypted " +
        "cannot be decrypted and nothing can be signed with it",
    );
  }

  /**
   * The public key in the log vouches for the material: a keystore file of
   * another cluster must not sign identities that no JWKS would verify.
   */
  private async accept(row: RootKeyRow, key: Buffer, from: string): Promise<boolean> {
    const material = await rootKeyMaterial(row.KeyID, key);
    if (material.signingPublicKey.X !== row.SigningKey.X) return false;
    this.deps.keyring.add(material);
    this.missing.delete(row.KeyID);
    this.deps.logger.debug({ keyId: row.KeyID, from }, "root key material loaded");
    return true;
  }
}
