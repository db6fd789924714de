import { describe, expect, it } from "vitest";
import { PlanQueue } from "../../../src/services/scheduler/plan-queue.ts";
import { Utilization } from "../../../src/services/scheduler/utilization.ts";
import type { Outcome } from "../../../src/store/projection.ts";
import type { Draft, Writable, Written } from "../../../src/store/writer.ts";

const draft = (name: string): Draft => ({ type: "NamespaceDeleted", v: 1, data: { Name: name } });
const names = (drafts: readonly Writable[]) =>
  drafts.map((d) => ((d as Draft).data as { Name: string }).Name);

/** A log that records each append and lets the test decide when it is applied. */
class FakeLog {
  readonly appends: string[][] = [];
  private next = 1;
  private readonly pending: (() => void)[] = [];
  fail: Error | undefined;

  write = (drafts: readonly Writable[]): Promise<Written> => {
    this.appends.push(names(drafts));
    const first = this.next;
    this.next += drafts.length;
    return new Promise((resolve, reject) => {
      this.pending.push(() => {
        if (this.fail) return reject(this.fail);
        const outcomes: Outcome[] = drafts.map((d, i) =>
          names([d])[0]!.startsWith("bad")
            ? { index: first + i, status: "rejected", code: 409, reason: "no" }
            : { index: first + i, status: "applied" },
        );
        resolve({ index: first + drafts.length - 1, outcomes });
      });
    });
  };

  /** Applies every append made so far. */
  applyAll(): void {
    for (const apply of this.pending.splice(0)) apply();
  }
}

const turn = () => new Promise((r) => setImmediate(r));

describe("the plan queue", () => {
  it("puts what is submitted in one turn into one append, each submission keeping its own outcomes", async () => {
    const log = new FakeLog();
    const q = new PlanQueue(log.write);
    const a = q.submit([draft("a1"), draft("a2")]);
    const b = q.submit([draft("bad-b")]);
    const c = q.submit([draft("c")]);
    await turn();
    expect(log.appends).toEqual([["a1", "a2", "bad-b", "c"]]);
    expect(q.stats()).toMatchObject({ depth: 0, inFlight: 3 });
    log.applyAll();
    expect(await a).toEqual({
      index: 2,
      outcomes: [
        { index: 1, status: "applied" },
        { index: 2, status: "applied" },
      ],
    });
    expect(await b).toEqual({
      index: 3,
      outcomes: [{ index: 3, status: "rejected", code: 409, reason: "no" }],
    });
    expect((await c).index).toBe(4);
    expect(q.stats()).toMatchObject({ appends: 1, records: 4, submissions: 3 });
  });

  it("holds what arrives during an append for the next one, which starts once that one is applied", async () => {
    const log = new FakeLog();
    const q = new PlanQueue(log.write);
    const first = q.submit([draft("p1")]);
    await turn();
    const later = [q.submit([draft("p2")]), q.submit([draft("p3")])];
    await turn();
    expect(log.appends).toEqual([["p1"]]);
    expect(q.stats()).toMatchObject({ depth: 2, inFlight: 1 });
    log.applyAll();
    await first;
    await turn();
    expect(log.appends).toEqual([["p1"], ["p2", "p3"]]);
    log.applyAll();
    expect((await Promise.all(later)).map((w) => w.index)).toEqual([2, 3]);
  });

  it("with two appends allowed, sends what arrives during an append at once, and holds the rest for a free one", async () => {
    const log = new FakeLog();
    const q = new PlanQueue(log.write, { maxAppends: 2 });
    const first = q.submit([draft("p1")]);
    await turn();
    const second = [q.submit([draft("p2")]), q.submit([draft("p3")])];
    await turn();
    // The second append is in the log's queue behind the first, in order.
    expect(log.appends).toEqual([["p1"], ["p2", "p3"]]);
    const third = q.submit([draft("p4")]);
    await turn();
    expect(log.appends).toHaveLength(2);
    expect(q.stats()).toMatchObject({ depth: 1, inFlight: 3 });
    log.applyAll();
    expect((await first).index).toBe(1);
    expect((await Promise.all(second)).map((w) => w.index)).toEqual([2, 3]);
    await turn();
    expect(log.appends).toEqual([["p1"], ["p2", "p3"], ["p4"]]);
    log.applyAll();
    expect((await third).index).toBe(4);
    expect(q.stats()).toMatchObject({ depth: 0, inFlight: 0, appends: 3, submissions: 4 });
  });

  it("splits batches at the record limit without splitting a submission", async () => {
    const log = new FakeLog();
    const q = new PlanQueue(log.write, { maxRecords: 3 });
    const all = [
      q.submit([draft("a"), draft("b")]),
      q.submit([draft("c"), draft("d")]),
      q.submit([draft("e")]),
      q.submit([draft("f"), draft("g"), draft("h"), draft("i")]),
    ];
    let done = false;
    const settled = Promise.all(all).finally(() => {
      done = true;
    });
    while (!done) {
      await turn();
      log.applyAll();
    }
    await settled;
    expect(log.appends).toEqual([
      ["a", "b"],
      ["c", "d", "e"],
      ["f", "g", "h", "i"],
    ]);
  });

  it("does not batch large plans into one long apply", async () => {
    const log = new FakeLog();
    const plan = (name: string, placements: number): Draft => ({
      type: "AllocsPlanApplied",
      v: 1,
      data: {
        EvalID: name,
        Placed: [],
        Updated: [],
        Stopped: [],
        Preempted: [],
        Placements: Array.from({ length: placements }, (_, i) => ({ ID: `${name}-${i}` })),
      },
    });
    const evalIDs = (drafts: readonly Writable[]) =>
      drafts.map((d) => ((d as Draft).data as { EvalID: string }).EvalID);
    const appended: string[][] = [];
    const q = new PlanQueue(
      (drafts) => {
        appended.push(evalIDs(drafts));
        return log.write(drafts.map(() => draft("p")));
      },
      { maxAllocs: 2_000 },
    );
    const all = [q.submit([plan("a", 1_500)]), q.submit([plan("b", 400)]), q.submit([plan("c", 3_000)])];
    let done = false;
    const settled = Promise.all(all).finally(() => {
      done = true;
    });
    while (!done) {
      await turn();
      log.applyAll();
    }
    await settled;
    expect(appended).toEqual([["a", "b"], ["c"]]);
  });

  it("fails the submissions of a failed append, and goes on with the next", async () => {
    const log = new FakeLog();
    const q = new PlanQueue(log.write);
    const doomed = q.submit([draft("x")]);
    await turn();
    const next = q.submit([draft("y")]);
    log.fail = new Error("log closed");
    log.applyAll();
    await expect(doomed).rejects.toThrow("log closed");
    log.fail = undefined;
    await turn();
    log.applyAll();
    expect((await next).outcomes).toEqual([{ index: 2, status: "applied" }]);
  });
});

describe("worker utilization", () => {
  it("is the busy share of the holders over the last window", () => {
    let now = 0;
    const u = new Utilization(10_000, () => now);
    expect(u.fraction(2)).toBe(0);
    u.begin("w1");
    now = 4_000;
    expect(u.busy).toBe(1);
    expect(u.fraction(2)).toBeCloseTo(0.5);
    u.end("w1");
    now = 8_000;
    expect(u.fraction(2)).toBeCloseTo(0.25);
    // Long after: the window holds no busy time any more.
    now = 60_000;
    u.fraction(2);
    now = 61_000;
    expect(u.fraction(2)).toBe(0);
  });
});
