import { createCipheriv, createDecipheriv, createHash, randomBytes } from "node:crypto";
import type { WrappedKeyMaterial } from "../../streams/keyring.ts";

/** A 32-byte AES-256 key that encrypts other keys, and its public fingerprint. */
export interface KeyEncryptionKey {
  readonly id: string;
  readonly key: Buffer;
}

export class KeyUnwrapError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "KeyUnwrapError";
  }
}

const KEK_BYTES = 32;
const NONCE_BYTES = 12;
const TAG_BYTES = 16;

/**
 * Reads a KEK given as base64 (what `openssl rand -base64 32` prints), the
 * way Nomad takes its gossip key. Throws naming `where`, never the value.
 */
export function parseKek(text: string, where: string): KeyEncryptionKey {
  const trimmed = text.trim();
  const key = Buffer.from(trimmed, "base64");
  if (!/^[A-Za-z0-9+/_-]+={0,2}$/.test(trimmed) || key.length !== KEK_BYTES) {
    throw new Error(
      `${where} must be ${KEK_BYTES} random bytes encoded in base64 (e.g. the output of \`openssl rand -base64 32\`)`,
    );
  }
  return kekFromBytes(key);
}

export function kekFromBytes(key: Buffer): KeyEncryptionKey {
  // A hash of a 256-bit random key tells nothing about it; the prefix keeps
  // the fingerprint apart from any other use of the same bytes.
  const id = createHash("sha256").update("chronomad keyring kek\0").update(key).digest("hex").slice(0, 16);
  return { id, key };
}

/** A fresh random KEK (the per-file KEK of a keystore without a cluster KEK). */
export function randomKek(): KeyEncryptionKey {
  return kekFromBytes(randomBytes(KEK_BYTES));
}

/**
 * AES-256-GCM under the KEK. The additional data binds the ciphertext to the
 * root key it belongs to, so a wrapped blob moved onto another KeyID does
 * not unwrap.
 */
export function wrapKey(kek: KeyEncryptionKey, keyId: string, plaintext: Buffer): WrappedKeyMaterial {
  const nonce = randomBytes(NONCE_BYTES);
  const cipher = createCipheriv("aes-256-gcm", kek.key, nonce);
  cipher.setAAD(additionalData(keyId));
  const ciphertext = Buffer.concat([cipher.update(plaintext), cipher.final(), cipher.getAuthTag()]);
  return { KekID: kek.id, Nonce: nonce.toString("base64"), Ciphertext: ciphertext.toString("base64") };
}

export function unwrapKey(kek: KeyEncryptionKey, keyId: string, wrapped: WrappedKeyMaterial): Buffer {
  if (wrapped.KekID !== kek.id) {
    throw new KeyUnwrapError(
      `root key ${keyId} is wrapped under KEK ${wrapped.KekID}, but the configured KEK is ${kek.id}`,
    );
  }
  const nonce = Buffer.from(wrapped.Nonce, "base64");
  const sealed = Buffer.from(wrapped.Ciphertext, "base64");
  if (nonce.length !== NONCE_BYTES || sealed.length < TAG_BYTES) {
    throw new KeyUnwrapError(`root key ${keyId}: wrapped material is malformed`);
  }
  const decipher = createDecipheriv("aes-256-gcm", kek.key, nonce);
  decipher.setAAD(additionalData(keyId));
  decipher.setAuthTag(sealed.subarray(sealed.length - TAG_BYTES));
  try {
    return Buffer.concat([decipher.update(sealed.subarray(0, sealed.length - TAG_BYTES)), decipher.final()]);
  } catch {
    throw new KeyUnwrapError(`root key ${keyId}: wrapped material does not authenticate under KEK ${kek.id}`);
  }
}

function additionalData(keyId: string): Buffer {
  return Buffer.from(`chronomad root key ${keyId}`);
}
