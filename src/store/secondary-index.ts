import { type Keyed, KeySet, ShardedMap } from "./sharded.ts";

/**
 * One secondary index of a table: the keys of the rows filed under each
 * value. The set of the last value filed under is kept at hand, because
 * consecutive new rows mostly share it: a plan record's placements have
 * one namespace, evaluation, job and signing key, and each lookup of the
 * value costs its shard's hash and a Map lookup (for a joined job key, a
 * fresh string hashed whole). Same sets, same order, as looking it up.
 */
export class SecondaryIndex {
  private readonly sets = new ShardedMap<KeySet>();
  private lastValue: string | undefined;
  private lastSet: KeySet | undefined;

  get(value: string): KeySet | undefined {
    return this.sets.get(value);
  }

  /** Files `key` under `value`; `item`, if given, is what the set keeps in its key order for it (KeySet.ordered). */
  file(value: string, key: string, item?: Keyed): void {
    let set = this.lastSet !== undefined && this.lastValue === value ? this.lastSet : this.sets.get(value);
    if (!set) {
      set = new KeySet();
      this.sets.set(value, set);
    }
    this.lastValue = value;
    this.lastSet = set;
    set.add(key, item);
  }

  unfile(value: string, key: string): void {
    const set = this.sets.get(value);
    if (!set) return;
    set.delete(key);
    if (set.size > 0) return;
    this.sets.delete(value);
    // A set dropped from the index must not take keys filed later.
    if (set === this.lastSet) {
      this.lastSet = undefined;
      this.lastValue = undefined;
    }
  }

  clear(): void {
    this.sets.clear();
    this.lastSet = undefined;
    this.lastValue = undefined;
  }
}
