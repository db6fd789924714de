import type { Projections } from "../../projections/index.ts";
import type { RootKeyDeleted } from "../../streams/keyring.ts";
import type { Draft } from "../store/writer.ts";

/** The tables the root key collector reads. */
export type RootKeyGcSources = Pick<Projections["tables"], "rootKeys" | "allocs" | "variables">;

export interface RootKeyGcRun {
  readonly nowMs: number;
  /** root_key_gc_threshold; omitted for a forced collection (PUT /v1/system/gc): every age qualifies, as in Nomad. */
  readonly thresholdMs?: number;
}

/**
 * Nomad's IsRootKeyMetaInUse: an allocation that may still present an
 * identity the key signed (allocs index `signing_key`, which leaves out
 * those done on both the client and the server), or a variable it encrypts.
 */
export function rootKeyInUse(tables: RootKeyGcSources, keyId: string): boolean {
  return tables.allocs.countBy("signing_key", keyId) > 0 || tables.variables.countBy("key_id", keyId) > 0;
}

/**
 * Nomad's rootKeyGC (core_sched.go): the keys neither active nor rekeying,
 * created before the threshold, and in use by nothing. Nomad maps the
 * threshold to a Raft index; here the key's CreateTime is compared with the
 * clock. Apply refuses the active key again; no other key gains a use, since
 * only the active one signs and encrypts.
 */
export function collectableRootKeys(tables: RootKeyGcSources, run: RootKeyGcRun): string[] {
  const cutoffNs =
    run.thresholdMs === undefined ? Number.POSITIVE_INFINITY : (run.nowMs - run.thresholdMs) * 1e6;
  const ids: string[] = [];
  for (const key of tables.rootKeys.all()) {
    if (key.State === "active" || key.State === "rekeying") continue;
    if (key.CreateTime > cutoffNs) continue;
    if (rootKeyInUse(tables, key.KeyID)) continue;
    ids.push(key.KeyID);
  }
  return ids;
}

export function rootKeyDeleteDrafts(keyIds: readonly string[]): Draft[] {
  return keyIds.map((KeyID) => ({ type: "RootKeyDeleted", v: 1, data: { KeyID } satisfies RootKeyDeleted }));
}
