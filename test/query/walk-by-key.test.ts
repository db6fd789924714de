import { describe, expect, it } from "vitest";
import { SLICE_MS } from "../../src/query/sliced-walk.ts";
import { takeByKey, walkByKey } from "../../src/query/walk-by-key.ts";
import { Table } from "../../src/store/table.ts";

interface Row {
  readonly ID: string;
  readonly Namespace: string;
  readonly CreateIndex: number;
  readonly ModifyIndex: number;
}

function table(n: number, namespace = (_i: number) => "default") {
  const t = new Table<Row>({ name: "rows", key: (r) => r.ID });
  for (let i = 0; i < n; i++) {
    t.put(
      { ID: `k${String(i).padStart(4, "0")}`, Namespace: namespace(i), CreateIndex: 1, ModifyIndex: 1 },
      1,
    );
  }
  return t;
}

const busy = (ms: number) => {
  const end = performance.now() + ms;
  while (performance.now() < end);
};

describe("walkByKey", () => {
  it("yields to the event loop and resumes after the last key, seeing the table as it is then", async () => {
    const t = table(1000);
    const seen: string[] = [];
    let yielded = false;
    // Runs during the walk's first yield: one row ahead goes, one appears.
    setImmediate(() => {
      yielded = true;
      t.delete("k0500", 2);
      t.put({ ID: "k0400x", Namespace: "default", CreateIndex: 2, ModifyIndex: 2 }, 2);
    });
    await walkByKey(t, "k", (row) => {
      if (seen.length === 0) busy(SLICE_MS + 1);
      seen.push(row.ID);
      return true;
    });
    expect(yielded).toBe(true);
    expect(seen).toContain("k0400x");
    expect(seen).not.toContain("k0500");
    expect(seen).toHaveLength(1000);
    expect([...seen].sort()).toEqual(seen);
  });

  it("stops when the visit says so, and walks only the prefix", async () => {
    const t = table(300);
    const seen: string[] = [];
    await walkByKey(t, "k01", (row) => {
      seen.push(row.ID);
      return seen.length < 5;
    });
    expect(seen).toEqual(["k0100", "k0101", "k0102", "k0103", "k0104"]);
  });
});

describe("takeByKey", () => {
  it("takes the first accepted rows and says whether another follows, past any number of refused ones", async () => {
    const t = table(5000, (i) => (i % 1000 === 999 ? "other" : "default"));
    const first = await takeByKey(t, "", 3, (r) => r.Namespace === "other");
    expect(first.rows.map((r) => r.ID)).toEqual(["k0999", "k1999", "k2999"]);
    expect(first.more).toBe(true);
    const all = await takeByKey(t, "", 5, (r) => r.Namespace === "other");
    expect(all.rows).toHaveLength(5);
    expect(all.more).toBe(false);
  });
});
