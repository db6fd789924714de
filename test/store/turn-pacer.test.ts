import { describe, expect, it } from "vitest";
import { LoopTurn } from "../../src/store/loop-turn.ts";
import { TurnPacer } from "../../src/store/turn-pacer.ts";

const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));
/** Paced by count or by its own budget only: the shared allowance (loop-turn.test.ts) would cut turns short on a loaded machine. */
const unlimited = () => new LoopTurn(Number.POSITIVE_INFINITY);

describe("TurnPacer", () => {
  it("runs calls at once while the turn's quota lasts, the rest on later turns, in order", async () => {
    const pacer = new TurnPacer(3, undefined, undefined, unlimited());
    const ran: number[] = [];
    for (let i = 0; i < 8; i++) pacer.run(() => ran.push(i));
    expect(ran).toEqual([0, 1, 2]);
    expect(pacer.waiting).toBe(5);
    await nextTurn();
    expect(ran).toEqual([0, 1, 2, 3, 4, 5]);
    await nextTurn();
    expect(ran).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    expect(pacer.waiting).toBe(0);
  });

  it("leaves the rest of the loop's callbacks their turn between two turns' calls", async () => {
    const pacer = new TurnPacer(2, undefined, undefined, unlimited());
    const order: string[] = [];
    for (let i = 0; i < 6; i++) pacer.run(() => order.push(`call ${i}`));
    // Queued after the pacer's next turn, and before the one that turn opens
    // (a later iteration of the loop, past its timers and I/O).
    setImmediate(() => order.push("other"));
    while (pacer.waiting > 0) await nextTurn();
    expect(order).toEqual(["call 0", "call 1", "call 2", "call 3", "other", "call 4", "call 5"]);
  });

  it("queues a call behind those waiting even when a new turn has quota, and resets the quota every turn", async () => {
    const pacer = new TurnPacer(2, undefined, undefined, unlimited());
    const ran: string[] = [];
    for (const x of ["a", "b", "c"]) pacer.run(() => ran.push(x));
    await nextTurn();
    // The turn ran "c" and has one call of quota left: "d" runs at once, after "c".
    pacer.run(() => ran.push("d"));
    expect(ran).toEqual(["a", "b", "c", "d"]);
    pacer.run(() => ran.push("e"));
    expect(ran).toEqual(["a", "b", "c", "d"]);
    await nextTurn();
    expect(ran).toEqual(["a", "b", "c", "d", "e"]);
    // A quiet loop: a later call runs at once again.
    await nextTurn();
    await nextTurn();
    pacer.run(() => ran.push("f"));
    expect(ran.at(-1)).toBe("f");
  });

  it("refuses a quota below one", () => {
    expect(() => new TurnPacer(0)).toThrow(/at least 1/);
    expect(() => new TurnPacer(1, undefined, { ms: 5, minPerTurn: 0, maxPerTurn: 4 })).toThrow(/budget/);
  });
});

describe("TurnPacer with a time budget", () => {
  const busy = (ms: number) => {
    const until = performance.now() + ms;
    while (performance.now() < until);
  };

  it("sets the quota from what a busy turn's calls cost, the work they released included", async () => {
    const pacer = new TurnPacer(4, undefined, { ms: 10, minPerTurn: 1, maxPerTurn: 100 }, unlimited());
    // Each call only resolves a promise; its 2 ms of work runs as a microtask after it.
    for (let i = 0; i < 20; i++) pacer.run(() => void Promise.resolve().then(() => busy(2)));
    expect(pacer.perTurn).toBe(4);
    await nextTurn();
    await nextTurn();
    // 4 calls ran in the turn at about 2 ms each: 10 ms fit 4 or 5 (a slow
    // machine makes them dearer, never cheaper).
    expect(pacer.perTurn).toBeGreaterThanOrEqual(1);
    expect(pacer.perTurn).toBeLessThanOrEqual(5);
  });

  it("raises the quota for cheap calls, within its bounds", async () => {
    const pacer = new TurnPacer(2, undefined, { ms: 10, minPerTurn: 2, maxPerTurn: 50 }, unlimited());
    for (let i = 0; i < 200; i++) pacer.run(() => {});
    await nextTurn();
    await nextTurn();
    expect(pacer.perTurn).toBe(50);
    const slow = new TurnPacer(8, undefined, { ms: 1, minPerTurn: 3, maxPerTurn: 50 }, unlimited());
    for (let i = 0; i < 40; i++) slow.run(() => busy(2));
    await nextTurn();
    await nextTurn();
    expect(slow.perTurn).toBe(3);
  });
});
