import { randomUUID } from "node:crypto";
import type { AllocRow } from "../../projections/allocs.ts";
import type { RootKeyRow } from "../../projections/root-keys.ts";
import { minimalAllocJob } from "../../src/bench/minimal-alloc-job.ts";
import { Keyring } from "../../src/keyring/keyring.ts";
import { newRootKey, type RootKeyMaterial } from "../../src/keyring/root-key-material.ts";
import { byCreateIndexThenId, Table } from "../../src/store/table.ts";
import { type AllocationSpec, newAllocation } from "../../streams/allocs.ts";

/** 2023-11-14T22:13:20Z, in unix nanoseconds: when the test allocations were placed. */
export const PLACED_NS = 1_700_000_000 * 1e9;

/** Tables, a keyring and a root key, as a server has them, without a server. */
export class IdentityWorld {
  readonly rootKeys = new Table<RootKeyRow>({ name: "root_keys", key: (k) => k.KeyID });
  readonly allocs = new Table<AllocRow>({
    name: "allocs",
    key: (a) => a.ID,
    order: byCreateIndexThenId,
    indexes: { node: (a) => a.NodeID },
  });
  readonly keyring = new Keyring();
  private index = 1;

  /** A root key in the table, its material in the keyring unless `held` is false. */
  async addKey(options: { held?: boolean; state?: RootKeyRow["State"] } = {}): Promise<RootKeyMaterial> {
    const material = await newRootKey(randomUUID());
    const state = options.state ?? "active";
    // At most one key is active, as the projection keeps it.
    if (state === "active") {
      for (const k of [...this.rootKeys.all()]) {
        if (k.State === "active") this.rootKeys.put({ ...k, State: "inactive" }, this.index);
      }
    }
    this.rootKeys.put(
      {
        KeyID: material.keyId,
        Algorithm: "aes256-gcm",
        CreateTime: PLACED_NS,
        State: state,
        CreateIndex: this.index,
        ModifyIndex: this.index,
        PublishTime: 0,
        SigningKey: material.signingPublicKey,
        Wrapped: null,
      },
      this.index++,
    );
    if (options.held !== false) this.keyring.add(material);
    return material;
  }

  /** An allocation of job `web`, group `frontend`, tasks `server` and `sidecar`. */
  addAlloc(fields: Partial<AllocationSpec> = {}, job: Record<string, unknown> = {}): AllocRow {
    const spec = newAllocation({
      ID: randomUUID(),
      Namespace: "default",
      JobID: "web",
      TaskGroup: "frontend",
      NodeID: "node-1",
      CreateTime: PLACED_NS,
      Job: {
        ...minimalAllocJob("web", [
          { Name: "frontend", Count: 1, Tasks: [{ Name: "server" }, { Name: "sidecar" }] },
        ]),
        ...job,
      },
      ...fields,
    });
    const row: AllocRow = {
      ...spec,
      CreateIndex: this.index,
      ModifyIndex: this.index,
      AllocModifyIndex: this.index,
    };
    this.allocs.put(row, this.index++);
    return row;
  }

  /** Replaces a stored allocation (a status change). */
  update(row: AllocRow, fields: Partial<AllocRow>): AllocRow {
    const next = { ...row, ...fields, ModifyIndex: this.index };
    this.allocs.put(next, this.index++);
    return next;
  }
}

/** Unix milliseconds a minute after the allocations were placed. */
export const NOW_MS = PLACED_NS / 1e6 + 60_000;
