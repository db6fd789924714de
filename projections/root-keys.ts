import type { Projection } from "../src/store/projection.ts";
import { Table } from "../src/store/table.ts";
import {
  AES256_GCM,
  type KeyringEvent,
  ROOT_KEY_STATES,
  type RootKeyMetaSpec,
  type SigningPublicKey,
  type WrappedKeyMaterial,
} from "../streams/keyring.ts";

/**
 * One root key as the log knows it: Nomad's RootKeyMeta, plus what is not
 * secret about it (the public signing key) and, with a cluster KEK, the
 * wrapped material. API views pick the RootKeyMeta fields; nothing in a row
 * can decrypt anything.
 */
export type RootKeyRow = RootKeyMetaSpec & {
  readonly CreateIndex: number;
  readonly ModifyIndex: number;
  /** Nomad 1.9's prepublish time (unix ns); 0 as long as prepublishing does not exist here. */
  readonly PublishTime: number;
  readonly SigningKey: SigningPublicKey;
  readonly Wrapped: WrappedKeyMaterial | null;
};

export type RootKeyTable = Table<RootKeyRow>;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** The active root key, if any (at most one is: apply keeps it so). */
export function activeRootKey(table: RootKeyTable): RootKeyRow | undefined {
  for (const row of table.all()) if (row.State === "active") return row;
  return undefined;
}

/** Nomad's `root_keys` table (`root_key_meta` before 1.9), keyed by KeyID. */
export function rootKeysProjection() {
  const rootKeys = new Table<RootKeyRow>({ name: "root_keys", key: (k) => k.KeyID });
  const projection: Projection = {
    name: "root-keys",
    version: 1,
    tables: [rootKeys],
    handles: new Set(["RootKeyCreated"]),
    evolve(ctx, event) {
      const { Meta, SigningKey, Wrapped, OnlyIfNoActiveKey } = (event as KeyringEvent).data;
      // Nomad's RootKeyMeta.Validate, again at apply: a log written by
      // another tool must not put a key no client could use in the table.
      if (!UUID.test(Meta.KeyID)) return ctx.reject(400, `root key ID "${Meta.KeyID}" is not a UUID`);
      if (Meta.Algorithm !== AES256_GCM) {
        return ctx.reject(400, `root key algorithm "${Meta.Algorithm}" is not supported`);
      }
      if (!ROOT_KEY_STATES.includes(Meta.State)) {
        return ctx.reject(400, `root key state "${Meta.State}" is invalid`);
      }
      if (rootKeys.has(Meta.KeyID)) return ctx.reject(409, `root key ${Meta.KeyID} already exists`);
      const active = activeRootKey(rootKeys);
      if (OnlyIfNoActiveKey && active) {
        return ctx.reject(409, `keyring is already initialized: root key ${active.KeyID} is active`);
      }
      // At most one key is active: a new active key demotes the old one, in
      // the same apply (Nomad's UpsertRootKeyMeta).
      if (Meta.State === "active" && active) {
        ctx.put(rootKeys, { ...active, State: "inactive", ModifyIndex: ctx.index });
      }
      ctx.put(rootKeys, {
        KeyID: Meta.KeyID,
        Algorithm: Meta.Algorithm,
        CreateTime: Meta.CreateTime,
        State: Meta.State,
        CreateIndex: ctx.index,
        ModifyIndex: ctx.index,
        PublishTime: 0,
        SigningKey,
        Wrapped,
      });
    },
  };
  return { projection, rootKeys };
}
