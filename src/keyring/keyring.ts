import type { RootKeyMaterial } from "./root-key-material.ts";

/**
 * The root key material this server holds, by KeyID: in memory only. Filled
 * by the leader when it creates a key and by RootKeyMaterialSync from the
 * keystore or the log; what it lacks, this server cannot decrypt or sign.
 */
export class Keyring {
  private readonly keys = new Map<string, RootKeyMaterial>();

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
