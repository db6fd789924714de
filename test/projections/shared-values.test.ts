import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { AllocRow } from "../../projections/allocs.ts";
import { shareEqual } from "../../projections/shared-values.ts";
import { packPlain, unpackPlain } from "../../src/codec/envelope-codec.ts";
import type { Draft } from "../../src/store/writer.ts";
import { AT, alloc, memoryStore, placed, registered, statusChange } from "./memory-store.ts";

/** A fresh decoded copy, as a record's data reaches the projections. */
const decoded = <T>(v: T): T => unpackPlain(packPlain(v)) as T;

const ev = (i: number) => ({
  Type: `T${i}`,
  Time: (AT + i) * 1e6,
  DisplayMessage: `event ${i}`,
  Details: {},
});
const state = (n: number) => ({
  app: {
    State: "running",
    Failed: false,
    Events: Array.from({ length: n }, (_, i) => ev(i)),
    TaskHandle: null,
  },
});

describe("shareEqual", () => {
  it("gives the stored value itself when the reported one is equal", () => {
    const stored = decoded(state(3));
    expect(shareEqual(stored, decoded(state(3)))).toBe(stored);
  });

  it("keeps the stored events a longer list repeats, and the reported new ones", () => {
    const stored = decoded(state(2));
    const reported = decoded(state(4));
    const fresh = reported.app.Events[3];
    const out = shareEqual(stored, reported);
    expect(out).toEqual(state(4));
    expect(out).not.toBe(stored);
    expect(out.app.Events[0]).toBe(stored.app.Events[0]);
    expect(out.app.Events[1]).toBe(stored.app.Events[1]);
    expect(out.app.Events[3]).toBe(fresh);
    expect(packPlain(out)).toEqual(packPlain(state(4)));
  });

  it("does not give an equal object whose keys come in another order", () => {
    const stored = { a: 1, b: { c: 2 } };
    const reported = { b: { c: 2 }, a: 1 };
    const out = shareEqual(stored, reported);
    expect(out).toBe(reported);
    expect(out.b).toBe(stored.b);
    expect(JSON.stringify(out)).toBe('{"b":{"c":2},"a":1}');
  });

  it("tells 0 from -0, and leaves a frozen value as it was", () => {
    expect(Object.is(shareEqual({ x: 0 }, { x: -0 }).x, -0)).toBe(true);
    const stored = { e: [{ a: 1 }] };
    const reported = Object.freeze({ e: Object.freeze([Object.freeze({ a: 1 })]) });
    expect(shareEqual(stored, reported)).toBe(stored);
    const longer = Object.freeze({ e: Object.freeze([Object.freeze({ a: 1 }), 2]) });
    expect(shareEqual(stored, longer)).toBe(longer);
    expect(longer.e[0]).not.toBe(stored.e[0]);
  });

  it("gives the reported value's bytes whatever the two values are", () => {
    const plain = fc.letrec((tie) => ({
      value: fc.oneof(
        { depthSize: "small" },
        fc.constantFrom(0, -0, 1, 2.5, "", "a", "b", null, true, false),
        fc.array(tie("value"), { maxLength: 4 }),
        fc.dictionary(fc.constantFrom("a", "b", "c", "d"), tie("value"), { maxKeys: 4 }),
      ),
    })).value;
    fc.assert(
      fc.property(plain, plain, (stored, reported) => {
        const bytes = packPlain(reported);
        const storedBytes = packPlain(stored);
        const out = shareEqual(decoded(stored), decoded(reported));
        expect(packPlain(out)).toEqual(bytes);
        expect(JSON.stringify(out)).toBe(JSON.stringify(reported));
        // Equal values give the stored one.
        if (Buffer.from(bytes).equals(Buffer.from(storedBytes))) {
          const s = decoded(stored);
          expect(shareEqual(s, decoded(reported))).toBe(s);
        }
      }),
      { numRuns: 2000 },
    );
  });
});

const update = (events: number): Draft => ({
  type: "AllocClientUpdated",
  v: 1,
  data: {
    Allocs: [
      {
        ID: "a1",
        NodeID: "n1",
        ClientStatus: "running",
        ClientDescription: "Tasks are running",
        TaskStates: state(events),
        DeploymentStatus: null,
        NetworkStatus: null,
        ModifyTime: AT * 1e6,
      },
    ],
  },
});

describe("allocs: a client update repeating the stored task states", () => {
  it("keeps the stored events and states in the new row", async () => {
    const m = await memoryStore();
    await m.write(registered("n1"), statusChange("n1", "initializing", "ready"), placed(alloc("a1", "n1")));
    const allocs = m.store.table<AllocRow>("allocs");
    await m.write(update(2));
    const first = allocs.get("a1")!;
    await m.write(update(3));
    const second = allocs.get("a1")!;
    const events = (row: AllocRow) =>
      (row.TaskStates!.app as unknown as ReturnType<typeof state>["app"]).Events;
    expect(events(second)).toHaveLength(3);
    expect(events(second)[0]).toBe(events(first)[0]);
    expect(events(second)[1]).toBe(events(first)[1]);
    expect(events(second)).toEqual(state(3).app.Events);
    await m.write(update(3));
    const third = allocs.get("a1")!;
    expect(third).not.toBe(second);
    expect(third.TaskStates).toBe(second.TaskStates);
  });
});
