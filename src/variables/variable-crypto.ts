import { createCipheriv, createDecipheriv, randomBytes } from "node:crypto";
import { activeRootKey, type RootKeyTable } from "../../projections/root-keys.ts";
import type { Keyring } from "../keyring/keyring.ts";

/** A variable's items in clear: Nomad's VariableItems. Never written anywhere. */
export type VariableItems = Record<string, string>;

/** What seals a variable: Nomad's VariableData. */
export interface SealedItems {
  /** base64 of nonce ‖ ciphertext ‖ tag. */
  readonly Data: string;
  readonly KeyID: string;
}

const NONCE_BYTES = 12;
const TAG_BYTES = 16;

/**
 * This server does not hold the root key a variable is (or would be)
 * sealed with: it has not reached this server yet (no cluster KEK and the
 * key made elsewhere), or the log was replayed without its keystore. Not the
 * caller's fault, and no garbage is ever returned in its place.
 */
export class VariableKeyUnavailable extends Error {
  override readonly name = "VariableKeyUnavailable";
}

/** The sealed data does not open under its key: it was altered, or is not a variable's. */
export class VariableDecryptError extends Error {
  override readonly name = "VariableDecryptError";
}

/**
 * Nomad's Encrypter.Encrypt of json(Items): AES-256-GCM under the root key
 * itself, a random 12-byte nonce, the KeyID's bytes as additional data, laid
 * out nonce ‖ ciphertext ‖ tag, so a variable moved to another variable's
 * key ID, or altered, no longer opens. Keys are sorted, as Go's encoding/json
 * writes a map.
 */
export function encryptItems(keyring: Keyring, keyId: string, items: VariableItems): SealedItems {
  const material = keyring.get(keyId);
  if (!material) throw new VariableKeyUnavailable(keyUnavailable(keyId));
  const sorted = itemsObject();
  for (const k of Object.keys(items).sort()) sorted[k] = items[k]!;
  const nonce = randomBytes(NONCE_BYTES);
  const cipher = createCipheriv("aes-256-gcm", material.key, nonce);
  cipher.setAAD(Buffer.from(keyId, "utf8"));
  const sealed = Buffer.concat([
    nonce,
    cipher.update(JSON.stringify(sorted), "utf8"),
    cipher.final(),
    cipher.getAuthTag(),
  ]);
  return { Data: sealed.toString("base64"), KeyID: keyId };
}

/** Seals `items` under the cluster's active root key, which this server must hold. */
export function encryptWithActiveKey(
  keyring: Keyring,
  rootKeys: RootKeyTable,
  items: VariableItems,
): SealedItems {
  const active = activeRootKey(rootKeys);
  // Nomad's text, before the leader has made the first key.
  if (!active)
    throw new VariableKeyUnavailable("variable error: encrypt: keyring has not been initialized yet");
  return encryptItems(keyring, active.KeyID, items);
}

/**
 * Nomad's Encrypter.Decrypt: opens `v.Data` with the key it names. Throws
 * VariableKeyUnavailable when this server lacks that key and
 * VariableDecryptError when the data does not authenticate; never returns
 * anything that did not.
 */
export function decryptItems(keyring: Keyring, v: SealedItems): VariableItems {
  const material = keyring.get(v.KeyID);
  if (!material) throw new VariableKeyUnavailable(keyUnavailable(v.KeyID));
  const sealed = Buffer.from(v.Data, "base64");
  if (sealed.length < NONCE_BYTES + TAG_BYTES) {
    throw new VariableDecryptError(`variable data sealed with root key ${v.KeyID} is malformed`);
  }
  let text: string;
  try {
    const decipher = createDecipheriv("aes-256-gcm", material.key, sealed.subarray(0, NONCE_BYTES));
    decipher.setAAD(Buffer.from(v.KeyID, "utf8"));
    decipher.setAuthTag(sealed.subarray(sealed.length - TAG_BYTES));
    text = Buffer.concat([
      decipher.update(sealed.subarray(NONCE_BYTES, sealed.length - TAG_BYTES)),
      decipher.final(),
    ]).toString("utf8");
  } catch {
    throw new VariableDecryptError(`variable data does not authenticate under root key ${v.KeyID}`);
  }
  return parseItems(text, v.KeyID);
}

function parseItems(text: string, keyId: string): VariableItems {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new VariableDecryptError(`variable data sealed with root key ${keyId} is not a JSON object`);
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new VariableDecryptError(`variable data sealed with root key ${keyId} is not a JSON object`);
  }
  const items = itemsObject();
  for (const [k, item] of Object.entries(value)) {
    if (typeof item !== "string") {
      throw new VariableDecryptError(`variable data sealed with root key ${keyId} holds a non-string item`);
    }
    items[k] = item;
  }
  return items;
}

/** An empty items map without a prototype: an item named "__proto__" is an item like any other. */
export function itemsObject(): VariableItems {
  return Object.create(null) as VariableItems;
}

function keyUnavailable(keyId: string): string {
  return `the key ${keyId} is not available on this server: it cannot read or write variables sealed with it`;
}
