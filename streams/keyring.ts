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
 *
 * A new active key is a rotation (Nomad's RootKeyMetaUpsert): the same apply
 * makes the previously active key inactive, or, with `Rekey` (`rotate
 * -full`), marks it and every inactive key `rekeying`, so the leader
 * re-encrypts what they encrypted under the new key.
 */
export interface RootKeyCreated {
  readonly Meta: RootKeyMetaSpec;
  readonly SigningKey: SigningPublicKey;
  readonly Wrapped: WrappedKeyMaterial | null;
  readonly OnlyIfNoActiveKey: boolean;
  /** Nomad's KeyringUpdateRootKeyMetaRequest.Rekey; only with an active Meta. */
  readonly Rekey: boolean;
}

export const ROOT_KEY_CREATED_VERSION = 2;

/**
 * A root key was removed from the keyring (Nomad's RootKeyMetaDelete), by an
 * operator or by the leader's key GC. The active key cannot be. Every server
 * then forgets its material.
 */
export interface RootKeyDeleted {
  readonly KeyID: string;
}

/**
 * The leader re-encrypted everything a `rekeying` key encrypted under the
 * active key: the key becomes `inactive`, and so collectable once nothing
 * signed with it is alive.
 */
export interface RootKeyRekeyFinished {
  readonly KeyID: string;
}

export type KeyringEvent =
  | Envelope<"RootKeyCreated", RootKeyCreated>
  | Envelope<"RootKeyDeleted", RootKeyDeleted>
  | Envelope<"RootKeyRekeyFinished", RootKeyRekeyFinished>;

export const keyringSchemas = schemas(
  {
    type: "RootKeyCreated",
    version: ROOT_KEY_CREATED_VERSION,
    // v2 added Rekey: keys written before rotation existed were the keyring's first, never a full rotation.
    upcast: { 1: (data) => ({ ...(data as Omit<RootKeyCreated, "Rekey">), Rekey: false }) },
  },
  { type: "RootKeyDeleted", version: 1 },
  { type: "RootKeyRekeyFinished", version: 1 },
);
