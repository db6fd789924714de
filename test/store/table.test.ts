import { describe, expect, it } from "vitest";
import { seededRandom } from "../../src/bench/mixed-history.ts";
import { byCreateIndexThenId, Table } from "../../src/store/table.ts";

interface Row {
  ID: string;
  NodeID: string;
  Tags: string[];
  CreateIndex: number;
  ModifyIndex: number;
}

const table = () =>
  new Table<Row>({
    name: "rows",
    key: (r) => r.ID,
    indexes: { node: (r) => r.NodeID, tag: (r) => r.Tags },
    order: byCreateIndexThenId,
  });

const row = (ID: string, NodeID: string, CreateIndex: number, Tags: string[] = []): Row => ({
  ID,
  NodeID,
  Tags,
  CreateIndex,
  ModifyIndex: CreateIndex,
});

describe("Table", () => {
  it("keeps secondary indexes in step with puts and deletes", () => {
    const t = table();
    t.put(row("a1", "n1", 1, ["x"]), 1);
    t.put(row("a2", "n1", 2, ["x", "y"]), 2);
    t.put(row("b1", "n2", 3), 3);
    expect(t.by("node", "n1").map((r) => r.ID)).toEqual(["a1", "a2"]);
    expect(t.by("tag", "y").map((r) => r.ID)).toEqual(["a2"]);
    t.put({ ...row("a2", "n2", 2), ModifyIndex: 4 }, 4);
    expect(t.by("node", "n1").map((r) => r.ID)).toEqual(["a1"]);
    expect(t.by("node", "n2").map((r) => r.ID)).toEqual(["a2", "b1"]);
    expect(t.by("tag", "y")).toEqual([]);
    t.delete("a1", 5);
    expect(t.by("node", "n1")).toEqual([]);
    expect(t.countBy("node", "n2")).toBe(2);
    expect(t.index).toBe(5);
    expect(() => t.by("nope", "x")).toThrow(/no index nope/);
  });

  it("gives the rows of an index value unsorted with eachBy: the same rows as by, current versions", () => {
    const t = table();
    for (const id of ["c3", "a1", "b2"]) t.put(row(id, "n1", 1), 1);
    t.put(row("z9", "n2", 2), 2);
    t.put({ ...row("a1", "n1", 1), ModifyIndex: 3 }, 3);
    const unsorted = [...t.eachBy("node", "n1")];
    expect(unsorted.map((r) => r.ID).sort()).toEqual(t.by("node", "n1").map((r) => r.ID));
    expect(unsorted.find((r) => r.ID === "a1")?.ModifyIndex).toBe(3);
    expect([...t.eachBy("node", "n3")]).toEqual([]);
    expect(() => [...t.eachBy("nope", "x")]).toThrow(/no index nope/);
  });

  it("refiles an updated row only under the index values that changed", () => {
    const t = table();
    t.put(row("a1", "n1", 1, ["x", "y"]), 1);
    // Equal values in a new array: still filed, once.
    t.put({ ...row("a1", "n1", 1, ["x", "y"]), ModifyIndex: 2 }, 2);
    expect(t.by("tag", "x").map((r) => r.ModifyIndex)).toEqual([2]);
    expect(t.countBy("node", "n1")).toBe(1);
    t.put({ ...row("a1", "n1", 1, ["y", "z"]), ModifyIndex: 3 }, 3);
    expect(t.by("tag", "x")).toEqual([]);
    expect(t.by("tag", "y").map((r) => r.ModifyIndex)).toEqual([3]);
    expect(t.by("tag", "z").map((r) => r.ID)).toEqual(["a1"]);
    expect(t.by("node", "n1").map((r) => r.ModifyIndex)).toEqual([3]);
  });

  it("finds rows by ID prefix in key order", () => {
    const t = table();
    for (const id of ["abc", "abd", "ab", "b", "aa", "abz"]) t.put(row(id, "n", 1), 1);
    expect([...t.withPrefix("ab")].map((r) => r.ID)).toEqual(["ab", "abc", "abd", "abz"]);
    expect([...t.withPrefix("c")]).toEqual([]);
    expect([...t.withPrefix("")].length).toBe(6);
  });

  it("lists by CreateIndex then ID, numerically, from any row, both ways", () => {
    const t = table();
    t.put(row("z", "n", 10), 10);
    t.put(row("a", "n", 9), 9);
    t.put(row("b", "n", 10), 10);
    t.put(row("c", "n", 100), 100);
    expect([...t.list()].map((r) => r.ID)).toEqual(["a", "b", "z", "c"]);
    expect([...t.list(row("b", "", 10))].map((r) => r.ID)).toEqual(["b", "z", "c"]);
    expect([...t.list(row("y", "", 10), true)].map((r) => r.ID)).toEqual(["b", "a"]);
    // An update that keeps the order fields keeps the row in place.
    t.put({ ...row("b", "m", 10), ModifyIndex: 200 }, 200);
    expect([...t.list()].map((r) => r.ModifyIndex)).toEqual([9, 200, 10, 100]);
  });

  it("restores rows and its index from a snapshot", () => {
    const t = table();
    t.restore([row("a", "n1", 3), row("b", "n1", 4)], 42);
    expect(t.size).toBe(2);
    expect(t.index).toBe(42);
    expect(t.by("node", "n1").length).toBe(2);
  });

  it("refiles a changed row only under the indexes whose declared fields changed", () => {
    const calls: string[] = [];
    const t = new Table<Row>({
      name: "rows",
      key: (r) => r.ID,
      indexes: {
        node: (r) => {
          calls.push(r.NodeID);
          return r.NodeID;
        },
        tag: (r) => r.Tags,
      },
      indexedFields: { node: ["NodeID"] },
    });
    const tags = ["x"];
    t.put(row("a", "n1", 1, tags), 1);
    calls.length = 0;
    // Same NodeID: the node index is not asked again; Tags has no declared fields and is.
    t.put({ ...row("a", "n1", 1, tags), ModifyIndex: 2 }, 2);
    expect(calls).toEqual([]);
    t.put({ ...row("a", "n2", 1, ["y"]), ModifyIndex: 3 }, 3);
    expect(calls).toEqual(["n1", "n2"]);
    expect(t.by("node", "n1")).toEqual([]);
    expect(t.by("node", "n2").map((r) => r.ID)).toEqual(["a"]);
    expect(t.by("tag", "x")).toEqual([]);
    expect(t.by("tag", "y").map((r) => r.ID)).toEqual(["a"]);
  });

  it("keeps key order through new rows filed in batches, reads and deletes between them", () => {
    const random = seededRandom(11);
    const t = table();
    const reference = new Set<string>();
    const id = () => Math.floor(random() * 1e9).toString(36);
    for (let step = 0; step < 6000; step++) {
      const r = random();
      if (r < 0.7) {
        const key = id();
        t.put(row(key, "n", step), step);
        reference.add(key);
      } else if (r < 0.9) {
        // A delete of a row whose key may not be filed in the key order yet.
        const keys = [...reference];
        const key = keys[Math.floor(random() * keys.length)];
        if (key === undefined) continue;
        t.delete(key, step);
        reference.delete(key);
      } else if (r < 0.95) {
        const prefix = id().slice(0, 1);
        expect([...t.withPrefix(prefix)].map((x) => x.ID)).toEqual(
          [...reference].filter((k) => k.startsWith(prefix)).sort(),
        );
      }
    }
    expect([...t.all()].map((x) => x.ID)).toEqual([...reference].sort());
    // Deleted after its put, before any read: gone from the key order too.
    t.put(row("zz-new", "n", 1), 1);
    t.delete("zz-new", 2);
    expect([...t.withPrefix("zz-")]).toEqual([]);
    t.put(row("zz-new", "n", 3), 3);
    expect([...t.withPrefix("zz-")].map((x) => x.ID)).toEqual(["zz-new"]);
  });

  it("reads an index value's rows in key order, current versions, through puts, moves and deletes between reads", () => {
    const random = seededRandom(7);
    const t = table();
    const model = new Map<string, Row>();
    const nodes = ["n1", "n2", "n3"];
    const expected = (node: string) =>
      [...model.values()].filter((r) => r.NodeID === node).sort((a, b) => (a.ID < b.ID ? -1 : 1));
    for (let step = 1; step < 4000; step++) {
      const r = random();
      const keys = [...model.keys()];
      const some = keys[Math.floor(random() * keys.length)];
      const node = nodes[Math.floor(random() * nodes.length)]!;
      if (r < 0.35 || some === undefined) {
        const created = row(Math.floor(random() * 1e9).toString(36), node, step);
        t.put(created, step);
        model.set(created.ID, created);
      } else if (r < 0.6) {
        // A new version on the same node: the set keeps its keys.
        const updated = { ...model.get(some)!, ModifyIndex: step };
        t.put(updated, step);
        model.set(some, updated);
      } else if (r < 0.7) {
        const moved = { ...model.get(some)!, NodeID: node, ModifyIndex: step };
        t.put(moved, step);
        model.set(some, moved);
      } else if (r < 0.8) {
        t.delete(some, step);
        model.delete(some);
      } else {
        const read = t.by("node", node);
        expect(read).toEqual(expected(node));
        // Each read is a new array: what a caller does with it stays its own.
        read.reverse();
      }
    }
    for (const node of nodes) expect(t.by("node", node)).toEqual(expected(node));
    t.restore([...model.values()], 9999);
    for (const node of nodes) expect(t.by("node", node)).toEqual(expected(node));
  });

  it("reads a set split into shards as one in key order, before and after a key is added", () => {
    const t = table();
    const ids = Array.from({ length: 16_400 }, (_, i) => `k${(i * 7919) % 16_400}`);
    for (const [i, id] of ids.entries()) t.put(row(id, "n", i + 1), i + 1);
    expect(t.by("node", "n").map((r) => r.ID)).toEqual([...ids].sort());
    t.put(row("a-first", "n", 20_000), 20_000);
    t.delete("k1", 20_001);
    const after = t.by("node", "n").map((r) => r.ID);
    expect(after[0]).toBe("a-first");
    expect(after).not.toContain("k1");
    expect(after).toHaveLength(16_400);
  });
});
