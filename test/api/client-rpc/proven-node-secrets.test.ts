import { randomUUID } from "node:crypto";
import { describe, expect, it } from "vitest";
import type { NodeSecretRow } from "../../../projections/nodes.ts";
import { nodeSecretProven, nodeSecretRowOf } from "../../../src/api/client-rpc/proven-node-secrets.ts";
import { hashNodeSecret } from "../../../src/nodes/node-secret.ts";
import { Table } from "../../../src/store/table.ts";

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
});
