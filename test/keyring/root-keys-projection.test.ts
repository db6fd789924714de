import { describe, expect, it } from "vitest";
import { historyKey } from "../../projections/history.ts";
import type { Draft } from "../../src/store/writer.ts";
import type { RootKeyCreated, RootKeyState } from "../../streams/keyring.ts";
import { memoryStore } from "../projections/memory-store.ts";

const A = "5b3e9a1c-2d4f-4e6a-8b7c-9d0e1f2a3b4c";
const B = "6c4f0b2d-3e5a-4f7b-9c8d-0e1f2a3b4c5d";

function created(
  KeyID: string,
  fields: { State?: RootKeyState; OnlyIfNoActiveKey?: boolean; Algorithm?: string } = {},
): Draft {
  const data: RootKeyCreated = {
    Meta: {
      KeyID,
      Algorithm: (fields.Algorithm ?? "aes256-gcm") as "aes256-gcm",
      CreateTime: 1_763_800_000_000_000_000,
      State: fields.State ?? "active",
    },
    SigningKey: { Algorithm: "EdDSA", Curve: "Ed25519", X: `x-${KeyID}` },
    Wrapped: null,
    OnlyIfNoActiveKey: fields.OnlyIfNoActiveKey ?? false,
  };
  return { type: "RootKeyCreated", v: 1, data };
}

describe("root keys projection", () => {
  it("stores the key's metadata and public key at the event's index", async () => {
    const { write, tables, store } = await memoryStore();
    const [outcome] = await write(created(A, { OnlyIfNoActiveKey: true }));
    expect(outcome).toMatchObject({ status: "applied" });
    expect(tables.rootKeys.get(A)).toEqual({
      KeyID: A,
      Algorithm: "aes256-gcm",
      CreateTime: 1_763_800_000_000_000_000,
      State: "active",
      CreateIndex: store.appliedIndex,
      ModifyIndex: store.appliedIndex,
      PublishTime: 0,
      SigningKey: { Algorithm: "EdDSA", Curve: "Ed25519", X: `x-${A}` },
      Wrapped: null,
    });
  });

  it("refuses a bootstrap key once a key is active, so racing leaders leave one key", async () => {
    const { write, tables } = await memoryStore();
    await write(created(A, { OnlyIfNoActiveKey: true }));
    const [second] = await write(created(B, { OnlyIfNoActiveKey: true }));
    expect(second).toMatchObject({
      status: "rejected",
      code: 409,
      reason: `keyring is already initialized: root key ${A} is active`,
    });
    expect([...tables.rootKeys.all()].map((k) => k.KeyID)).toEqual([A]);
  });

  it("keeps at most one key active: a new active key makes the old one inactive", async () => {
    const { write, tables, store } = await memoryStore();
    await write(created(A));
    await write(created(B));
    expect(tables.rootKeys.get(A)).toMatchObject({ State: "inactive", ModifyIndex: store.appliedIndex });
    expect(tables.rootKeys.get(B)).toMatchObject({ State: "active" });
  });

  it("refuses what Nomad's validation refuses, and a key ID that exists", async () => {
    const { write, tables } = await memoryStore();
    await write(created(A));
    const outcomes = await write(
      created(A),
      created("not-a-uuid"),
      created(B, { Algorithm: "rot13" }),
      created(B, { State: "sideways" as RootKeyState }),
    );
    expect(outcomes.map((o) => (o.status === "rejected" ? [o.code, o.reason] : o.status))).toEqual([
      [409, `root key ${A} already exists`],
      [400, 'root key ID "not-a-uuid" is not a UUID'],
      [400, 'root key algorithm "rot13" is not supported'],
      [400, 'root key state "sideways" is invalid'],
    ]);
    expect(tables.rootKeys.size).toBe(1);
  });

  it("audits who created and retired each key", async () => {
    const { write, tables } = await memoryStore();
    await write(created(A));
    await write(created(B));
    const entries = tables.history.get(historyKey("root_key", A))!.Entries;
    expect(entries.map((e) => [e.Field, e.From, e.To])).toEqual([
      ["(created)", null, { State: "active", Algorithm: "aes256-gcm" }],
      ["State", "active", "inactive"],
    ]);
    expect(entries[1]!.Actor).toEqual({ kind: "server", id: "test" });
  });
});
