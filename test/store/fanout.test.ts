import { filter } from "rxjs";
import { describe, expect, it } from "vitest";
import { Fanout } from "../../src/store/fanout.ts";

describe("Fanout (the store's change$)", () => {
  it("calls subscribers in subscription order, through operators too, and says whether any is there", () => {
    const f = new Fanout<number>();
    expect(f.observed).toBe(false);
    const seen: string[] = [];
    const a = f.observable.subscribe((v) => seen.push(`a${v}`));
    f.observable.pipe(filter((v) => v > 1)).subscribe((v) => seen.push(`b${v}`));
    expect(f.observed).toBe(true);
    f.next(1);
    f.next(2);
    a.unsubscribe();
    f.next(3);
    expect(seen).toEqual(["a1", "a2", "b2", "b3"]);
  });

  it("calls the subscribers present when a call began: none added during it, and one removed during it as a Subject does", () => {
    const f = new Fanout<number>();
    const seen: string[] = [];
    let late = false;
    f.observable.subscribe((v) => {
      seen.push(`first${v}`);
      if (!late) f.observable.subscribe((w) => seen.push(`late${w}`));
      late = true;
      if (v === 2) second.unsubscribe();
    });
    const second = f.observable.subscribe((v) => seen.push(`second${v}`));
    f.next(1);
    f.next(2);
    f.next(3);
    // A Subject's subscriber unsubscribed during a call is stopped: it sees nothing more.
    expect(seen).toEqual(["first1", "second1", "first2", "late2", "first3", "late3"]);
  });

  it("gives an error to every subscriber, present and future, and ignores values after it", () => {
    const f = new Fanout<number>();
    const errors: unknown[] = [];
    const values: number[] = [];
    f.observable.subscribe({ next: (v) => values.push(v), error: (e) => errors.push(e) });
    const boom = new Error("boom");
    f.error(boom);
    f.next(1);
    f.observable.subscribe({ next: (v) => values.push(v), error: (e) => errors.push(e) });
    expect(errors).toEqual([boom, boom]);
    expect(values).toEqual([]);
    expect(f.observed).toBe(false);
  });
});
