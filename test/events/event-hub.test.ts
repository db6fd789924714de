import { pino } from "pino";
import type { Subscription } from "rxjs";
import { afterEach, describe, expect, it } from "vitest";
import type { Projections } from "../../projections/index.ts";
import { EnvelopeCodec } from "../../src/codec/envelope-codec.ts";
import { CursorError, EventHub } from "../../src/events/event-hub.ts";
import { changeEvents, type Frame } from "../../src/events/frames.ts";
import type { Change } from "../../src/store/projection.ts";
import type { Store } from "../../src/store/store.ts";
import type { Envelope } from "../../streams/event-schema.ts";
import { allSchemas } from "../../streams/index.ts";
import { FakeStore } from "./fake-store.ts";

const hubs: EventHub[] = [];
const subs: Subscription[] = [];
afterEach(() => {
  for (const s of subs.splice(0)) s.unsubscribe();
  for (const h of hubs.splice(0)) h.stop();
});

function hubOf(store: FakeStore, bufferEvents?: number): EventHub {
  const hub = new EventHub({
    store: store as unknown as Store,
    codec: new EnvelopeCodec(allSchemas),
    createProjections: () => ({ all: [] }) as unknown as Projections,
    logger: pino({ level: "silent" }),
    bufferEvents,
  });
  hubs.push(hub);
  return hub;
}

const envelope = (type: string, at: number): Envelope => ({
  type,
  v: 1,
  at,
  by: { kind: "token", id: "acc-1", name: "ops" },
  cause: { type: "EvaluationsUpserted", index: 3, evalId: "e1" },
  data: {},
});

const alloc = (id: string, status: string, node: string) => ({
  ID: id,
  Namespace: id.endsWith("0") ? "other" : "default",
  JobID: "web",
  DeploymentID: "",
  NodeID: node,
  ClientStatus: status,
  Job: { ID: "web", Big: "left out of payloads" },
});
const node = (id: string, n: number) => ({
  ID: id,
  Status: "ready",
  LastAllocUpdateIndex: n,
  SecretIDHash: "h",
});

/**
 * A varied history: placements, client updates that also stamp nodes, the
 * same object changed twice in one record, an object created and removed
 * by one record, deletes, records of tables not published, and records
 * that publish nothing (progress). `batches` batches of a few records each.
 */
function history(batches: number): ((store: FakeStore) => void)[] {
  const steps: ((store: FakeStore) => void)[] = [];
  let index = 10;
  for (let b = 0; b < batches; b++) {
    const records: Change[][] = [];
    for (let r = 0; r < 3; r++) {
      const i = ++index;
      const id = (k: number) => `a-${b}-${k}`;
      const rec: Change[] = [];
      const add = (table: string, key: string, before: unknown, after: unknown, type: string) =>
        rec.push({
          table,
          key,
          before,
          after,
          index: i,
          event: type,
          at: 1_700_000_000_000 + i * 7,
          envelope: envelope(type, 1_700_000_000_000 + i * 7),
        });
      if (r === 0) {
        const e = envelope("AllocsPlanApplied", 0);
        for (let k = 0; k < 4; k++) add("allocs", id(k), undefined, alloc(id(k), "pending", `n${k}`), e.type);
        add("job_summaries", "web", { a: 1 }, { a: 2 }, e.type);
        add(
          "evals",
          `e${b}`,
          undefined,
          { ID: `e${b}`, Namespace: "default", JobID: "web", Status: "complete" },
          e.type,
        );
        // Created and removed in one record: nothing to tell.
        add("evals", `gone${b}`, undefined, { ID: `gone${b}` }, e.type);
        add("evals", `gone${b}`, { ID: `gone${b}` }, undefined, e.type);
      } else if (r === 1) {
        for (let k = 0; k < 4; k++) {
          add(
            "allocs",
            id(k),
            alloc(id(k), "pending", `n${k}`),
            alloc(id(k), "running", `n${k}`),
            "AllocClientUpdated",
          );
          add("nodes", `n${k}`, node(`n${k}`, i - 1), node(`n${k}`, i), "AllocClientUpdated");
        }
        // The same object twice in one record.
        add(
          "allocs",
          id(0),
          alloc(id(0), "running", "n0"),
          alloc(id(0), "complete", "n0"),
          "AllocClientUpdated",
        );
      } else if (b % 2 === 0) {
        add("allocs", id(1), alloc(id(1), "running", "n1"), undefined, "GarbageCollected");
        add(
          "evals",
          `e${b}`,
          { ID: `e${b}`, Namespace: "default", JobID: "web" },
          undefined,
          "GarbageCollected",
        );
      } else {
        add("history", "h", undefined, { Key: "h" }, "AllocClientUpdated");
      }
      records.push(rec);
    }
    steps.push((store) => store.batch(records));
    if (b % 3 === 2) {
      index += 2;
      const to = index;
      steps.push((store) => store.progress(to));
    }
  }
  return steps;
}

/** What a subscriber sees of a frame, on both streams: the default one and the complete feed. */
const seen = (f: Frame) =>
  JSON.stringify({ Index: f.Index, Time: f.Time, Events: f.Events, Changes: changeEvents(f) });

function collect(hub: EventHub, after: number): string[] {
  const out: string[] = [];
  subs.push(hub.framesAfter(after).subscribe((f) => out.push(seen(f))));
  return out;
}

const settle = () => new Promise((r) => setImmediate(r));

describe("EventHub", () => {
  it("gives a subscriber that connects after batches with nobody listening the frames one connected throughout got", async () => {
    const steps = history(12);
    const first = new FakeStore();
    const always = collect(hubOf(first), 0);
    for (const s of steps) s(first);
    await settle();

    const second = new FakeStore();
    const hub = hubOf(second);
    for (const s of steps.slice(0, 7)) s(second);
    const late = collect(hub, 0);
    const fromMiddle = collect(hub, 25);
    await settle();
    for (const s of steps.slice(7)) s(second);
    await settle();

    expect(always.length).toBeGreaterThan(20);
    expect(late).toEqual(always);
    expect(fromMiddle).toEqual(always.filter((f) => JSON.parse(f).Index > 25));
    // Each frame once, in order.
    const indexes = late.map((f) => JSON.parse(f).Index as number);
    expect(indexes).toEqual([...indexes].sort((a, b) => a - b));
    expect(new Set(indexes).size).toBe(indexes.length);
  });

  it("serves the same frames to a subscriber reading the buffer again after live subscribers read them", async () => {
    const steps = history(6);
    const store = new FakeStore();
    const hub = hubOf(store);
    const first = collect(hub, 0);
    for (const s of steps) s(store);
    await settle();
    const again = collect(hub, 0);
    await settle();
    expect(again).toEqual(first);
  });

  it("keeps at least event_buffer_size changes, counted after merging, and serves older cursors from the log", async () => {
    const current = new FakeStore();
    const hub = hubOf(current, 10);
    const e = envelope("AllocClientUpdated", 1_700_000_000_000);
    const change = (i: number, k: number, status: string): Change => ({
      table: "allocs",
      key: `a${k}`,
      before: alloc(`a${k}`, "pending", "n"),
      after: alloc(`a${k}`, status, "n"),
      index: i,
      event: e.type,
      at: e.at,
      envelope: e,
    });
    // Index 1: 4 changes; 2: 3 changes of one object, merged into 1, plus 2;
    // 3: 3 changes; 4: 2 changes. 4 + 3 + 3 + 2 = 12 > 10: index 1 goes.
    current.batch([[change(1, 1, "a"), change(1, 2, "a"), change(1, 3, "a"), change(1, 4, "a")]]);
    current.batch([
      [change(2, 1, "a"), change(2, 1, "b"), change(2, 1, "c"), change(2, 2, "a"), change(2, 3, "a")],
    ]);
    current.batch([[change(3, 1, "a"), change(3, 2, "a"), change(3, 3, "a")]]);
    /** Whether frames after `after` come from the buffer: the log (which refuses here) is not asked. */
    const covered = async (after: number) => {
      let refused: unknown;
      const sub = hub.framesAfter(after).subscribe({ error: (err) => (refused = err) });
      await settle();
      sub.unsubscribe();
      if (refused !== undefined && !(refused instanceof CursorError)) throw refused;
      return refused === undefined;
    };
    expect(await covered(0)).toBe(true);
    current.batch([[change(4, 1, "a"), change(4, 2, "a")]]);
    expect(await covered(0)).toBe(false);
    expect(await covered(1)).toBe(true);
    // Progress frames count as one each: 8 + 2 = 10, then 11.
    for (let i = 5; i <= 6; i++) current.progress(i);
    expect(await covered(1)).toBe(true);
    current.progress(7);
    expect(await covered(1)).toBe(false);
    expect(await covered(2)).toBe(true);
  });
});
