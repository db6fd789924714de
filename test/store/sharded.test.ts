import { randomUUID } from "node:crypto";
import { describe, expect, it } from "vitest";
import { seededRandom } from "../../src/bench/mixed-history.ts";
import { KeySet, ShardedMap } from "../../src/store/sharded.ts";

describe("ShardedMap", () => {
  it("answers like a Map through random sets and deletes", () => {
    const random = seededRandom(3);
    const sharded = new ShardedMap<number>();
    const plain = new Map<string, number>();
    for (let i = 0; i < 50_000; i++) {
      const key = `k-${Math.floor(random() * 5000)}`;
      if (random() < 0.6) {
        sharded.set(key, i);
        plain.set(key, i);
      } else {
        expect(sharded.delete(key)).toBe(plain.delete(key));
      }
      expect(sharded.size).toBe(plain.size);
    }
    for (const [k, v] of plain) expect(sharded.get(k)).toBe(v);
    expect(sharded.has("k-missing")).toBe(false);
    expect([...sharded.values()].sort()).toEqual([...plain.values()].sort());
    sharded.clear();
    expect(sharded.size).toBe(0);
    expect([...sharded.values()]).toEqual([]);
  });

  it("iterates the same keys stored in the same order alike (snapshots and hashes rely on it)", () => {
    const keys = Array.from({ length: 3000 }, () => randomUUID());
    const a = new ShardedMap<string>();
    for (const k of keys) a.set(k, k);
    const b = new ShardedMap<string>();
    for (const k of a.values()) b.set(k, k);
    expect([...b.values()]).toEqual([...a.values()]);
  });

  it("spreads UUIDs and counters over its shards", () => {
    for (const make of [() => randomUUID(), (i: number) => `job-${i}`]) {
      const m = new ShardedMap<number>();
      for (let i = 0; i < 65_536; i++) m.set(make(i), i);
      const shards = (m as unknown as { shards: (Map<string, number> | undefined)[] }).shards;
      const sizes = shards.map((s) => s?.size ?? 0);
      // 256 on average; a shard with four times that would mean the hash ignores what varies.
      expect(Math.max(...sizes)).toBeLessThan(1024);
    }
  });
});

describe("KeySet", () => {
  it("keeps every key when it splits into shards and as it shrinks again", () => {
    const set = new KeySet();
    const keys = Array.from({ length: 40_000 }, (_, i) => `eval-${i}`);
    for (const k of keys) set.add(k);
    set.add(keys[0]!);
    expect(set.size).toBe(keys.length);
    expect(new Set(set)).toEqual(new Set(keys));
    for (const k of keys.slice(0, 39_990)) set.delete(k);
    set.delete("never-added");
    expect(set.size).toBe(10);
    expect([...set].sort()).toEqual(keys.slice(39_990).sort());
  });
});
