import { randomUUID } from "node:crypto";
import {
  AES256_GCM,
  ROOT_KEY_CREATED_VERSION,
  type RootKeyCreated,
  type RootKeyMetaSpec,
} from "../../streams/keyring.ts";
import type { Outcome } from "../store/projection.ts";
import type { Draft, Written } from "../store/writer.ts";
import { wrapKey } from "./key-wrap.ts";
import type { Keyring, KeyringStorage } from "./keyring.ts";
import { newRootKey } from "./root-key-material.ts";

/** The keyring a new key goes into, and where it is kept besides memory. */
export interface KeyCustody extends KeyringStorage {
  readonly keyring: Keyring;
}

/** The custody a server's keyring was built with (src/server.ts). */
export function custodyOf(keyring: Keyring): KeyCustody {
  return { keyring, ...keyring.storage };
}

export interface NewRootKeyOptions {
  /** The writer's clock (ms): the key's CreateTime. */
  readonly nowMs: number;
  /** The leader initializing the keyring: apply refuses the key if another is already active. */
  readonly onlyIfNoActiveKey: boolean;
  /** A full rotation (`rotate -full`): the keys it demotes are re-encrypted away. */
  readonly rekey: boolean;
}

/**
 * Nomad's NewRootKey + Encrypter.AddKey: a fresh active root key, kept in
 * the keystore and the keyring **before** anything is written, so no key is
 * ever in the log without its material somewhere; and the record that
 * announces it (with a cluster KEK, the material wrapped under it). If apply
 * refuses the record, call discardRootKey.
 */
export async function createRootKey(
  custody: KeyCustody,
  options: NewRootKeyOptions,
): Promise<RootKeyCreated> {
  const { keyring, keystore, clusterKek } = custody;
  const material = await newRootKey(randomUUID());
  const meta: RootKeyMetaSpec = {
    KeyID: material.keyId,
    Algorithm: AES256_GCM,
    CreateTime: options.nowMs * 1e6,
    State: "active",
  };
  const data: RootKeyCreated = {
    Meta: meta,
    SigningKey: material.signingPublicKey,
    Wrapped: clusterKek ? wrapKey(clusterKek, meta.KeyID, material.key) : null,
    OnlyIfNoActiveKey: options.onlyIfNoActiveKey,
    Rekey: options.rekey,
  };
  await keystore?.save(meta, material.key);
  keyring.add(material);
  return data;
}

export function rootKeyCreatedDraft(data: RootKeyCreated): Draft {
  return { type: "RootKeyCreated", v: ROOT_KEY_CREATED_VERSION, data };
}

/** Forgets a key created here whose record apply refused: no other server has it. */
export async function discardRootKey(custody: KeyCustody, keyId: string): Promise<void> {
  custody.keyring.delete(keyId);
  await custody.keystore?.remove(keyId);
}

export interface WrittenRootKey extends Written {
  readonly data: RootKeyCreated;
  readonly outcome: Outcome;
}

/**
 * createRootKey, its record written with `write`, and the key discarded if
 * apply refused it. A write that throws leaves the material where it was
 * put: the append may have landed, and a key the log names is never lost.
 */
export async function writeNewRootKey(
  custody: KeyCustody,
  options: NewRootKeyOptions,
  write: (drafts: readonly Draft[]) => Promise<Written>,
): Promise<WrittenRootKey> {
  const data = await createRootKey(custody, options);
  const written = await write([rootKeyCreatedDraft(data)]);
  const outcome = written.outcomes[0]!;
  if (outcome.status === "rejected") await discardRootKey(custody, data.Meta.KeyID);
  return { ...written, data, outcome };
}
