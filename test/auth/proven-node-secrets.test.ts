import { randomUUID } from "node:crypto";
import { describe, expect, it } from "vitest";
import type { NodeSecretRow } from "../../projections/nodes.ts";
import {
  nodeSecretProven,
  nodeSecretRowByHash,
  nodeSecretRowOf,
  rememberedNodeSecretRow,
} from "../../src/auth/proven-node-secrets.ts";
import { hashNodeSecret } from "../../src/nodes/node-secret.ts";
import { Table } from "../../src/store/table.ts";

function secretsTable(): Table<NodeSecretRow> {
  return new Table<NodeSecretRow>({
    name: "node_secrets",
    key: (s) => s.ID,
    indexes: { hash: (s) => s.SecretIDHash },
  });
}

function row(id: string, secret: string, index: number): NodeSecretRow {
  return { ID: id, SecretIDHash: hashNodeSecret(secret), CreateIndex: index, ModifyIndex: index };
}

describe("proven node secrets", () => {
  it("accepts the stored secret every time, and never another one, before and after it was proven", () => {
    const secret = randomUUID();
    const stored = row("n1", secret, 1);
    expect(nodeSecretProven(randomUUID(), stored)).toBe(false);
    expect(nodeSecretProven(secret, stored)).toBe(true);
    expect(nodeSecretProven(secret, stored)).toBe(true);
    expect(nodeSecretProven(randomUUID(), stored)).toBe(false);
    expect(nodeSecretProven(`${secret.slice(0, -1)}0`, stored)).toBe(secret.endsWith("0"));
    expect(nodeSecretProven("", stored)).toBe(false);
    expect(nodeSecretProven(`${secret}x`, stored)).toBe(false);
  });

  it("refuses a proven secret once the node's row holds another secret", () => {
    const old = randomUUID();
    const fresh = randomUUID();
    const before = row("n2", old, 1);
    expect(nodeSecretProven(old, before)).toBe(true);
    const after = row("n2", fresh, 2);
    expect(nodeSecretProven(old, after)).toBe(false);
    expect(nodeSecretProven(fresh, after)).toBe(true);
    expect(nodeSecretProven(old, after)).toBe(false);
  });

  it("finds a node by its secret only while the table holds that secret for it", () => {
    const table = secretsTable();
    const a = randomUUID();
    const b = randomUUID();
    table.put(row("n3", a, 1), 1);
    table.put(row("n4", b, 2), 2);
    expect(nodeSecretRowOf(table, a)?.ID).toBe("n3");
    expect(nodeSecretRowOf(table, a)?.ID).toBe("n3");
    expect(nodeSecretRowOf(table, b)?.ID).toBe("n4");
    expect(nodeSecretRowOf(table, randomUUID())).toBeUndefined();

    // n3 registers again with a new secret: the old one finds nothing, remembered or not.
    const a2 = randomUUID();
    table.put(row("n3", a2, 3), 3);
    expect(nodeSecretRowOf(table, a)).toBeUndefined();
    expect(nodeSecretRowOf(table, a2)?.ID).toBe("n3");

    // n4 is removed: its secret finds nothing.
    table.delete("n4", 4);
    expect(nodeSecretRowOf(table, b)).toBeUndefined();
  });

  it("remembers a secret only once proven by its hash, and forgets it when the row changes or goes", () => {
    const table = secretsTable();
    const a = randomUUID();
    table.put(row("n5", a, 1), 1);
    // Never proven: not known without hashing.
    expect(rememberedNodeSecretRow(table, a)).toBeUndefined();
    // A hash no row holds proves nothing, and remembers nothing.
    const wrong = randomUUID();
    expect(nodeSecretRowByHash(table, wrong, hashNodeSecret(wrong))).toBeUndefined();
    expect(rememberedNodeSecretRow(table, wrong)).toBeUndefined();

    expect(nodeSecretRowByHash(table, a, hashNodeSecret(a))?.ID).toBe("n5");
    expect(rememberedNodeSecretRow(table, a)?.ID).toBe("n5");
    expect(rememberedNodeSecretRow(table, randomUUID())).toBeUndefined();
    expect(rememberedNodeSecretRow(table, `${a}x`)).toBeUndefined();

    // Registered again with the same secret: a new row, proven again before it is known.
    table.put(row("n5", a, 2), 2);
    expect(rememberedNodeSecretRow(table, a)).toBeUndefined();
    expect(nodeSecretRowOf(table, a)?.ID).toBe("n5");
    expect(rememberedNodeSecretRow(table, a)?.ModifyIndex).toBe(2);

    // Another secret: the old one is neither remembered nor found by its hash.
    const a2 = randomUUID();
    table.put(row("n5", a2, 3), 3);
    expect(rememberedNodeSecretRow(table, a)).toBeUndefined();
    expect(nodeSecretRowByHash(table, a, hashNodeSecret(a))).toBeUndefined();
    expect(nodeSecretRowOf(table, a2)?.ID).toBe("n5");

    table.delete("n5", 4);
    expect(rememberedNodeSecretRow(table, a2)).toBeUndefined();
    expect(nodeSecretRowOf(table, a2)).toBeUndefined();
  });
});
