import { createCipheriv, createDecipheriv, createHmac, hkdfSync, randomBytes } from "node:crypto";
import { activeRootKey, type RootKeyTable } from "../../../projections/root-keys.ts";
import type { Keyring } from "../../keyring/keyring.ts";

/**
 * An OIDC client secret as the log holds it (design rule 5): AES-256-GCM
 * under a key derived from a root key, so a log exported elsewhere carries
 * nothing a reader without the keyring can use. `Digest` stands for the
 * secret where Nomad hashes it in clear (ACLAuthMethod.Hash, which the
 * unauthenticated auth-method list publishes): an HMAC under another key
 * derived from the same root key, so it changes with the secret yet gives
 * nobody a way to test guesses.
 */
export interface SealedSecret {
  /** The root key the sealing key was derived from. */
  readonly KeyID: string;
  /** base64, 12 bytes. */
  readonly Nonce: string;
  /** base64: the ciphertext followed by the 16-byte GCM tag. */
  readonly Ciphertext: string;
  /** base64 HMAC-SHA256 of the secret. */
  readonly Digest: string;
}

/** The secret cannot be sealed or opened on this server; the message says why. */
export class ClientSecretError extends Error {
  override readonly name = "ClientSecretError";
}

const SEAL_INFO = "chronomad oidc client secret";
const DIGEST_INFO = "chronomad oidc client secret digest";
const NONCE_BYTES = 12;
const TAG_BYTES = 16;

function derive(rootKey: Buffer, info: string): Buffer {
  return Buffer.from(hkdfSync("sha256", rootKey, Buffer.alloc(0), info, 32));
}

/** Seals `secret` under the active root key, which this server must hold. */
export function sealClientSecret(keyring: Keyring, rootKeys: RootKeyTable, secret: string): SealedSecret {
  const active = activeRootKey(rootKeys);
  if (!active)
    throw new ClientSecretError("cannot seal the OIDC client secret: the keyring has no active root key");
  const material = keyring.get(active.KeyID);
  if (!material) {
    throw new ClientSecretError(
      `cannot seal the OIDC client secret: this server does not hold the active root key ${active.KeyID}`,
    );
  }
  const nonce = randomBytes(NONCE_BYTES);
  const cipher = createCipheriv("aes-256-gcm", derive(material.key, SEAL_INFO), nonce);
  const ciphertext = Buffer.concat([cipher.update(secret, "utf8"), cipher.final(), cipher.getAuthTag()]);
  return {
    KeyID: active.KeyID,
    Nonce: nonce.toString("base64"),
    Ciphertext: ciphertext.toString("base64"),
    Digest: createHmac("sha256", derive(material.key, DIGEST_INFO)).update(secret, "utf8").digest("base64"),
  };
}

/** Whether `value` has the shape of a SealedSecret (the event field is typed `unknown`). */
export function isSealedSecret(value: unknown): value is SealedSecret {
  if (typeof value !== "object" || value === null) return false;
  const v = value as Record<string, unknown>;
  return (
    typeof v.KeyID === "string" &&
    typeof v.Nonce === "string" &&
    typeof v.Ciphertext === "string" &&
    typeof v.Digest === "string"
  );
}

/** The secret in clear; throws ClientSecretError if this server lacks the key or the seal does not open. */
export function openClientSecret(keyring: Keyring, sealed: SealedSecret): string {
  const material = keyring.get(sealed.KeyID);
  if (!material) {
    throw new ClientSecretError(
      `cannot open the OIDC client secret: this server does not hold root key ${sealed.KeyID}, which sealed it`,
    );
  }
  const nonce = Buffer.from(sealed.Nonce, "base64");
  const data = Buffer.from(sealed.Ciphertext, "base64");
  if (nonce.length !== NONCE_BYTES || data.length < TAG_BYTES) {
    throw new ClientSecretError(`cannot open the OIDC client secret: the sealed form is malformed`);
  }
  try {
    const decipher = createDecipheriv("aes-256-gcm", derive(material.key, SEAL_INFO), nonce);
    decipher.setAuthTag(data.subarray(data.length - TAG_BYTES));
    return Buffer.concat([
      decipher.update(data.subarray(0, data.length - TAG_BYTES)),
      decipher.final(),
    ]).toString("utf8");
  } catch {
    throw new ClientSecretError(
      `cannot open the OIDC client secret: it does not authenticate under root key ${sealed.KeyID}`,
    );
  }
}
