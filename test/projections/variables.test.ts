import { describe, expect, it } from "vitest";
import { variableKey, variablePathError } from "../../projections/variables.ts";
import type { Draft } from "../../src/store/writer.ts";
import type { VariableApplied, VariableEncryptedSpec, VarOp } from "../../streams/variables.ts";
import { AT, memoryStore } from "./memory-store.ts";

const KEY_ID = "5b3e9a1c-2d4f-4e6a-8b7c-9d0e1f2a3b4c";

/** Sealed data of `bytes` bytes: apply never opens it, it only counts and stores it. */
function sealed(namespace: string, path: string, bytes: number, time = AT * 1e6): VariableEncryptedSpec {
  return {
    Namespace: namespace,
    Path: path,
    Data: Buffer.alloc(bytes, 7).toString("base64"),
    KeyID: KEY_ID,
    CreateTime: time,
    ModifyTime: time,
  };
}

function applied(op: VarOp, namespace: string, path: string, fields: Partial<VariableApplied> = {}): Draft {
  const data: VariableApplied = {
    Op: op,
    Namespace: namespace,
    Path: path,
    Var: op === "set" || op === "cas" ? sealed(namespace, path, 40) : null,
    ...(op === "cas" || op === "delete-cas" ? { CasIndex: 0 } : {}),
    ...fields,
  };
  return { type: "VariableApplied", v: 1, data };
}

describe("variables projection", () => {
  it("sets a variable, keeps its creation on update and counts the sealed bytes per namespace", async () => {
    const { tables, write, store } = await memoryStore();
    const [first] = await write(
      applied("set", "default", "app/db", { Var: sealed("default", "app/db", 40, 1) }),
    );
    expect(first!.status).toBe("applied");
    const created = tables.variables.get(variableKey("default", "app/db"))!;
    expect(created).toMatchObject({ CreateIndex: first!.index, ModifyIndex: first!.index, CreateTime: 1 });
    expect(tables.variablesQuota.get("default")).toMatchObject({ Size: 40, CreateIndex: first!.index });

    const [second] = await write(
      applied("set", "default", "app/db", { Var: sealed("default", "app/db", 100, 2) }),
    );
    const updated = tables.variables.get(variableKey("default", "app/db"))!;
    expect(updated).toMatchObject({
      CreateIndex: first!.index,
      CreateTime: 1,
      ModifyIndex: second!.index,
      ModifyTime: 2,
    });
    expect(tables.variablesQuota.get("default")).toMatchObject({
      Size: 100,
      CreateIndex: first!.index,
      ModifyIndex: second!.index,
    });
    expect(tables.variables.by("key_id", KEY_ID)).toHaveLength(1);

    // The same size again: the quota row stays as it was (Nomad writes it only when the size moves).
    await write(applied("set", "default", "app/db", { Var: sealed("default", "app/db", 100, 3) }));
    expect(tables.variablesQuota.get("default")!.ModifyIndex).toBe(second!.index);

    const [gone] = await write(applied("delete", "default", "app/db"));
    expect(gone!.status).toBe("applied");
    expect(tables.variables.has(variableKey("default", "app/db"))).toBe(false);
    expect(tables.variablesQuota.get("default")).toMatchObject({ Size: 0, ModifyIndex: gone!.index });
    expect(tables.variables.index).toBe(gone!.index);

    // Deleting nothing succeeds and changes nothing, not even the table index.
    const [nothing] = await write(applied("delete", "default", "app/db"));
    expect(nothing!.status).toBe("applied");
    expect(tables.variables.index).toBe(gone!.index);
    await store.stop();
  });

  it("decides every check-and-set again at apply, as Nomad's state store", async () => {
    const { tables, write } = await memoryStore();
    const conflict = (o: unknown) => expect(o).toMatchObject({ status: "rejected", code: 409 });

    // cas 0: create only if absent.
    const [made] = await write(applied("cas", "default", "a", { CasIndex: 0 }));
    expect(made!.status).toBe("applied");
    conflict((await write(applied("cas", "default", "a", { CasIndex: 0 })))[0]);
    // A stale index, and an index for a variable that is not there.
    conflict((await write(applied("cas", "default", "a", { CasIndex: made!.index + 1000 })))[0]);
    conflict((await write(applied("cas", "default", "nope", { CasIndex: 3 })))[0]);
    expect(tables.variables.has(variableKey("default", "nope"))).toBe(false);
    // The current index wins once.
    const [next] = await write(applied("cas", "default", "a", { CasIndex: made!.index }));
    expect(next!.status).toBe("applied");
    conflict((await write(applied("cas", "default", "a", { CasIndex: made!.index })))[0]);

    // delete-cas: 0 and absent is fine; 0 and present, a stale index, or an absent one conflict.
    expect((await write(applied("delete-cas", "default", "nope", { CasIndex: 0 })))[0]!.status).toBe(
      "applied",
    );
    conflict((await write(applied("delete-cas", "default", "a", { CasIndex: 0 })))[0]);
    conflict((await write(applied("delete-cas", "default", "a", { CasIndex: made!.index })))[0]);
    conflict((await write(applied("delete-cas", "default", "nope", { CasIndex: 9 })))[0]);
    const [removed] = await write(applied("delete-cas", "default", "a", { CasIndex: next!.index }));
    expect(removed!.status).toBe("applied");
    expect(tables.variables.size).toBe(0);
  });

  it("words each conflict with Nomad's cas error prefix, so handlers can tell it from other refusals", async () => {
    const { write } = await memoryStore();
    await write(applied("set", "default", "a"));
    const [o] = await write(applied("cas", "default", "a", { CasIndex: 0 }));
    expect(o).toMatchObject({
      code: 409,
      reason: expect.stringMatching(/^cas error: variable "a" in namespace "default"/),
    });
  });

  it("refuses at apply a record no handler would write: nothing reaches the table", async () => {
    const { tables, write } = await memoryStore();
    const bad: [Draft, RegExp][] = [
      [applied("set", "*", "a", { Var: sealed("*", "a", 4) }), /wildcard/],
      [applied("set", "default", "nomad", { Var: sealed("default", "nomad", 4) }), /reserved top-level/],
      [applied("set", "default", "a b", { Var: sealed("default", "a b", 4) }), /invalid path/],
      [applied("set", "default", "a", { Var: null }), /requires the encrypted variable/],
      [applied("set", "default", "a", { Var: sealed("default", "b", 4) }), /not the record's/],
      [applied("set", "default", "a", { Var: { ...sealed("default", "a", 4), KeyID: "" } }), /not sealed/],
      [applied("cas", "default", "a", { CasIndex: -1 }), /CasIndex/],
      [
        applied("set" as VarOp, "default", "a", { Op: "lock-acquire" as VarOp }),
        /Invalid variable operation/,
      ],
    ];
    for (const [draft, reason] of bad) {
      const [o] = await write(draft);
      expect(o, JSON.stringify(draft.data)).toMatchObject({
        status: "rejected",
        code: 400,
        reason: expect.stringMatching(reason),
      });
    }
    expect(tables.variables.size).toBe(0);
    expect(tables.variablesQuota.size).toBe(0);
  });

  it("keys quota rows by the namespace lowercased, as Nomad's index does", async () => {
    const { tables, write } = await memoryStore();
    await write(applied("set", "Dev", "a"));
    await write(applied("set", "dev", "b"));
    expect(tables.variablesQuota.size).toBe(1);
    expect(tables.variablesQuota.get("dev")).toMatchObject({ Namespace: "Dev", Size: 80 });
  });

  it("refuses to delete a namespace that still holds a variable, in Nomad's words", async () => {
    const { tables, write } = await memoryStore();
    await write({
      type: "NamespaceUpserted",
      v: 1,
      data: { Namespace: { Name: "team", Description: "", Quota: "", Meta: null, Capabilities: null } },
    });
    await write(applied("set", "team", "x"));
    const [refused] = await write({ type: "NamespaceDeleted", v: 1, data: { Name: "team" } });
    expect(refused).toMatchObject({
      status: "rejected",
      code: 400,
      reason:
        'namespace "team" contains at least one variable. All variables in namespace must be deleted before it can be deleted',
    });
    expect(tables.namespaces.has("team")).toBe(true);
    await write(applied("delete", "team", "x"));
    const [ok] = await write({ type: "NamespaceDeleted", v: 1, data: { Name: "team" } });
    expect(ok!.status).toBe("applied");
  });
});

describe("variablePathError (Nomad's validatePath)", () => {
  it("accepts Nomad's characters and the nomad/ paths Nomad allows", () => {
    for (const ok of [
      "a",
      "a/b-c_d~e",
      "nomad/jobs",
      "nomad/jobs/web/g/t",
      "nomad/job-templates/x",
      "x".repeat(128),
    ]) {
      expect(variablePathError(ok), ok).toBeUndefined();
    }
  });

  it("refuses the rest with Nomad's texts", () => {
    expect(variablePathError("")).toBe("variable requires path");
    expect(variablePathError("a.b")).toBe('invalid path "a.b"');
    expect(variablePathError("x".repeat(129))).toMatch(/^invalid path/);
    expect(variablePathError("nomad")).toMatch(/^"nomad" is a reserved top-level directory path/);
    expect(variablePathError("nomad/job-templates")).toMatch(
      /^"nomad\/job-templates" is a reserved directory path/,
    );
    expect(variablePathError("nomad/job-templates/a/b")).toMatch(/^"nomad\/job-templates" is a reserved/);
    expect(variablePathError("nomad/other")).toMatch(/^only paths at "nomad\/jobs"/);
  });
});
