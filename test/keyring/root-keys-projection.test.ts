import { describe, expect, it } from "vitest";
import { historyKey } from "../../projections/history.ts";
import type { Draft } from "../../src/store/writer.ts";
import type { RootKeyCreated, RootKeyState } from "../../streams/keyring.ts";
import { memoryStore } from "../projections/memory-store.ts";

const A = "5b3e9a1c-2d4f-4e6a-8b7c-9d0e1f2a3b4c";
const B = "6c4f0b2d-3e5a-4f7b-9c8d-0e1f2a3b4c5d";

function created(
  KeyID: string,
  fields: { State?: RootKeyState; OnlyIfNoActiveKey?: boolean; Algorithm?: string; Rekey?: boolean } = {},
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
    Rekey: fields.Rekey ?? false,
  };
  return { type: "RootKeyCreated", v: 2, data };
}

const deleted = (KeyID: string): Draft => ({ type: "RootKeyDeleted", v: 1, data: { KeyID } });
const rekeyFinished = (KeyID: string): Draft => ({ type: "RootKeyRekeyFinished", v: 1, data: { KeyID } });
const C = "7d5a1c3e-4f6b-4a8c-8d9e-1f2a3b4c5d6e";
const D = "8e6b2d4f-5a7c-4b9d-9e0f-2a3b4c5d6e7f";

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
    const { write, history } = await memoryStore();
    await write(created(A));
    await write(created(B));
    const entries = history.entries(historyKey("root_key", A));
    expect(entries.map((e) => [e.Field, e.From, e.To])).toEqual([
      ["(created)", null, { State: "active", Algorithm: "aes256-gcm" }],
      ["State", "active", "inactive"],
    ]);
    expect(entries[1]!.Actor).toEqual({ kind: "server", id: "test" });
  });

  it("a full rotation marks the active and the inactive keys rekeying, in the same apply", async () => {
    const { write, tables, store } = await memoryStore();
    await write(created(A));
    await write(created(B)); // A inactive
    await write(created(C, { Rekey: true }));
    const at = store.appliedIndex;
    expect(tables.rootKeys.get(A)).toMatchObject({ State: "rekeying", ModifyIndex: at });
    expect(tables.rootKeys.get(B)).toMatchObject({ State: "rekeying", ModifyIndex: at });
    expect(tables.rootKeys.get(C)).toMatchObject({ State: "active", CreateIndex: at });
  });

  it("a plain rotation leaves inactive keys alone and only demotes the active one", async () => {
    const { write, tables } = await memoryStore();
    await write(created(A));
    await write(created(B));
    const aBefore = tables.rootKeys.get(A)!;
    await write(created(C));
    expect(tables.rootKeys.get(A)).toEqual(aBefore);
    expect(tables.rootKeys.get(B)?.State).toBe("inactive");
  });

  it("refuses a rekey without activation, and any new active key while a rekey runs", async () => {
    const { write, tables } = await memoryStore();
    await write(created(A));
    const [inactiveRekey] = await write(created(B, { State: "inactive", Rekey: true }));
    expect(inactiveRekey).toMatchObject({
      status: "rejected",
      code: 400,
      reason: "cannot rekey without setting the new key active",
    });
    await write(created(C, { Rekey: true }));
    const [during] = await write(created(D));
    expect(during).toMatchObject({ status: "rejected", code: 409 });
    expect(during?.status === "rejected" && during.reason).toMatch(
      new RegExp(`^cannot rotate the keyring while a full rekey is running: root key ${A} is still rekeying`),
    );
    expect([...tables.rootKeys.all()].map((k) => [k.KeyID, k.State])).toEqual([
      [A, "rekeying"],
      [C, "active"],
    ]);
  });

  it("marks a rekeyed key inactive, and only a rekeying one", async () => {
    const { write, tables } = await memoryStore();
    await write(created(A));
    await write(created(B, { Rekey: true }));
    const outcomes = await write(rekeyFinished(A), rekeyFinished(B), rekeyFinished(C));
    expect(outcomes.map((o) => (o.status === "rejected" ? [o.code, o.reason] : o.status))).toEqual([
      "applied",
      [409, `root key ${B} is active, not rekeying`],
      [404, `root key ${C} not found`],
    ]);
    expect(tables.rootKeys.get(A)?.State).toBe("inactive");
  });

  it("deletes an inactive key, refuses the active one, and ignores a missing one", async () => {
    const { write, tables, history } = await memoryStore();
    await write(created(A));
    await write(created(B));
    const outcomes = await write(deleted(B), deleted(A), deleted(C));
    expect(outcomes.map((o) => (o.status === "rejected" ? [o.code, o.reason] : o.status))).toEqual([
      [400, "active root key cannot be deleted - call rotate first"],
      "applied",
      "applied",
    ]);
    expect([...tables.rootKeys.all()].map((k) => k.KeyID)).toEqual([B]);
    const entries = history.entries(historyKey("root_key", A));
    expect(entries.at(-1)).toMatchObject({ Field: "(deleted)", Actor: { kind: "server", id: "test" } });
  });
});
