import type { KeyEncryptionKey } from "./key-wrap.ts";
import type { Keystore } from "./keystore.ts";
import type { RootKeyMaterial } from "./root-key-material.ts";

/** Where a server keeps the root keys it creates or obtains, besides memory. */
export interface KeyringStorage {
  /** Absent with the memory log: the material then lives in memory only. */
  readonly keystore?: Keystore;
  /** The cluster KEK (keyring_kek), which also wraps new keys into the log. */
  readonly clusterKek?: KeyEncryptionKey;
}

/**
 * The root key material this server holds, by KeyID: in memory only. Filled
 * by the leader when it creates a key and by RootKeyMaterialSync from the
 * keystore or the log; what it lacks, this server cannot decrypt or sign.
 * `storage` says where new keys are kept (src/keyring/create-root-key.ts).
 */
export class Keyring {
  private readonly keys = new Map<string, RootKeyMaterial>();

  constructor(readonly storage: KeyringStorage = {}) {}

  add(material: RootKeyMaterial): void {
    this.keys.set(material.keyId, material);
  }

  get(keyId: string): RootKeyMaterial | undefined {
    return this.keys.get(keyId);
  }

  has(keyId: string): boolean {
    return this.keys.has(keyId);
  }

  delete(keyId: string): void {
    this.keys.delete(keyId);
  }

  get size(): number {
    return this.keys.size;
  }
}
