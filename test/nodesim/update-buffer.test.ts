import { describe, expect, it } from "vitest";
import { AllocUpdateBuffer, Priority } from "../../src/nodesim/update-buffer.ts";

const u = (ID: string, v: number) => ({ ID, v });

describe("AllocUpdateBuffer (Nomad PR 17354's pendingClientUpdates)", () => {
  it("keeps only the latest update of each allocation", () => {
    const b = new AllocUpdateBuffer<{ ID: string; v: number }>();
    b.add(u("a", 1), Priority.Typical);
    b.add(u("b", 1), Priority.Typical);
    b.add(u("a", 2), Priority.Typical);
    b.add(u("a", 3), Priority.Typical);
    expect(b.size).toBe(2);
    expect(b.nextBatch(5, true)?.updates).toEqual([u("a", 3), u("b", 1)]);
    expect(b.size).toBe(0);
  });

  it("holds typical updates until every 5th tick, and sends an urgent one on the next tick", () => {
    const b = new AllocUpdateBuffer<{ ID: string; v: number }>();
    b.add(u("a", 1), Priority.Typical);
    for (const tick of [1, 2, 3, 4]) expect(b.nextBatch(tick, true)).toBeUndefined();
    expect(b.nextBatch(5, true)?.updates).toEqual([u("a", 1)]);

    b.add(u("a", 2), Priority.Typical);
    expect(b.nextBatch(1, true)).toBeUndefined();
    b.add(u("b", 1), Priority.Urgent);
    const batch = b.nextBatch(2, true);
    // The urgent update takes everything waiting with it.
    expect(batch).toEqual({ updates: [u("a", 2), u("b", 1)], priority: Priority.Urgent });
    expect(b.waitingPriority).toBe(Priority.None);
    expect(b.nextBatch(5, true)).toBeUndefined();
  });

  it("with the switch off, sends on every tick that has something waiting", () => {
    const b = new AllocUpdateBuffer<{ ID: string; v: number }>();
    expect(b.nextBatch(1, false)).toBeUndefined();
    b.add(u("a", 1), Priority.Typical);
    expect(b.nextBatch(1, false)?.updates).toEqual([u("a", 1)]);
    b.add(u("a", 2), Priority.Typical);
    expect(b.nextBatch(2, false)?.updates).toEqual([u("a", 2)]);
  });

  it("restores a batch the server refused, without overwriting newer updates", () => {
    const b = new AllocUpdateBuffer<{ ID: string; v: number }>();
    b.add(u("a", 1), Priority.Urgent);
    b.add(u("b", 1), Priority.Typical);
    const batch = b.nextBatch(1, true)!;
    b.add(u("a", 2), Priority.Typical);
    b.restore(batch);
    expect(b.waitingPriority).toBe(Priority.Urgent);
    expect(b.nextBatch(1, true)?.updates).toEqual([u("a", 2), u("b", 1)]);
  });
});
