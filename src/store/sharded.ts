/**
 * String-keyed maps and sets split into shards, for tables of a million rows.
 *
 * V8 keeps a Map or Set in one hash table and rehashes all of it when it
 * grows past its capacity or shrinks below a quarter of it: at a million
 * keys that is one stop of about 100 ms inside whichever apply crossed the
 * threshold (a delete of every evaluation crosses one at 262,144 keys left,
 * then at each halving). Split over 256 shards, each rehash moves a 256th of
 * the keys, so no single insert or delete pays for the whole table.
 *
 * A shard is picked from the last characters of the key, where IDs differ
 * (UUIDs, counters); a skew only costs balance, never correctness. Iteration
 * goes shard by shard, in insertion order within each: the same keys stored
 * in the same order always iterate alike, which is what snapshots and state
 * hashes need.
 */
const SHARD_BITS = 8;
const SHARDS = 1 << SHARD_BITS;

function shardOf(key: string): number {
  let h = 0x811c9dc5;
  for (let i = Math.max(0, key.length - 4); i < key.length; i++)
    h = Math.imul(h ^ key.charCodeAt(i), 0x01000193);
  return (h ^ (h >>> SHARD_BITS) ^ (h >>> 24)) & (SHARDS - 1);
}

export class ShardedMap<V> {
  private shards: (Map<string, V> | undefined)[] = new Array(SHARDS);
  private count = 0;

  get size(): number {
    return this.count;
  }

  get(key: string): V | undefined {
    return this.shards[shardOf(key)]?.get(key);
  }

  has(key: string): boolean {
    return this.shards[shardOf(key)]?.has(key) ?? false;
  }

  set(key: string, value: V): void {
    const s = shardOf(key);
    let shard = this.shards[s];
    if (!shard) {
      shard = new Map();
      this.shards[s] = shard;
    }
    const before = shard.size;
    shard.set(key, value);
    this.count += shard.size - before;
  }

  delete(key: string): boolean {
    const deleted = this.shards[shardOf(key)]?.delete(key) ?? false;
    if (deleted) this.count--;
    return deleted;
  }

  clear(): void {
    this.shards = new Array(SHARDS);
    this.count = 0;
  }

  *values(): Generator<V> {
    for (const shard of this.shards) if (shard) yield* shard.values();
  }
}

/** What a KeySet keeps in its keys' order: each item knows its key. */
export interface Keyed {
  readonly key: string;
}

/**
 * A set's kept order (KeySet.ordered) is kept up through adds and removes
 * while it holds at most this many items, an insert or removal in place;
 * a larger one is dropped on a change and made again by the next read.
 */
const ORDERED_KEPT_UP_TO = 256;

/** Sets stay plain and small until they hold this many keys (a secondary index value has a few, mostly). */
const SPLIT_AT = 16_384;

/**
 * A set of row keys filed under one secondary-index value: a plain Set while
 * small, split into shards (as ShardedMap) once it holds SPLIT_AT keys, so
 * that an index value shared by a million rows (every evaluation's namespace)
 * never rehashes all of them at once.
 */
export class KeySet {
  private small: Set<string> | undefined = new Set();
  private shards: (Set<string> | undefined)[] | undefined;
  private count = 0;
  /**
   * What the set's owner made of its keys in key order (a table: its rows'
   * slots), kept as keys are added (with their item) and removed, so that
   * reading the keys again neither sorts them nor looks each one up: a
   * node's allocations are read on every Node.GetClientAllocs run, and
   * change when a placement or a garbage collection adds or removes one.
   * Dropped when a key comes without its item, or the set is large.
   */
  ordered: Keyed[] | undefined;

  get size(): number {
    return this.count;
  }

  add(key: string, item?: Keyed): void {
    if (this.small) {
      this.small.add(key);
      if (this.small.size !== this.count) this.added(key, item);
      this.count = this.small.size;
      if (this.count >= SPLIT_AT) this.split();
      return;
    }
    const s = shardOf(key);
    let shard = this.shards![s];
    if (!shard) {
      shard = new Set();
      this.shards![s] = shard;
    }
    const before = shard.size;
    shard.add(key);
    if (shard.size !== before) {
      this.count++;
      this.added(key, item);
    }
  }

  delete(key: string): void {
    if (this.small) {
      this.small.delete(key);
      if (this.small.size !== this.count) this.removed(key);
      this.count = this.small.size;
      return;
    }
    if (this.shards![shardOf(key)]?.delete(key)) {
      this.count--;
      this.removed(key);
    }
  }

  private added(key: string, item: Keyed | undefined): void {
    const o = this.ordered;
    if (o === undefined) return;
    if (item === undefined || item.key !== key || o.length >= ORDERED_KEPT_UP_TO) this.ordered = undefined;
    else o.splice(lowerBound(o, key), 0, item);
  }

  private removed(key: string): void {
    const o = this.ordered;
    if (o === undefined) return;
    const i = o.length > ORDERED_KEPT_UP_TO ? -1 : lowerBound(o, key);
    if (i >= 0 && o[i]?.key === key) o.splice(i, 1);
    else this.ordered = undefined;
  }

  *[Symbol.iterator](): Generator<string> {
    if (this.small) {
      yield* this.small;
      return;
    }
    for (const shard of this.shards!) if (shard) yield* shard;
  }

  private split(): void {
    const keys = this.small!;
    this.small = undefined;
    this.shards = new Array(SHARDS);
    this.count = 0;
    for (const key of keys) this.add(key);
  }
}

/** The first position in `items` (in key order) whose key is not below `key`; `<` is code unit order, as the default sort's. */
function lowerBound(items: readonly Keyed[], key: string): number {
  let lo = 0;
  let hi = items.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (items[mid]!.key < key) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
