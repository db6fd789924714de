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
});
