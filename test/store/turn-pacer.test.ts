import { describe, expect, it } from "vitest";
import { TurnPacer } from "../../src/store/turn-pacer.ts";

const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

describe("TurnPacer", () => {
  it("runs calls at once while the turn's quota lasts, the rest on later turns, in order", async () => {
    const pacer = new TurnPacer(3);
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
    const pacer = new TurnPacer(2);
    const order: string[] = [];
    for (let i = 0; i < 6; i++) pacer.run(() => order.push(`call ${i}`));
    // Queued after the pacer's next turn, and before the one that turn opens
    // (a later iteration of the loop, past its timers and I/O).
    setImmediate(() => order.push("other"));
    while (pacer.waiting > 0) await nextTurn();
    expect(order).toEqual(["call 0", "call 1", "call 2", "call 3", "other", "call 4", "call 5"]);
  });

  it("queues a call behind those waiting even when a new turn has quota, and resets the quota every turn", async () => {
    const pacer = new TurnPacer(2);
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
  });
});
