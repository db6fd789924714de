import { type Envelope, schemas } from "./event-schema.ts";

/** Nomad's RootKeyState. "deprecated" is legacy and read as inactive. */
export type RootKeyState = "active" | "inactive" | "rekeying" | "deprecated";

export const ROOT_KEY_STATES: readonly RootKeyState[] = ["active", "inactive", "rekeying", "deprecated"];

/** Nomad's only EncryptionAlgorithm. */
export const AES256_GCM = "aes256-gcm";

/** Nomad's RootKeyMeta without the indexes (the log index gives those). */
export interface RootKeyMetaSpec {
  /** A UUID. */
  readonly KeyID: string;
  readonly Algorithm: typeof AES256_GCM;
  /** Unix nanoseconds, as Nomad's int64. */
  readonly CreateTime: number;
  readonly State: RootKeyState;
}

/**
 * The public half of the key that signs workload identities: not secret, so
 * it travels in clear and every server can serve the JWKS, even one that
 * cannot obtain the key material.
 */
export interface SigningPublicKey {
  /** The JWS algorithm: "EdDSA" (an Ed25519 key derived from the root key). */
  readonly Algorithm: "EdDSA";
  readonly Curve: "Ed25519";
  /** The public key, base64url as a JWK's `x`. */
  readonly X: string;
}

/**
 * Key material wrapped under the cluster key-encryption key the operator
 * gave the servers (AES-256-GCM; see src/keyring/key-wrap.ts). Only
 * ciphertext: without that KEK it cannot be read.
 */
export interface WrappedKeyMaterial {
  /** Which KEK wrapped it: a fingerprint of the KEK, never the KEK. */
  readonly KekID: string;
  /** base64 */
  readonly Nonce: string;
  /** base64: ciphertext followed by the GCM tag. */
  readonly Ciphertext: string;
}

/**
 * A root key was created. The key material itself is never here: only its
 * metadata, its public signing key and, when the cluster has a KEK, the
 * material wrapped under it. With `OnlyIfNoActiveKey` (the leader
 * initializing the keyring) apply refuses the key if another is already
 * active, so two leaders racing at bootstrap leave one key.
 */
export interface RootKeyCreated {
  readonly Meta: RootKeyMetaSpec;
  readonly SigningKey: SigningPublicKey;
  readonly Wrapped: WrappedKeyMaterial | null;
  readonly OnlyIfNoActiveKey: boolean;
}

export type KeyringEvent = Envelope<"RootKeyCreated", RootKeyCreated>;

export const keyringSchemas = schemas({ type: "RootKeyCreated", version: 1 });
