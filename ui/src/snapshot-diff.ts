import type { SnapshotRow } from "./snapshot.ts";

export interface RowChange {
  readonly kind: "created" | "changed" | "removed";
  readonly row: SnapshotRow;
  /** On `changed`: each differing column, from -> to. */
  readonly fields: readonly { readonly name: string; readonly from: string; readonly to: string }[];
}

/** What was created, changed (which columns) and removed in one table from `before` to `after`. */
export function diffRows(before: readonly SnapshotRow[], after: readonly SnapshotRow[]): RowChange[] {
  const old = new Map(before.map((r) => [r.key, r]));
  const changes: RowChange[] = [];
  for (const row of after) {
    const was = old.get(row.key);
    old.delete(row.key);
    if (!was) {
      changes.push({ kind: "created", row, fields: [] });
      continue;
    }
    const fields = Object.keys(row.cells)
      .filter((name) => row.cells[name] !== was.cells[name])
      .map((name) => ({ name, from: was.cells[name] ?? "", to: row.cells[name] ?? "" }));
    if (fields.length > 0) changes.push({ kind: "changed", row, fields });
  }
  for (const row of old.values()) changes.push({ kind: "removed", row, fields: [] });
  const order = { created: 0, changed: 1, removed: 2 };
  return changes.sort((a, b) => order[a.kind] - order[b.kind] || a.row.key.localeCompare(b.row.key));
}
