import { SecondaryIndex } from "./secondary-index.ts";
import { type KeySet, ShardedMap } from "./sharded.ts";
import { type Compare, compareStrings, SortedList } from "./sorted-list.ts";

/** Every stored row carries the log indexes that created and last changed it. */
export interface IndexedRow {
  readonly CreateIndex: number;
  readonly ModifyIndex: number;
}

export interface TableSpec<R extends IndexedRow> {
  readonly name: string;
  /** The primary key. Composite keys are joined by the caller (e.g. `ns\u0000id`). */
  readonly key: (row: R) => string;
  /** Secondary, non-unique indexes: index name -> the value(s) a row is filed under. */
  readonly indexes?: Readonly<Record<string, (row: R) => string | readonly string[] | undefined>>;
  /**
   * Per secondary index, every field its value is computed from. A changed
   * row that holds the same value (by reference) in each of them keeps its
   * place in that index without the index function being called twice: an
   * allocation's client update keeps its node, job, evaluation and so on,
   * and computing those values (a job key joined anew, a task group looked
   * up) was most of what refiling it cost. Leave an index out when unsure.
   */
  readonly indexedFields?: Readonly<Record<string, readonly (keyof R & string)[]>>;
  /** A total order for paginated listing; rows are also kept in this order. */
  readonly order?: Compare<R>;
  /**
   * Keep primary keys sorted (default), for prefix lookups and key-ordered
   * iteration. Without it rows iterate in the order they were first stored,
   * which replay reproduces exactly; large tables nobody searches by prefix
   * save the upkeep.
   */
  readonly sortedKeys?: boolean;
  /** Running totals per group of rows (see TableSum), by name. */
  readonly sums?: Readonly<Record<string, TableSum<R>>>;
}

/**
 * A total kept per group of rows as they change, so a reader asks for a
 * group's total in O(1) instead of summing its rows: the plan applier's
 * node check reads each node's live usage once per plan record, and a
 * node may hold thousands of allocations.
 *
 * The table keeps it, not a projection: put, delete and restore are the
 * only ways rows change, so the total is the same live, after a replay and
 * after a snapshot restore, which files every row again through put.
 * It is kept in integer arithmetic, exact whatever the order rows came in:
 * a row with an amount that is not an integer of at most 2^31 in magnitude
 * is counted apart, and while a group holds one its total is not given
 * (`Table.sum` returns undefined: the reader sums the rows itself).
 */
export interface TableSum<R> {
  /** How many amounts a row has (the same for every row). */
  readonly dimensions: number;
  /** The group a row counts toward, or undefined when it counts toward none (e.g. a terminal allocation). */
  readonly group: (row: R) => string | undefined;
  /** What the row adds to its group, `dimensions` amounts. */
  readonly amounts: (row: R) => readonly number[];
}

/** The largest amount a row may add and stay exact: 2^22 rows of it stay within 2^53. */
const MAX_EXACT_AMOUNT = 2 ** 31;
/** More rows than this in one group and the total is not promised exact. */
const MAX_EXACT_ROWS = 2 ** 22;

/**
 * Where a table keeps a row: the primary map holds one per key for as long
 * as the key has a row, and a put of a new version only changes `row`.
 * Secondary index sets keep their keys' slots in key order once read (see
 * KeySet.ordered): `by` then reads each row through its slot, without the
 * primary map's hash and lookup per key, and never finds an old version.
 */
interface Slot<R> {
  readonly key: string;
  row: R;
}

/** New keys kept out of a table's key order at most (see Table.pendingKeys). */
const PENDING_KEYS = 1024;

interface GroupTotal {
  /** Rows counted toward the group, exact or not: the group is dropped at zero. */
  rows: number;
  /** Rows with an amount outside the exact range, not in `totals`. */
  inexact: number;
  readonly totals: number[];
}

class KeptSum<R> {
  readonly groups = new Map<string, GroupTotal>();
  readonly zero: readonly number[];

  constructor(readonly spec: TableSum<R>) {
    this.zero = Object.freeze(new Array<number>(spec.dimensions).fill(0));
  }

  /** Moves a row's contribution from what it was (`before`) to what it is (`after`). */
  change(before: R | undefined, after: R | undefined): void {
    const { group, amounts } = this.spec;
    const was = before === undefined ? undefined : group(before);
    const now = after === undefined ? undefined : group(after);
    const wasAmounts = was === undefined ? undefined : amounts(before!);
    const nowAmounts = now === undefined ? undefined : amounts(after!);
    // Most updates (a client's status report) change neither.
    if (was === now && wasAmounts === nowAmounts) return;
    if (was !== undefined) this.add(was, wasAmounts!, -1);
    if (now !== undefined) this.add(now, nowAmounts!, 1);
  }

  private add(group: string, amounts: readonly number[], sign: 1 | -1): void {
    let g = this.groups.get(group);
    if (!g) {
      g = { rows: 0, inexact: 0, totals: new Array<number>(this.spec.dimensions).fill(0) };
      this.groups.set(group, g);
    }
    g.rows += sign;
    if (isExact(amounts, this.spec.dimensions)) {
      for (let i = 0; i < g.totals.length; i++) g.totals[i] = g.totals[i]! + sign * amounts[i]!;
    } else g.inexact += sign;
    if (g.rows === 0) this.groups.delete(group);
  }

  total(group: string): readonly number[] | undefined {
    const g = this.groups.get(group);
    if (!g) return this.zero;
    return g.inexact > 0 || g.rows > MAX_EXACT_ROWS ? undefined : g.totals;
  }
}

function isExact(amounts: readonly number[], dimensions: number): boolean {
  if (amounts.length !== dimensions) return false;
  for (const v of amounts) if (!Number.isInteger(v) || Math.abs(v) > MAX_EXACT_AMOUNT) return false;
  return true;
}

/**
 * The row-type-free view of a table the store works with (snapshots,
 * hashing, change tracking). Methods, not function properties, so a
 * Table<SomeRow> is one.
 */
export interface AnyTable {
  readonly name: string;
  readonly index: number;
  readonly size: number;
  all(): Iterable<IndexedRow>;
  restore(rows: Iterable<IndexedRow>, index: number): void;
  touch(index: number): void;
}

/**
 * An in-memory table with a primary key, secondary indexes, a primary-key
 * order for prefix lookups and an optional listing order for pagination.
 * Projections change it only through the store's apply context, so every
 * change is seen by change$; everyone else reads.
 */
export class Table<R extends IndexedRow> implements AnyTable {
  readonly name: string;
  private readonly rows = new ShardedMap<Slot<R>>();
  private readonly keys: SortedList<string> | undefined;
  /**
   * Keys of new rows not in `keys` yet, in the order they came: filed
   * PENDING_KEYS at a time, or before anything reads or removes from the
   * key order. A new random ID's binary search of a large key list misses
   * the processor's cache at nearly every comparison (about 3 µs a key at
   * 50,000 UUIDs); a batch sorted first is filed walking forward through
   * chunks that stay cached (see SortedList.upsertSorted).
   */
  private pendingKeys: string[] = [];
  private readonly secondary = new Map<string, SecondaryIndex>();
  private readonly ordered: SortedList<R> | undefined;
  private readonly indexers: readonly (readonly [
    SecondaryIndex,
    (row: R) => string | readonly string[] | undefined,
    readonly (keyof R & string)[] | undefined,
  ])[];
  private readonly sums = new Map<string, KeptSum<R>>();
  private readonly summers: readonly KeptSum<R>[];
  /** The highest log index that changed this table: Nomad's per-table index. */
  private modifyIndex = 0;

  constructor(readonly spec: TableSpec<R>) {
    this.name = spec.name;
    this.indexers = Object.entries(spec.indexes ?? {}).map(([name, fn]) => {
      const idx = new SecondaryIndex();
      this.secondary.set(name, idx);
      return [idx, fn, spec.indexedFields?.[name]] as const;
    });
    this.ordered = spec.order ? new SortedList(spec.order) : undefined;
    this.keys = spec.sortedKeys === false ? undefined : new SortedList<string>(compareStrings);
    for (const [name, sum] of Object.entries(spec.sums ?? {})) this.sums.set(name, new KeptSum(sum));
    this.summers = [...this.sums.values()];
  }

  get size(): number {
    return this.rows.size;
  }

  get index(): number {
    return this.modifyIndex;
  }

  get(key: string): R | undefined {
    return this.rows.get(key)?.row;
  }

  has(key: string): boolean {
    return this.rows.has(key);
  }

  /** Rows filed under `value` in secondary index `index`, in primary-key order. */
  by(index: string, value: string): R[] {
    const idx = this.secondary.get(index);
    if (!idx) throw new Error(`table ${this.name} has no index ${index}`);
    const keys = idx.get(value);
    if (!keys) return [];
    const slots = (keys.ordered as readonly Slot<R>[] | undefined) ?? this.order(keys);
    const out = new Array<R>(slots.length);
    for (let i = 0; i < slots.length; i++) out[i] = slots[i]!.row;
    return out;
  }

  /**
   * The slots of a set's keys in key order, kept on the set as keys come
   * and go (KeySet.ordered). A delete unfiles the key as it drops the
   * slot, and a put of a new version changes the slot's row: a kept slot
   * always holds its key's current row.
   */
  private order(keys: KeySet): readonly Slot<R>[] {
    const sorted = [...keys];
    // The default sort orders strings by UTF-16 code units, as compareStrings does.
    sorted.sort();
    const slots = new Array<Slot<R>>(sorted.length);
    for (let i = 0; i < sorted.length; i++) slots[i] = this.rows.get(sorted[i]!)!;
    keys.ordered = slots;
    return slots;
  }

  /**
   * Rows filed under `value` in no promised order (the key set's own), for
   * sums and checks whose answer does not depend on it: `by` sorts the keys
   * when the set has no kept order, which the plan applier's node check
   * paid once per node of every plan record.
   */
  *eachBy(index: string, value: string): Generator<R> {
    const idx = this.secondary.get(index);
    if (!idx) throw new Error(`table ${this.name} has no index ${index}`);
    const keys = idx.get(value);
    if (!keys) return;
    for (const k of keys) yield this.rows.get(k)!.row;
  }

  /** How many rows are filed under `value`, without materialising them. */
  countBy(index: string, value: string): number {
    return this.secondary.get(index)?.get(value)?.size ?? 0;
  }

  /**
   * The total of `group` in sum `name` (zeros for a group without rows), or
   * undefined when it is not exact (see TableSum): then sum the rows.
   * Read only: the table updates it in place.
   */
  sum(name: string, group: string): readonly number[] | undefined {
    const kept = this.sums.get(name);
    if (!kept) throw new Error(`table ${this.name} keeps no sum ${name}`);
    return kept.total(group);
  }

  /** Rows whose primary key starts with `prefix`, in key order, from the first key >= `from` if given. */
  *withPrefix(prefix: string, from?: string): Generator<R> {
    if (!this.keys) throw new Error(`table ${this.name} keeps no key order for prefix lookups`);
    this.fileKeys();
    for (const k of this.keys.iterate(from?.startsWith(prefix) ? from : prefix)) {
      if (!k.startsWith(prefix)) return;
      yield this.rows.get(k)!.row;
    }
  }

  /** All rows, in primary-key order (or first-stored order for tables without sorted keys). */
  *all(): Generator<R> {
    if (!this.keys) {
      for (const slot of this.rows.values()) yield slot.row;
      return;
    }
    this.fileKeys();
    for (const k of this.keys.iterate()) yield this.rows.get(k)!.row;
  }

  /**
   * Rows in listing order from the first row at or after `from` (or at or
   * before it, in reverse). `from` only needs the fields the order compares.
   */
  *list(from?: R, reverse = false): Generator<R> {
    if (!this.ordered) throw new Error(`table ${this.name} has no listing order`);
    yield* this.ordered.iterate(from, reverse);
  }

  // The methods below are for the store's apply context and snapshot restore.

  /** @internal */
  put(row: R, index: number): R | undefined {
    const key = this.spec.key(row);
    const slot = this.rows.get(key);
    const before = slot?.row;
    if (slot) {
      this.refile(slot, slot.row, row);
      slot.row = row;
    } else {
      if (this.keys) {
        this.pendingKeys.push(key);
        if (this.pendingKeys.length >= PENDING_KEYS) this.fileKeys();
      }
      const created: Slot<R> = { key, row };
      this.file(created);
      this.rows.set(key, created);
    }
    for (const sum of this.summers) sum.change(before, row);
    if (this.ordered) {
      if (before && this.spec.order!(before, row) !== 0) this.ordered.remove(before);
      this.ordered.upsert(row);
    }
    if (index > this.modifyIndex) this.modifyIndex = index;
    return before;
  }

  /** @internal */
  delete(key: string, index: number): R | undefined {
    const slot = this.rows.get(key);
    if (!slot) return undefined;
    const before = slot.row;
    this.rows.delete(key);
    if (this.keys) {
      this.fileKeys();
      this.keys.remove(key);
    }
    this.unfile(key, before);
    for (const sum of this.summers) sum.change(before, undefined);
    this.ordered?.remove(before);
    if (index > this.modifyIndex) this.modifyIndex = index;
    return before;
  }

  /** @internal Marks the table changed at `index` without a row change (e.g. a delete of nothing). */
  touch(index: number): void {
    if (index > this.modifyIndex) this.modifyIndex = index;
  }

  /** @internal */
  restore(rows: Iterable<R>, index: number): void {
    this.clear();
    for (const row of rows) this.put(row, 0);
    this.modifyIndex = index;
  }

  /** @internal */
  clear(): void {
    this.rows.clear();
    this.keys?.clear();
    this.pendingKeys = [];
    for (const idx of this.secondary.values()) idx.clear();
    for (const sum of this.summers) sum.groups.clear();
    this.ordered?.clear();
    this.modifyIndex = 0;
  }

  /** Files the pending keys into the key order (see pendingKeys). */
  private fileKeys(): void {
    const pending = this.pendingKeys;
    if (pending.length === 0) return;
    this.pendingKeys = [];
    // The default sort orders strings by UTF-16 code units, as compareStrings does.
    pending.sort();
    this.keys!.upsertSorted(pending);
  }

  private file(slot: Slot<R>): void {
    const { key, row } = slot;
    for (const [idx, fn] of this.indexers) {
      const values = fn(row);
      if (typeof values === "string") idx.file(values, key, slot);
      else if (values) for (const value of values) idx.file(value, key, slot);
    }
  }

  /**
   * Moves a changed row between index values. Most updates leave them alone
   * (an allocation's node, job and namespace never change): those cost
   * nothing, where unfiling and filing again would touch every set.
   */
  private refile(slot: Slot<R>, before: R, after: R): void {
    const key = slot.key;
    for (const [idx, fn, fields] of this.indexers) {
      if (fields !== undefined && sameFields(fields, before, after)) continue;
      const was = fn(before);
      const now = fn(after);
      if (was === now || (typeof was !== "string" && typeof now !== "string" && sameValues(was, now)))
        continue;
      if (typeof was === "string") idx.unfile(was, key);
      else if (was) for (const value of was) idx.unfile(value, key);
      if (typeof now === "string") idx.file(now, key, slot);
      else if (now) for (const value of now) idx.file(value, key, slot);
    }
  }

  private unfile(key: string, row: R): void {
    for (const [idx, fn] of this.indexers) {
      const values = fn(row);
      if (typeof values === "string") idx.unfile(values, key);
      else if (values) for (const value of values) idx.unfile(value, key);
    }
  }
}

function sameFields<R>(fields: readonly (keyof R)[], before: R, after: R): boolean {
  for (let i = 0; i < fields.length; i++) if (before[fields[i]!] !== after[fields[i]!]) return false;
  return true;
}

function sameValues(a: readonly string[] | undefined, b: readonly string[] | undefined): boolean {
  if (!a || !b || a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/**
 * A new row from its spec and the indexes that stamp it. The index fields go
 * first because V8 (Node 20) takes a slow path, about fifty times slower,
 * for an object literal that adds new keys after a spread; replay speed
 * depends on it. A spec that carries its own index fields (a client echoing
 * a row back) is overridden, on the fast path since the keys then exist.
 */
export function stamped<S extends object>(spec: S, CreateIndex: number, ModifyIndex: number): S & IndexedRow {
  const row = { CreateIndex, ModifyIndex, ...spec };
  if (row.CreateIndex === CreateIndex && row.ModifyIndex === ModifyIndex) return row;
  return { ...row, CreateIndex, ModifyIndex };
}

/** Orders rows by CreateIndex, then by ID: the order Nomad lists evaluations, allocations and jobs in. */
export function byCreateIndexThenId<R extends IndexedRow & { readonly ID: string }>(a: R, b: R): number {
  return a.CreateIndex - b.CreateIndex || compareStrings(a.ID, b.ID);
}
