import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { Table } from "../../src/store/table.ts";

/**
 * A table's kept sums (TableSpec.sums) against the sum of its rows, computed
 * here from scratch: after any sequence of puts and deletes, and in a table
 * restored from the rows, every group's total is exactly the recomputed sum,
 * or undefined while the group holds a row with an amount outside the exact
 * range (then only).
 */

const runs = (n: number) => ({ numRuns: n * Math.max(1, Number(process.env.PROPERTY_RUNS_SCALE) || 1) });

interface Row {
  readonly ID: string;
  readonly Group: string | null;
  readonly Amounts: readonly number[];
  readonly CreateIndex: number;
  readonly ModifyIndex: number;
}

const GROUPS = ["n1", "n2", "n3"];

const newTable = () =>
  new Table<Row>({
    name: "rows",
    key: (r) => r.ID,
    indexes: { group: (r) => r.Group ?? undefined },
    sums: { usage: { dimensions: 2, group: (r) => r.Group ?? undefined, amounts: (r) => r.Amounts } },
  });

const amount = fc.oneof(
  { weight: 8, arbitrary: fc.integer({ min: -1_000, max: 100_000 }) },
  // Outside the exact range: a fraction, or an integer too large to add up exactly.
  { weight: 1, arbitrary: fc.constantFrom(0.5, 1e-3, 2 ** 40, -(2 ** 33)) },
);

const op = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant("put" as const),
      id: fc.integer({ min: 0, max: 12 }),
      group: fc.option(fc.constantFrom(...GROUPS), { freq: 4 }),
      amounts: fc.tuple(amount, amount),
      // The same array as the row it replaces, as a projection that keeps the resources does.
      sameAmounts: fc.boolean(),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({ kind: fc.constant("delete" as const), id: fc.integer({ min: 0, max: 12 }) }),
  },
);

const exact = (v: number) => Number.isInteger(v) && Math.abs(v) <= 2 ** 31;

/** The expected total of every group, from the rows alone. */
function recomputed(rows: Iterable<Row>, group: string): readonly number[] | undefined {
  const totals = [0, 0];
  for (const r of rows) {
    if (r.Group !== group) continue;
    if (!r.Amounts.every(exact)) return undefined;
    totals[0]! += r.Amounts[0]!;
    totals[1]! += r.Amounts[1]!;
  }
  return totals;
}

function expectSums(t: Table<Row>, reference: Map<string, Row>): void {
  for (const g of [...GROUPS, "nowhere"])
    expect(t.sum("usage", g)).toEqual(recomputed(reference.values(), g));
}

describe("Table sums", () => {
  it("equal the recomputed sum of the rows after any puts and deletes, and after a restore", () => {
    fc.assert(
      fc.property(fc.array(op, { maxLength: 80 }), (ops) => {
        const t = newTable();
        const reference = new Map<string, Row>();
        let index = 0;
        for (const o of ops) {
          index++;
          const id = `a${o.id}`;
          if (o.kind === "delete") {
            t.delete(id, index);
            reference.delete(id);
          } else {
            const before = reference.get(id);
            const row: Row = {
              ID: id,
              Group: o.group,
              Amounts: o.sameAmounts && before ? before.Amounts : o.amounts,
              CreateIndex: before?.CreateIndex ?? index,
              ModifyIndex: index,
            };
            t.put(row, index);
            reference.set(id, row);
          }
          expectSums(t, reference);
        }
        const restored = newTable();
        restored.put({ ID: "stale", Group: "n1", Amounts: [7, 7], CreateIndex: 1, ModifyIndex: 1 }, 1);
        restored.restore(t.all(), index);
        expectSums(restored, reference);
      }),
      runs(300),
    );
  });

  it("gives zeros for a group without rows, and refuses a sum it does not keep", () => {
    const t = newTable();
    expect(t.sum("usage", "n1")).toEqual([0, 0]);
    t.put({ ID: "a", Group: "n1", Amounts: [3, 4], CreateIndex: 1, ModifyIndex: 1 }, 1);
    t.delete("a", 2);
    expect(t.sum("usage", "n1")).toEqual([0, 0]);
    expect(() => t.sum("other", "n1")).toThrow(/keeps no sum other/);
  });
});
