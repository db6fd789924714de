import type { Subscription } from "rxjs";
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

type Wake = () => void;

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
 */
export class Watches {
  private readonly byTable = new Map<string, Set<Wake>>();
  /** table -> index name -> value -> wakes */
  private readonly byValue = new Map<string, Map<string, Map<string, Set<Wake>>>>();
  /** table -> key -> wakes */
  private readonly byKey = new Map<string, Map<string, Set<Wake>>>();
  private readonly due = new Set<Wake>();
  /** The wakes registered by a watch with `changes`, and its filter. */
  private readonly filters = new WeakMap<Wake, ChangeFilter>();
  private readonly subscriptions: Subscription[];
  private readonly pacer: TurnPacer;

  /** `wakesPerTurn`: how many wakes one turn of the event loop runs at most (TurnPacer). */
  constructor(
    private readonly store: Store,
    wakesPerTurn?: number,
  ) {
    this.pacer = new TurnPacer(wakesPerTurn);
    this.subscriptions = [
      store.change$.subscribe((c) => this.changed(c)),
      store.applied$.subscribe((b) => this.applied(b.tables)),
    ];
  }

  /**
   * Calls `wake` once, after the first applied batch that changes anything
   * in `watches`. Returns the function that cancels it.
   */
  once(watches: readonly Watch[], wake: Wake): () => void {
    // Where each registration sits, so that cancelling also drops emptied
    // sets: watched row keys come and go with the rows.
    const registered: [Map<string, Set<Wake>>, string, Wake][] = [];
    let done = false;
    const fire = () => {
      if (done) return;
      cancel();
      wake();
    };
    const cancel = () => {
      done = true;
      for (const [map, key, entry] of registered) {
        const set = map.get(key);
        if (set?.delete(entry) && set.size === 0) map.delete(key);
        // A filtered watch's own entry may be due already, as `fire` may be.
        this.due.delete(entry);
      }
      this.due.delete(fire);
    };
    for (const w of watches) {
      const [map, key] =
        typeof w === "string"
          ? [this.byTable, w]
          : "key" in w
            ? [mapIn(this.byKey, w.table), w.key]
            : [mapIn(mapIn(this.byValue, w.table), w.index), w.value];
      let set = map.get(key);
      if (!set) {
        set = new Set();
        map.set(key, set);
      }
      // A filtered watch gets an entry of its own: the same read may also watch unfiltered.
      let entry = fire;
      if (typeof w !== "string" && "changes" in w && w.changes) {
        entry = () => fire();
        this.filters.set(entry, w.changes);
      }
      set.add(entry);
      registered.push([map, key, entry]);
    }
    return cancel;
  }

  stop(): void {
    for (const s of this.subscriptions) s.unsubscribe();
  }

  private changed(c: Change): void {
    const keys = this.byKey.get(c.table);
    if (keys) this.mark(keys.get(c.key));
    const indexes = this.byValue.get(c.table);
    if (!indexes) return;
    const table = this.store.table<IndexedRow>(c.table);
    for (const [index, values] of indexes) {
      if (values.size === 0) continue;
      const valuesOf = table.spec.indexes?.[index];
      if (!valuesOf) continue;
      const before = c.before === undefined ? undefined : valuesOf(c.before as IndexedRow);
      const after = c.after === undefined ? undefined : valuesOf(c.after as IndexedRow);
      // A row that stays under its value is one change to that value's watchers.
      for (const v of typeof before === "string" && before === after ? [before] : [before, after]) {
        if (typeof v === "string") this.mark(values.get(v), c);
        else if (v) for (const one of v) this.mark(values.get(one), c);
      }
    }
  }

  private applied(tables: ReadonlySet<string>): void {
    for (const t of tables) this.mark(this.byTable.get(t));
    if (this.due.size === 0) return;
    const wakes = [...this.due];
    this.due.clear();
    // A wake that was cancelled meanwhile does nothing (`fire` runs once).
    for (const wake of wakes) this.pacer.run(wake);
  }

  private mark(wakes: Set<Wake> | undefined, change?: Change): void {
    if (!wakes) return;
    for (const w of wakes) {
      const changes = change && this.filters.get(w);
      if (!changes || changes(change.before, change.after)) this.due.add(w);
    }
  }
}

function mapIn<V>(outer: Map<string, Map<string, V>>, key: string): Map<string, V> {
  let inner = outer.get(key);
  if (!inner) {
    inner = new Map();
    outer.set(key, inner);
  }
  return inner;
}
