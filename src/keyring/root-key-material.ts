import { createPrivateKey, createPublicKey, hkdfSync, type KeyObject, randomBytes } from "node:crypto";
import { exportJWK } from "jose";
import type { SigningPublicKey } from "../../streams/keyring.ts";

/** The bytes of an AES-256 root key. */
export const ROOT_KEY_BYTES = 32;

/**
 * A root key's secret material, held in memory only: the AES-256-GCM key
 * that encrypts variables, and the Ed25519 key that signs workload
 * identities (derived from it, so the 32 bytes are all there is to keep).
 */
export interface RootKeyMaterial {
  readonly keyId: string;
  readonly key: Buffer;
  readonly signingKey: KeyObject;
  readonly signingPublicKey: SigningPublicKey;
}

// PKCS#8 wrapping of a raw Ed25519 seed (RFC 8410): Node imports seeds this way.
const ED25519_PKCS8_PREFIX = Buffer.from("302e020100300506032b657004220420", "hex");
const SIGNING_INFO = "chronomad workload identity ed25519 v1";

export function newRootKey(keyId: string): Promise<RootKeyMaterial> {
  return rootKeyMaterial(keyId, randomBytes(ROOT_KEY_BYTES));
}

/**
 * Nomad 1.4-1.6 used the root key itself as the Ed25519 seed; here the seed
 * is an HKDF-SHA256 derivation of it, so the AES key and the signing key
 * never share bytes, while the signing key still follows from the one
 * secret that is stored. (Nomad 1.7+ signs with a separate RSA key instead;
 * the JWKS carries whatever `alg` each key has, so that can be added.)
 */
export async function rootKeyMaterial(keyId: string, key: Buffer): Promise<RootKeyMaterial> {
  if (key.length !== ROOT_KEY_BYTES) {
    throw new Error(`root key ${keyId}: material is ${key.length} bytes, not ${ROOT_KEY_BYTES}`);
  }
  const seed = Buffer.from(hkdfSync("sha256", key, Buffer.alloc(0), SIGNING_INFO, 32));
  const signingKey = createPrivateKey({
    key: Buffer.concat([ED25519_PKCS8_PREFIX, seed]),
    format: "der",
    type: "pkcs8",
  });
  const jwk = await exportJWK(createPublicKey(signingKey));
  if (!jwk.x) throw new Error("Ed25519 public key export gave no x");
  return { keyId, key, signingKey, signingPublicKey: { Algorithm: "EdDSA", Curve: "Ed25519", X: jwk.x } };
}
