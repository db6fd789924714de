import { pino } from "pino";
import { describe, expect, it } from "vitest";
import { EnvelopeCodec } from "../../src/codec/envelope-codec.ts";
import { MemoryLog } from "../../src/log/memory-log.ts";
import { LoopTurn } from "../../src/store/loop-turn.ts";
import type { Projection } from "../../src/store/projection.ts";
import { Store } from "../../src/store/store.ts";
import { stamped, Table } from "../../src/store/table.ts";
import { type Watch, Watcher, Watches } from "../../src/store/watches.ts";
import { allSchemas } from "../../streams/index.ts";
import type { NamespaceEvent, NamespaceSpec } from "../../streams/namespaces.ts";

type Row = NamespaceSpec & { CreateIndex: number; ModifyIndex: number };

/** Namespaces filed by their Meta.team: enough to watch rows, index values and a table. */
async function setUp(applySliceMs = Number.POSITIVE_INFINITY, wakesPerTurn?: number) {
  const table = new Table<Row>({
    name: "teams",
    key: (r) => r.Name,
    indexes: { team: (r) => r.Meta?.team, tags: (r) => r.Meta?.tags?.split(",") },
  });
  const projection: Projection = {
    name: "teams",
    version: 1,
    tables: [table],
    handles: new Set(["NamespaceUpserted", "NamespaceDeleted"]),
    evolve(ctx, event) {
      const e = event as NamespaceEvent;
      if (e.type === "NamespaceUpserted") ctx.put(table, stamped(e.data.Namespace, ctx.index, ctx.index));
      else ctx.delete(table, e.data.Name);
    },
  };
  const store = new Store({
    log: new MemoryLog(),
    codec: new EnvelopeCodec(allSchemas),
    projections: [projection],
    logger: pino({ level: "silent" }),
    // By default a batch is applied in one turn here, whatever the machine's
    // load: a slice ending between the two records of the batch test below
    // would wake its watch on the first. The last test slices on purpose.
    applySliceMs,
  });
  await store.start();
  // Wakes paced by count only: the shared allowance (test/store/
  // loop-turn.test.ts) would cut a turn short on a loaded machine.
  const watches = new Watches(store, wakesPerTurn, new LoopTurn(Number.POSITIVE_INFINITY));
  const by = { kind: "server", id: "test" } as const;
  const put = async (Name: string, team: string, tags?: string) => {
    const Meta = tags === undefined ? { team } : { team, tags };
    const Namespace = { Name, Description: "", Quota: "", Meta, Capabilities: null };
    await store.write({ type: "NamespaceUpserted", v: 1, at: 1, by, data: { Namespace } });
  };
  const remove = async (Name: string) => {
    await store.write({ type: "NamespaceDeleted", v: 1, at: 1, by, data: { Name } });
  };
  const woken = (watch: readonly Watch[]) => {
    const seen = { count: 0 };
    const cancel = watches.once(watch, () => seen.count++);
    return Object.assign(seen, { cancel });
  };
  return { store, watches, put, remove, woken };
}

const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

describe("Watches", () => {
  it("wakes an index-value watch only for rows filed under that value, before or after", async () => {
    const { put, woken } = await setUp();
    await put("a", "red");
    const red = woken([{ table: "teams", index: "team", value: "red" }]);
    const blue = woken([{ table: "teams", index: "team", value: "blue" }]);
    await put("b", "green");
    expect(red.count).toBe(0);
    expect(blue.count).toBe(0);
    // "a" moves from red to blue: both the value it left and the one it joined.
    await put("a", "blue");
    expect(red.count).toBe(1);
    expect(blue.count).toBe(1);
    // Once: a later change does not call it again.
    await put("a", "red");
    expect(red.count).toBe(1);
  });

  it("wakes a filtered index-value watch only for the changes its filter takes", async () => {
    const { put, remove, woken } = await setUp();
    await put("a", "red");
    const seen: [string | undefined, string | undefined][] = [];
    // Only rows coming and going: a change of an existing row does not count.
    const changes = (before: unknown, after: unknown) => {
      seen.push([(before as Row | undefined)?.Name, (after as Row | undefined)?.Name]);
      return before === undefined || after === undefined;
    };
    const filtered = () => woken([{ table: "teams", index: "team", value: "red", changes }]);
    const first = filtered();
    await put("a", "red");
    expect(first.count).toBe(0);
    await put("b", "red");
    expect(first.count).toBe(1);
    const second = filtered();
    await remove("a");
    expect(second.count).toBe(1);
    expect(seen).toEqual([
      ["a", "a"],
      [undefined, "b"],
      ["a", undefined],
    ]);
    // The same read may watch the value unfiltered too: either wakes it, once.
    const both = woken([
      { table: "teams", index: "team", value: "red", changes },
      { table: "teams", index: "team", value: "red" },
    ]);
    await put("b", "red");
    expect(both.count).toBe(1);
  });

  it("drops a filtered watch's pending wake when it is cancelled mid-batch", async () => {
    const { store, put, woken, watches } = await setUp();
    const filtered = woken([{ table: "teams", index: "team", value: "red", changes: () => true }]);
    let armedWhenCancelled = -1;
    // Subscribed after Watches: the change has marked the watch due when this runs.
    const sub = store.change$.subscribe(() => {
      if (armedWhenCancelled >= 0) return;
      expect(watches.size.armed).toBe(1);
      filtered.cancel();
      armedWhenCancelled = watches.size.armed;
    });
    await put("a", "red");
    sub.unsubscribe();
    await new Promise<void>((resolve) => setImmediate(resolve));
    expect(armedWhenCancelled).toBe(0);
    expect(filtered.count).toBe(0);
  });

  it("wakes a key watch for its row, including its creation and deletion", async () => {
    const { put, remove, woken } = await setUp();
    const created = woken([{ table: "teams", key: "x" }]);
    await put("y", "red");
    expect(created.count).toBe(0);
    await put("x", "red");
    expect(created.count).toBe(1);
    const deleted = woken([{ table: "teams", key: "x" }]);
    await remove("x");
    expect(deleted.count).toBe(1);
  });

  it("wakes a table watch on any change, and never after it is cancelled", async () => {
    const { put, woken, watches } = await setUp();
    const any = woken(["teams"]);
    const cancelled = woken(["teams", { table: "teams", key: "a" }]);
    cancelled.cancel();
    await put("a", "red");
    expect(any.count).toBe(1);
    expect(cancelled.count).toBe(0);
    // Cancelled and fired registrations leave nothing armed.
    expect(watches.size.armed).toBe(0);
  });

  it("wakes after the whole batch is applied, so the woken read sees all of it", async () => {
    const { store, watches } = await setUp();
    const by = { kind: "server", id: "test" } as const;
    const seen: number[] = [];
    watches.once([{ table: "teams", key: "first" }], () => seen.push(store.table("teams").size));
    const ns = (Name: string) => ({ Name, Description: "", Quota: "", Meta: null, Capabilities: null });
    const { last } = await store.append([
      { type: "NamespaceUpserted", v: 1, at: 1, by, data: { Namespace: ns("first") } },
      { type: "NamespaceUpserted", v: 1, at: 1, by, data: { Namespace: ns("second") } },
    ]);
    await store.waitFor(last);
    expect(seen).toEqual([2]);
  });

  it("applies a batch over several turns when it outlasts the slice, each record whole, readers seeing a prefix", async () => {
    // A slice of 0 ms ends after every record: the most a long batch can be cut.
    const { store, watches } = await setUp(0);
    const by = { kind: "server", id: "test" } as const;
    const seen: number[] = [];
    watches.once([{ table: "teams", key: "first" }], () => seen.push(store.table("teams").size));
    const ns = (Name: string) => ({ Name, Description: "", Quota: "", Meta: null, Capabilities: null });
    const applied: number[] = [];
    const sub = store.applied$.subscribe((b) => applied.push(b.index));
    const { last } = await store.append(
      ["first", "second", "third"].map((name) => ({
        type: "NamespaceUpserted" as const,
        v: 1,
        at: 1,
        by,
        data: { Namespace: ns(name) },
      })),
    );
    await store.waitFor(last);
    sub.unsubscribe();
    expect(seen).toEqual([1]);
    expect(applied).toEqual([last - 2, last - 1, last]);
    expect(store.table("teams").size).toBe(3);
  });

  it("wakes at most its quota per turn of the loop, the rest on later turns, in order, a cancelled one never", async () => {
    const { store, watches } = await setUp(Number.POSITIVE_INFINITY, 2);
    const woken: string[] = [];
    const cancels = new Map<string, () => void>();
    for (const name of ["a", "b", "c", "d", "e"])
      cancels.set(
        name,
        watches.once([{ table: "teams", key: name }], () => woken.push(name)),
      );
    const by = { kind: "server", id: "test" } as const;
    const ns = (Name: string) => ({ Name, Description: "", Quota: "", Meta: null, Capabilities: null });
    // One batch that changes every watched row: all five are due at once.
    const { last } = await store.append(
      ["a", "b", "c", "d", "e"].map((name) => ({
        type: "NamespaceUpserted" as const,
        v: 1,
        at: 1,
        by,
        data: { Namespace: ns(name) },
      })),
    );
    await store.waitFor(last);
    expect(woken).toEqual(["a", "b"]);
    // Cancelled while its wake waits for a turn (a read that timed out meanwhile).
    cancels.get("e")!();
    await new Promise<void>((resolve) => setImmediate(resolve));
    expect(woken).toEqual(["a", "b", "c", "d"]);
    for (let turn = 0; turn < 3; turn++) await new Promise<void>((resolve) => setImmediate(resolve));
    expect(woken).toEqual(["a", "b", "c", "d"]);
  });

  it("wakes a later batch's watchers behind the earlier batch's, still paced", async () => {
    const { store, watches } = await setUp(Number.POSITIVE_INFINITY, 2);
    const woken: string[] = [];
    for (const name of ["a", "b", "c", "d", "e", "f", "g"])
      watches.once([{ table: "teams", key: name }], () => woken.push(name));
    const by = { kind: "server", id: "test" } as const;
    const ns = (Name: string) => ({ Name, Description: "", Quota: "", Meta: null, Capabilities: null });
    const batch = async (names: string[]) => {
      const { last } = await store.append(
        names.map((name) => ({
          type: "NamespaceUpserted" as const,
          v: 1,
          at: 1,
          by,
          data: { Namespace: ns(name) },
        })),
      );
      await store.waitFor(last);
    };
    // In the order of the rows changed, not the order armed.
    await batch(["c", "a", "b", "d"]);
    expect(woken).toEqual(["c", "a"]);
    // Applied in the same turn: its wakes queue behind b and d's.
    await batch(["g", "f"]);
    expect(woken).toEqual(["c", "a"]);
    await new Promise<void>((resolve) => setImmediate(resolve));
    expect(woken).toEqual(["c", "a", "b", "d"]);
    await new Promise<void>((resolve) => setImmediate(resolve));
    expect(woken).toEqual(["c", "a", "b", "d", "g", "f"]);
  });

  it("matches a row filed under several values by every value it had or has", async () => {
    const { put, woken } = await setUp();
    await put("a", "red", "x,y");
    const watch = (value: string) => woken([{ table: "teams", index: "tags", value }]);
    const [w, x, y, z] = ["w", "x", "y", "z"].map(watch);
    await put("a", "red", "y,z");
    expect([w!.count, x!.count, y!.count, z!.count]).toEqual([0, 1, 1, 1]);
  });

  it("passes the filter the row before and after, so a row leaving a value wakes its filtered watchers", async () => {
    const { put, woken } = await setUp();
    await put("a", "red");
    const calls: [string | undefined, string | undefined][] = [];
    const teamOf = (row: unknown) => (row as Row | undefined)?.Meta?.team;
    // Wakes only when the row's team changes.
    const changes = (before: unknown, after: unknown) => {
      calls.push([teamOf(before), teamOf(after)]);
      return teamOf(before) !== teamOf(after);
    };
    const red = woken([{ table: "teams", index: "team", value: "red", changes }]);
    const blue = woken([{ table: "teams", index: "team", value: "blue", changes }]);
    await put("a", "red");
    expect([red.count, blue.count]).toEqual([0, 0]);
    await put("a", "blue");
    expect([red.count, blue.count]).toEqual([1, 1]);
    expect(calls).toEqual([
      ["red", "red"],
      ["red", "blue"],
      ["red", "blue"],
    ]);
  });

  it("arms a watcher again without waking it twice, and drops a due or queued wake when armed again", async () => {
    const { store, put, watches } = await setUp(Number.POSITIVE_INFINITY, 1);
    class Counting extends Watcher {
      count = 0;
      wake(): void {
        this.count++;
      }
    }
    const first = new Counting([{ table: "teams", key: "a" }]);
    watches.arm(first);
    watches.arm(first);
    await put("a", "red");
    expect(first.count).toBe(1);
    // Woken once per arming: not armed again, not woken again.
    await put("a", "red");
    expect(first.count).toBe(1);
    expect(watches.size.armed).toBe(0);

    // Queued behind another's wake (one per turn), then armed again: the
    // queued wake is dropped and the watcher waits for the next change.
    const ahead = new Counting([{ table: "teams", key: "b" }]);
    const queued = new Counting([{ table: "teams", key: "c" }]);
    watches.arm(ahead);
    watches.arm(queued);
    // A fresh turn's quota: one wake.
    for (let turn = 0; turn < 2; turn++) await nextTurn();
    const by = { kind: "server", id: "test" } as const;
    const ns = (Name: string) => ({ Name, Description: "", Quota: "", Meta: null, Capabilities: null });
    const { last } = await store.append(
      ["b", "c"].map((name) => ({
        type: "NamespaceUpserted" as const,
        v: 1,
        at: 1,
        by,
        data: { Namespace: ns(name) },
      })),
    );
    await store.waitFor(last);
    expect([ahead.count, queued.count]).toEqual([1, 0]);
    watches.arm(queued);
    for (let turn = 0; turn < 3; turn++) await nextTurn();
    expect(queued.count).toBe(0);
    await put("c", "red");
    for (let turn = 0; turn < 3; turn++) await nextTurn();
    expect(queued.count).toBe(1);

    // Matched mid-batch, then armed again before the batch ends: not woken by it.
    const due = new Counting([{ table: "teams", key: "d" }]);
    watches.arm(due);
    const sub = store.change$.subscribe(() => watches.arm(due));
    await put("d", "red");
    sub.unsubscribe();
    for (let turn = 0; turn < 3; turn++) await nextTurn();
    expect(due.count).toBe(0);
    expect(watches.size.armed).toBe(1);
    await put("d", "blue");
    expect(due.count).toBe(1);
    expect(watches.size.armed).toBe(0);
  });

  it("leaves nothing behind after 100,000 arm, wake and cancel cycles over changing keys", async () => {
    const { put, watches } = await setUp();
    const cancels: (() => void)[] = [];
    for (let i = 0; i < 100_000; i++) {
      // A key watch per cycle (rows come and go), a value watch, a table watch.
      const cancel = watches.once(
        [
          { table: "teams", key: `row-${i}` },
          { table: "teams", index: "team", value: `v-${i % 7}` },
          "other",
        ],
        () => {},
      );
      if (i % 3 === 0) cancel();
      else cancels.push(cancel);
      if (cancels.length >= 1_000) {
        for (const c of cancels.splice(0, 500)) c();
        // The others wake.
        await put(`row-${i}`, `v-${i % 7}`);
      }
    }
    for (const c of cancels) c();
    const { armed, buckets, emptyBuckets } = watches.size;
    expect(armed).toBe(0);
    // Empty buckets are kept until two sweeps found them empty: a few thousand, never 100,000.
    expect(emptyBuckets).toBeLessThan(12_000);
    expect(buckets).toBeLessThan(12_000);
  });
});
