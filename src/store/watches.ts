import type { Subscription } from "rxjs";
import { type LoopTurn, loopTurn } from "./loop-turn.ts";
import type { Change } from "./projection.ts";
import type { Store } from "./store.ts";
import type { IndexedRow } from "./table.ts";
import { TurnPacer } from "./turn-pacer.ts";

/**
 * What a blocking read depends on: a whole table (by name), the rows filed
 * under one value of a table's secondary index, or one row by primary key.
 * Nomad's memdb watch sets are as fine: a client's Node.GetClientAllocs
 * wakes when its own allocations change, not when any allocation does.
 * An index-value watch may be finer still: with `changes`, only the changes
 * of its rows for which it is true wake it (a row added or removed is
 * `before` or `after` undefined).
 */
export type Watch =
  | string
  | {
      readonly table: string;
      readonly index: string;
      readonly value: string;
      readonly changes?: ChangeFilter;
    }
  | { readonly table: string; readonly key: string };

/** Whether a change of a watched row (`before` or `after` undefined: added or removed) wakes the watch. */
export type ChangeFilter = (before: unknown, after: unknown) => boolean;

type IndexValues = (row: IndexedRow) => string | readonly string[] | undefined;

// A watcher's states. Linked into its buckets while ARMED or DUE.
/** Not armed: neither linked nor waiting for its wake. */
const IDLE = 0;
/** Linked into its buckets, waiting for a change. */
const ARMED = 1;
/** A change of the batch being applied matched it: woken once the batch is whole. */
const DUE = 2;
/** Its batch applied: unlinked, its wake waiting for its turn in the pacer. */
const QUEUED = 3;
type WatchState = typeof IDLE | typeof ARMED | typeof DUE | typeof QUEUED;

/**
 * What waits on Watches: a blocking read's wait is one itself, for its whole
 * wait, armed again after each wake without allocating (its links are made
 * at its first arming and kept). `wake` is called once per arming, after the
 * first applied batch that changed anything in `watched`.
 */
export abstract class Watcher {
  // Watches' own bookkeeping, public only for it to reach.
  /** @internal */
  watchState: WatchState = IDLE;
  /** @internal One link per watch, made at the first arming. */
  watchLinks: Link[] | undefined = undefined;

  constructor(readonly watched: readonly Watch[]) {}

  abstract wake(): void;
}

/** One watch of a watcher, in its bucket's list (intrusive: no Set entry, no closure). */
class Link {
  prev: Link | undefined = undefined;
  next: Link | undefined = undefined;
  /** Where it was last linked, kept for arming again while the bucket lives. */
  bucket: Bucket | undefined = undefined;

  constructor(
    readonly watcher: Watcher,
    readonly watch: Watch,
    readonly filter: ChangeFilter | undefined,
  ) {}
}

/** The watchers of one table, key or index value, in the order they were armed. */
class Bucket {
  head: Link | undefined = undefined;
  tail: Link | undefined = undefined;
  /** Removed from its map by a sweep: a link that kept it looks its bucket up again. */
  dropped = false;
  /** Empty at the last sweep, and not armed since: the next sweep drops it if it still is empty. */
  idle = false;
}

class IndexWatch {
  readonly values = new Map<string, Bucket>();
  /** The table's function for this index: undefined until a change needs it, null if the table has none. */
  valuesOf: IndexValues | null | undefined = undefined;

  constructor(readonly name: string) {}
}

/** Everything watched in one table. Kept for the process's life: tables are few and fixed. */
class TableWatch {
  readonly all = new Bucket();
  readonly keys = new Map<string, Bucket>();
  /** An array, not a map: each change walks it. */
  readonly indexes: IndexWatch[] = [];
}

/**
 * Empty buckets are kept, so a watcher armed again and again (a node's long
 * poll after each answer) finds its bucket and allocates nothing. A sweep
 * drops those empty at the previous one too and not armed since, so a wave
 * that empties every node's bucket for a moment drops none of them, and a
 * key watched once (an allocation's ID) is gone after two sweeps. Sweeps
 * come once this many more buckets (or as many as are in use, if more) are
 * empty than the last one left: O(1) per bucket emptied, and at most that
 * many twice over kept empty.
 */
const SWEEP_EMPTY_BUCKETS = 4096;

/**
 * Wakes blocking reads once an applied batch changed what they watch. Row
 * and index-value watches are matched against each change (both the row
 * before and after, so a row moving away from a value wakes its old
 * watchers too); every wake waits for the end of the batch, so a woken read
 * sees the batch whole. Thousands of clients each watching their own rows
 * then cost nothing when other rows change. Wakes are paced (TurnPacer): a
 * batch that wakes a thousand long polls answers them over several turns of
 * the event loop, a later batch's wakes behind the earlier ones, so the
 * loop serves heartbeats in between; a read woken a turn later reads the
 * tables as they are then, still whole batches.
 *
 * A watcher is linked into one bucket per watch (a doubly linked list
 * through its links, kept between armings), and its state says whether it
 * is waiting, matched in this batch, or queued for its wake: arming,
 * matching, waking and cancelling allocate nothing once a watcher and its
 * buckets exist (GC is a fifth of a placement burst's main thread).
 */
export class Watches {
  private readonly tables = new Map<string, TableWatch>();
  /** Watchers matched in the batch being applied, in the order matched (may repeat; the state decides). */
  private readonly due: (Watcher | undefined)[] = [];
  private dueCount = 0;
  private buckets = 0;
  private emptyBuckets = 0;
  /** How many empty buckets make a sweep worth it. */
  private sweepAt = SWEEP_EMPTY_BUCKETS;
  private armedCount = 0;
  private readonly subscriptions: Subscription[];
  private readonly pacer: TurnPacer<Watcher>;

  /**
   * `wakesPerTurn`: how many wakes one turn of the event loop runs at most
   * (TurnPacer); `loop`: the allowance they share with the loop's other
   * paced steps (the thread's own unless given).
   */
  constructor(
    private readonly store: Store,
    wakesPerTurn?: number,
    loop: LoopTurn = loopTurn,
  ) {
    this.pacer = new TurnPacer<Watcher>(wakesPerTurn, release, undefined, loop);
    this.subscriptions = [
      store.change$.subscribe((c) => this.changed(c)),
      store.applied$.subscribe((b) => this.applied(b.tables)),
    ];
  }

  /**
   * Calls `wake` once, after the first applied batch that changes anything
   * in `watches`. Returns the function that cancels it.
   */
  once(watches: readonly Watch[], wake: () => void): () => void {
    const watcher = new OnceWatcher(watches, wake);
    this.arm(watcher);
    return () => this.disarm(watcher);
  }

  /**
   * Arms `watcher`: its `wake` runs once, after the first applied batch that
   * changes anything it watches from now on. Arming it again before then
   * changes nothing; arming it while a wake is due or queued drops that wake
   * (the caller is about to read anyway) and waits for the next change.
   */
  arm(watcher: Watcher): void {
    const state = watcher.watchState;
    if (state === ARMED) return;
    watcher.watchState = ARMED;
    // Still linked: its place in the due list is passed over.
    if (state === DUE) return;
    this.armedCount++;
    const links = watcher.watchLinks ?? this.linksOf(watcher);
    for (let i = 0; i < links.length; i++) {
      const link = links[i]!;
      let bucket = link.bucket;
      if (bucket === undefined || bucket.dropped) bucket = link.bucket = this.bucketOf(link.watch);
      this.append(bucket, link);
    }
  }

  /** Cancels `watcher`'s arming, and its wake if due or queued. */
  disarm(watcher: Watcher): void {
    const state = watcher.watchState;
    watcher.watchState = IDLE;
    if (state === ARMED || state === DUE) this.unlink(watcher);
  }

  /** Armed watchers, and buckets kept (empty ones included): for tests and figures. */
  get size(): { readonly armed: number; readonly buckets: number; readonly emptyBuckets: number } {
    return { armed: this.armedCount, buckets: this.buckets, emptyBuckets: this.emptyBuckets };
  }

  stop(): void {
    for (const s of this.subscriptions) s.unsubscribe();
  }

  private changed(c: Change): void {
    const table = this.tables.get(c.table);
    if (table === undefined) return;
    if (table.keys.size > 0) {
      const bucket = table.keys.get(c.key);
      if (bucket !== undefined && bucket.head !== undefined) this.mark(bucket, c);
    }
    const indexes = table.indexes;
    for (let i = 0; i < indexes.length; i++) {
      const index = indexes[i]!;
      if (index.values.size === 0) continue;
      let valuesOf = index.valuesOf;
      if (valuesOf === undefined)
        valuesOf = index.valuesOf = this.store.table<IndexedRow>(c.table).spec.indexes?.[index.name] ?? null;
      if (valuesOf === null) continue;
      const before = c.before === undefined ? undefined : valuesOf(c.before as IndexedRow);
      const after = c.after === undefined ? undefined : valuesOf(c.after as IndexedRow);
      this.markValues(index.values, before, c);
      // A row that stays under its value is one change to that value's watchers.
      if (after !== before) this.markValues(index.values, after, c);
    }
  }

  private markValues(
    values: Map<string, Bucket>,
    v: string | readonly string[] | undefined,
    c: Change,
  ): void {
    if (v === undefined) return;
    if (typeof v === "string") {
      const bucket = values.get(v);
      if (bucket !== undefined && bucket.head !== undefined) this.mark(bucket, c);
      return;
    }
    for (let i = 0; i < v.length; i++) {
      const bucket = values.get(v[i]!);
      if (bucket !== undefined && bucket.head !== undefined) this.mark(bucket, c);
    }
  }

  /** Marks the bucket's armed watchers due (those whose filter takes the change, if they have one). */
  private mark(bucket: Bucket, c: Change | undefined): void {
    for (let link = bucket.head; link !== undefined; link = link.next) {
      const watcher = link.watcher;
      if (watcher.watchState !== ARMED) continue;
      const filter = link.filter;
      if (filter !== undefined && c !== undefined && !filter(c.before, c.after)) continue;
      watcher.watchState = DUE;
      this.due[this.dueCount++] = watcher;
    }
  }

  private applied(tables: ReadonlySet<string>): void {
    for (const name of tables) {
      const table = this.tables.get(name);
      if (table !== undefined && table.all.head !== undefined) this.mark(table.all, undefined);
    }
    if (this.dueCount === 0) return;
    const { due } = this;
    for (let i = 0; i < this.dueCount; i++) {
      const watcher = due[i]!;
      due[i] = undefined;
      // Cancelled, or armed again, since it was matched (or listed twice).
      if (watcher.watchState !== DUE) continue;
      this.unlink(watcher);
      watcher.watchState = QUEUED;
      this.pacer.run(watcher);
    }
    this.dueCount = 0;
  }

  private linksOf(watcher: Watcher): Link[] {
    const { watched } = watcher;
    // Sized up front: a pushed-to array grows to 17 slots.
    const links = new Array<Link>(watched.length);
    for (let i = 0; i < watched.length; i++) {
      const w = watched[i]!;
      const filter = typeof w !== "string" && "changes" in w ? w.changes : undefined;
      links[i] = new Link(watcher, w, filter);
    }
    watcher.watchLinks = links;
    return links;
  }

  private bucketOf(w: Watch): Bucket {
    if (typeof w === "string") return this.tableWatch(w).all;
    const table = this.tableWatch(w.table);
    if ("key" in w) return this.bucketIn(table.keys, w.key);
    let index = table.indexes.find((i) => i.name === w.index);
    if (index === undefined) {
      index = new IndexWatch(w.index);
      table.indexes.push(index);
    }
    return this.bucketIn(index.values, w.value);
  }

  private tableWatch(name: string): TableWatch {
    let table = this.tables.get(name);
    if (table === undefined) {
      table = new TableWatch();
      this.tables.set(name, table);
      this.buckets++;
      this.emptyBuckets++;
    }
    return table;
  }

  private bucketIn(map: Map<string, Bucket>, key: string): Bucket {
    let bucket = map.get(key);
    if (bucket === undefined) {
      bucket = new Bucket();
      map.set(key, bucket);
      this.buckets++;
      this.emptyBuckets++;
    }
    return bucket;
  }

  private append(bucket: Bucket, link: Link): void {
    const tail = bucket.tail;
    if (tail === undefined) {
      bucket.head = link;
      bucket.idle = false;
      this.emptyBuckets--;
    } else {
      tail.next = link;
      link.prev = tail;
    }
    bucket.tail = link;
  }

  private unlink(watcher: Watcher): void {
    this.armedCount--;
    const links = watcher.watchLinks!;
    for (let i = 0; i < links.length; i++) {
      const link = links[i]!;
      const bucket = link.bucket!;
      const { prev, next } = link;
      if (prev === undefined) bucket.head = next;
      else prev.next = next;
      if (next === undefined) bucket.tail = prev;
      else next.prev = prev;
      link.prev = undefined;
      link.next = undefined;
      if (bucket.head === undefined) this.emptyBuckets++;
    }
    this.sweepIfWorth();
  }

  private sweepIfWorth(): void {
    if (this.emptyBuckets < this.sweepAt) return;
    const left = { buckets: 0, empty: 0 };
    for (const table of this.tables.values()) {
      left.buckets++;
      if (table.all.head === undefined) left.empty++;
      table.keys.forEach(sweepBucket, left);
      for (const index of table.indexes) index.values.forEach(sweepBucket, left);
    }
    this.buckets = left.buckets;
    this.emptyBuckets = left.empty;
    // The next sweep once as many buckets more as are in use (or the
    // minimum) are empty: the ones just marked stay until then.
    this.sweepAt = left.empty + Math.max(SWEEP_EMPTY_BUCKETS, left.buckets - left.empty);
  }
}

/**
 * Drops an empty bucket that was empty at the last sweep too and marks the
 * other empty ones; counts what is left (Map#forEach: no entry arrays).
 */
function sweepBucket(
  this: { buckets: number; empty: number },
  bucket: Bucket,
  key: string,
  map: Map<string, Bucket>,
): void {
  if (bucket.head === undefined) {
    if (bucket.idle) {
      bucket.dropped = true;
      map.delete(key);
      return;
    }
    bucket.idle = true;
    this.empty++;
  }
  this.buckets++;
}

/** The pacer's call: wakes a watcher still queued (not cancelled or armed again meanwhile). */
function release(watcher: Watcher): void {
  if (watcher.watchState !== QUEUED) return;
  watcher.watchState = IDLE;
  watcher.wake();
}

class OnceWatcher extends Watcher {
  constructor(
    watched: readonly Watch[],
    private readonly callback: () => void,
  ) {
    super(watched);
  }

  wake(): void {
    this.callback();
  }
}
