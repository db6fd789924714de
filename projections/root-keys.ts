import type { ApplyContext, Projection } from "../src/store/projection.ts";
import { Table } from "../src/store/table.ts";
import {
  AES256_GCM,
  type KeyringEvent,
  ROOT_KEY_STATES,
  type RootKeyCreated,
  type RootKeyDeleted,
  type RootKeyMetaSpec,
  type RootKeyRekeyFinished,
  type RootKeyState,
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

/** Keys `rekeying`: a full rotation's re-encryption is still running for them. */
export function rekeyingRootKeys(table: RootKeyTable): RootKeyRow[] {
  return [...table.all()].filter((row) => row.State === "rekeying");
}

/** Nomad's text, for the handler and apply alike. */
export const ACTIVE_KEY_DELETE_REFUSAL = "active root key cannot be deleted - call rotate first";

/** Why a new active key is refused while `rekeying` keys remain, or undefined. */
export function rotationBlockedBy(table: RootKeyTable): string | undefined {
  const rekeying = rekeyingRootKeys(table);
  if (rekeying.length === 0) return undefined;
  // One rekey at a time: the leader's job re-encrypts under the active key,
  // and a rotation in the middle would have it re-encrypt twice.
  const ids = rekeying.map((k) => k.KeyID).join(", ");
  const which = rekeying.length === 1 ? `root key ${ids} is` : `root keys ${ids} are`;
  return (
    `cannot rotate the keyring while a full rekey is running: ${which} still rekeying ` +
    "(the leader logs its progress); rotate again once the rekey is done"
  );
}

/** Nomad's `root_keys` table (`root_key_meta` before 1.9), keyed by KeyID. */
export function rootKeysProjection() {
  const rootKeys = new Table<RootKeyRow>({ name: "root_keys", key: (k) => k.KeyID });

  const created = (ctx: ApplyContext, data: RootKeyCreated) => {
    const { Meta, SigningKey, Wrapped, OnlyIfNoActiveKey, Rekey } = data;
    // Nomad's RootKeyMeta.Validate, again at apply: a log written by
    // another tool must not put a key no client could use in the table.
    if (!UUID.test(Meta.KeyID)) return ctx.reject(400, `root key ID "${Meta.KeyID}" is not a UUID`);
    if (Meta.Algorithm !== AES256_GCM) {
      return ctx.reject(400, `root key algorithm "${Meta.Algorithm}" is not supported`);
    }
    if (!ROOT_KEY_STATES.includes(Meta.State)) {
      return ctx.reject(400, `root key state "${Meta.State}" is invalid`);
    }
    const activating = Meta.State === "active";
    if (Rekey && !activating) return ctx.reject(400, "cannot rekey without setting the new key active");
    if (rootKeys.has(Meta.KeyID)) return ctx.reject(409, `root key ${Meta.KeyID} already exists`);
    const active = activeRootKey(rootKeys);
    if (OnlyIfNoActiveKey && active) {
      return ctx.reject(409, `keyring is already initialized: root key ${active.KeyID} is active`);
    }
    const blocked = activating ? rotationBlockedBy(rootKeys) : undefined;
    if (blocked) return ctx.reject(409, blocked);
    // At most one key is active: a new active key demotes the others in the
    // same apply, as Nomad's UpsertRootKeyMeta does.
    if (activating) {
      for (const row of [...rootKeys.all()]) {
        const State = demoted(row.State, Rekey);
        if (State !== row.State) ctx.put(rootKeys, { ...row, State, ModifyIndex: ctx.index });
      }
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
  };

  const deleted = (ctx: ApplyContext, { KeyID }: RootKeyDeleted) => {
    const row = rootKeys.get(KeyID);
    // Nomad's Keyring.Delete of a missing key does nothing, and two deletes may race.
    if (!row) return;
    if (row.State === "active") return ctx.reject(400, ACTIVE_KEY_DELETE_REFUSAL);
    ctx.delete(rootKeys, KeyID);
  };

  const rekeyFinished = (ctx: ApplyContext, { KeyID }: RootKeyRekeyFinished) => {
    const row = rootKeys.get(KeyID);
    if (!row) return ctx.reject(404, `root key ${KeyID} not found`);
    if (row.State !== "rekeying") return ctx.reject(409, `root key ${KeyID} is ${row.State}, not rekeying`);
    ctx.put(rootKeys, { ...row, State: "inactive", ModifyIndex: ctx.index });
  };

  const projection: Projection = {
    name: "root-keys",
    version: 2,
    tables: [rootKeys],
    handles: new Set(["RootKeyCreated", "RootKeyDeleted", "RootKeyRekeyFinished"]),
    evolve(ctx, event) {
      const e = event as KeyringEvent;
      switch (e.type) {
        case "RootKeyCreated":
          return created(ctx, e.data);
        case "RootKeyDeleted":
          return deleted(ctx, e.data);
        case "RootKeyRekeyFinished":
          return rekeyFinished(ctx, e.data);
      }
    },
  };
  return { projection, rootKeys };
}

/** What a newly active key makes of another key (Nomad's UpsertRootKeyMeta). */
function demoted(state: RootKeyState, rekey: boolean): RootKeyState {
  if (state === "active") return rekey ? "rekeying" : "inactive";
  if (state === "inactive" && rekey) return "rekeying";
  // Rekeying keys stay so; deprecated ones are legacy and left alone, as in Nomad.
  return state;
}
