import { describe, expect, it } from "vitest";
import { seededRandom } from "../../src/bench/mixed-history.ts";
import { SortedList } from "../../src/store/sorted-list.ts";

describe("SortedList", () => {
  it("matches a plain sorted array under random inserts and removals", () => {
    const random = seededRandom(3);
    const list = new SortedList<number>((a, b) => a - b);
    const reference = new Set<number>();
    for (let i = 0; i < 20_000; i++) {
      const v = Math.floor(random() * 5000);
      if (random() < 0.6) {
        expect(list.upsert(v)).toBe(!reference.has(v));
        reference.add(v);
      } else {
        expect(list.remove(v)).toBe(reference.has(v));
        reference.delete(v);
      }
    }
    const sorted = [...reference].sort((a, b) => a - b);
    expect(list.size).toBe(sorted.length);
    expect([...list.iterate()]).toEqual(sorted);
    expect([...list.iterate(undefined, true)]).toEqual([...sorted].reverse());
    for (const from of [-1, 0, 17, 2500, 4999, 6000]) {
      expect([...list.iterate(from)]).toEqual(sorted.filter((v) => v >= from));
      expect([...list.iterate(from, true)]).toEqual(sorted.filter((v) => v <= from).reverse());
    }
    expect(list.first()).toBe(sorted[0]);
    expect(list.last()).toBe(sorted[sorted.length - 1]);
  });

  it("upserts a sorted batch as it upserts its values one by one, replacing equal ones", () => {
    const random = seededRandom(5);
    // Compared by `k` only: which of two equal values the list keeps shows.
    const byK = (a: { k: number }, b: { k: number }) => a.k - b.k;
    const one = new SortedList(byK);
    const batched = new SortedList(byK);
    for (let round = 0; round < 60; round++) {
      const n = Math.floor(random() * 1500);
      const batch = Array.from({ length: n }, () => ({ k: Math.floor(random() * 20_000), round }));
      batch.sort(byK);
      for (const v of batch) one.upsert(v);
      batched.upsertSorted(batch);
      expect(batched.size).toBe(one.size);
      for (let r = 0; r < 200; r++) {
        const v = { k: Math.floor(random() * 20_000), round: -1 };
        expect(batched.remove(v)).toBe(one.remove(v));
      }
    }
    expect([...batched.iterate()]).toEqual([...one.iterate()]);
    expect([...batched.iterate(undefined, true)]).toEqual([...one.iterate(undefined, true)]);
  });

  it("appends past its last value, across chunk splits, and still replaces an equal last value", () => {
    const byK = (a: { k: number; v: string }, b: { k: number; v: string }) => a.k - b.k;
    const list = new SortedList(byK);
    for (let k = 0; k < 3000; k++) expect(list.upsert({ k, v: "a" })).toBe(true);
    expect(list.upsert({ k: 2999, v: "b" })).toBe(false);
    expect(list.upsert({ k: -1, v: "a" })).toBe(true);
    expect(list.size).toBe(3001);
    const all = [...list.iterate()];
    expect(all.map((x) => x.k)).toEqual(Array.from({ length: 3001 }, (_, i) => i - 1));
    expect(list.last()).toEqual({ k: 2999, v: "b" });
    expect([...list.iterate({ k: 1500, v: "" })].length).toBe(1500);
  });
});
