import { readFile } from "node:fs/promises";
import { describe, expect, it, vi } from "vitest";
import { LOOP_TURN_MS, LoopTurn, loopTurn } from "../../src/store/loop-turn.ts";
import type { Projection } from "../../src/store/projection.ts";
import { APPLY_SLICE_MS } from "../../src/store/store.ts";
import { TurnPacer } from "../../src/store/turn-pacer.ts";
import { memoryStore } from "./helpers.ts";

const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

const busy = (ms: number) => {
  const until = performance.now() + ms;
  while (performance.now() < until);
};

describe("LoopTurn", () => {
  it("counts one iteration from the first step that asks to the check phase after it", async () => {
    const turn = new LoopTurn(10);
    const seen: [string, number][] = [];
    // Each as a paced step's turn would.
    const ask = (name: string) => {
      turn.enterTurn();
      seen.push([name, turn.iterations]);
    };
    // Three immediates of one check phase: the first opens the iteration,
    // the others are in it; what they queue runs in the next one.
    setImmediate(() => {
      ask("a");
      setImmediate(() => ask("a, next"));
    });
    setImmediate(() => {
      ask("b");
      setImmediate(() => ask("b, next"));
    });
    setImmediate(() => ask("c"));
    await nextTurn();
    await nextTurn();
    expect(seen).toEqual([
      ["a", 1],
      ["b", 1],
      ["c", 1],
      ["a, next", 2],
      ["b, next", 2],
    ]);

    // Opened in the poll phase (an I/O callback): the check phase right
    // after is the same iteration, the one after that a new one.
    const inPoll = await new Promise<number[]>((resolve) => {
      void readFile(import.meta.filename).then(() => {
        turn.remaining();
        const got = [turn.iterations];
        setImmediate(() => {
          turn.enterTurn();
          got.push(turn.iterations);
          setImmediate(() => {
            turn.enterTurn();
            resolve([...got, turn.iterations]);
          });
        });
      });
    });
    expect(inPoll[1]).toBe(inPoll[0]);
    expect(inPoll[2]).toBe(inPoll[0]! + 1);
  });

  it("gives each iteration its allowance, less what a step reserved for it until that step claims it", async () => {
    let now = 0;
    const turn = new LoopTurn(10, () => now);
    // The test's steps run as a pacer's turns would, after each immediate.
    const step = async () => {
      await nextTurn();
      turn.enterTurn();
    };
    await step();
    expect(turn.remaining()).toBe(10);
    now = 4;
    expect(turn.remaining()).toBe(6);
    turn.reserveNext(5);
    // The reservation is for the next iteration, not this one.
    expect(turn.remaining()).toBe(6);
    await step();
    expect(turn.remaining()).toBe(5);
    now = 7;
    turn.claim();
    // Claimed: the reserving step's time counts as the clock goes.
    expect(turn.remaining()).toBe(7);
    // A reservation lapses with its iteration: nothing kept in the one after.
    turn.reserveNext(5);
    await step();
    expect(turn.remaining()).toBe(5);
    await step();
    expect(turn.remaining()).toBe(10);
  });

  it("holds calls made at once to the allowance only once some step left work for later", async () => {
    let now = 0;
    const turn = new LoopTurn(10, () => now);
    const pacer = new TurnPacer(100, undefined, undefined, turn);
    const ran: number[] = [];
    await nextTurn();
    turn.enterTurn();
    // Quiet: past the allowance (a long task, a wait for a core), still at once.
    now = 50;
    for (let i = 0; i < 3; i++) pacer.run(() => ran.push(i));
    expect(ran).toEqual([0, 1, 2]);
    await nextTurn();
    await nextTurn();
    // Another step left work for later: beyond its least (one call), the
    // pacer's calls wait for the next iteration once the allowance is spent.
    turn.enterTurn();
    turn.deferred();
    pacer.run(() => ran.push(3));
    now = 61;
    pacer.run(() => ran.push(4));
    pacer.run(() => ran.push(5));
    expect(ran).toEqual([0, 1, 2, 3]);
    expect(pacer.waiting).toBe(2);
    await nextTurn();
    await nextTurn();
    expect(ran).toEqual([0, 1, 2, 3, 4, 5]);
  });

  it("refuses an allowance that is not positive", () => {
    expect(() => new LoopTurn(0)).toThrow(/positive/);
  });
});

/**
 * A store applying records of 0.5 ms each, and two pacers releasing calls
 * whose 0.5 ms of work runs as microtasks (the watches' wakes and admitted
 * requests), all with a backlog: a monitor immediate that queues itself
 * again runs once per iteration of the loop, so the time between two of
 * its runs is the iteration's length.
 */
async function allPacersBusy(applyFirst: boolean) {
  const handles = new Set(["NamespaceUpserted"]);
  let applied = 0;
  /** How long each apply slice held the loop (wall time: a wait for a core does not cut it short). */
  const slices: number[] = [];
  const slice = { begun: 0, end: Number.NEGATIVE_INFINITY };
  const projection: Projection = {
    name: "busy",
    version: 1,
    tables: [],
    handles,
    evolve() {
      const at = performance.now();
      busy(0.5);
      applied++;
      const end = performance.now();
      // Records applied back to back are one slice.
      if (at - slice.end > 0.1) slices.push(0);
      slice.begun = at - slice.end > 0.1 ? at : slice.begun;
      slice.end = end;
      slices[slices.length - 1] = end - slice.begun;
    },
  };
  const store = await memoryStore([projection]);
  const wakes = new TurnPacer(32);
  const requests = new TurnPacer(32, undefined, { ms: 8, minPerTurn: 4, maxPerTurn: 1024 });
  let woken = 0;
  let admitted = 0;
  const work = (count: () => void) => () =>
    void Promise.resolve().then(() => {
      busy(0.5);
      count();
    });

  const by = { kind: "server", id: "test" } as const;
  const events = Array.from({ length: 600 }, (_, i) => ({
    type: "NamespaceUpserted" as const,
    v: 1,
    at: 1,
    by,
    data: { Namespace: { Name: `ns-${i}`, Description: "", Quota: "", Meta: null, Capabilities: null } },
  }));
  let written = applyFirst ? store.append(events) : undefined;
  // Warm-up iterations: the pacers measure what a call costs.
  for (let i = 0; i < 40; i++) wakes.run(work(() => woken++));
  for (let i = 0; i < 40; i++) requests.run(work(() => admitted++));
  for (let i = 0; i < 4; i++) await nextTurn();
  for (let i = 0; i < 600; i++) wakes.run(work(() => woken++));
  for (let i = 0; i < 600; i++) requests.run(work(() => admitted++));
  // Appended now, the apply slices are queued behind the pacers' turns.
  written ??= store.append(events);

  const iterations: { ms: number; applied: number; woken: number; admitted: number }[] = [];
  await new Promise<void>((resolve) => {
    let last = { at: performance.now(), applied, woken, admitted };
    const monitor = () => {
      const at = performance.now();
      iterations.push({
        ms: at - last.at,
        applied: applied - last.applied,
        woken: woken - last.woken,
        admitted: admitted - last.admitted,
      });
      last = { at, applied, woken, admitted };
      // While all three have a backlog.
      if (applied < events.length && wakes.waiting > 0 && requests.waiting > 0) setImmediate(monitor);
      else resolve();
    };
    setImmediate(monitor);
  });
  const { last } = await written;
  await store.waitFor(last);
  while (wakes.waiting > 0 || requests.waiting > 0) await nextTurn();
  await store.stop();
  // The first interval began mid-iteration; the last slice ran out of records.
  return { iterations: iterations.slice(1, -1), slices: slices.slice(0, -1) };
}

describe("the paced steps of one loop iteration", () => {
  it.each([
    ["the apply slice first", true],
    ["the pacers' turns first", false],
  ])(
    "hold the loop for about one allowance in all, each making progress, the apply slice whole (%s)",
    async (_, applyFirst) => {
      const { iterations, slices } = await allPacersBusy(applyFirst);
      if (process.env.LOOP_TURN_DEBUG) console.log(JSON.stringify(iterations));
      expect(iterations.length).toBeGreaterThan(5);
      // What the steps did in each iteration, from their work's 0.5 ms each
      // (busy waits: a wait for a core shortens them, never stretches them).
      const work = iterations.map((i) => (i.applied + i.woken + i.admitted) * 0.5).sort((a, b) => a - b);
      const median = work[Math.floor(work.length / 2)]!;
      // Apart, their budgets stacked: an apply slice, 32 wakes (16 ms), 8 ms of
      // requests, 29 ms an iteration. Shared: the allowance, plus the record
      // and the calls past it that each step runs to make progress (one wake,
      // four requests).
      expect(median).toBeLessThanOrEqual(LOOP_TURN_MS + 3);
      for (const i of iterations) {
        expect(i.applied).toBeGreaterThanOrEqual(1);
        expect(i.woken).toBeGreaterThanOrEqual(1);
        expect(i.admitted).toBeGreaterThanOrEqual(4);
      }
      // The apply slice (APPLY_SLICE_MS) is not cut short by the others.
      slices.sort((a, b) => a - b);
      expect(slices[Math.floor(slices.length / 2)]).toBeGreaterThanOrEqual(APPLY_SLICE_MS - 0.5);
    },
  );

  it("keep the next iteration's apply slice for the store while it has a backlog", async () => {
    const reserve = vi.spyOn(loopTurn, "reserveNext");
    const claim = vi.spyOn(loopTurn, "claim");
    try {
      const projection: Projection = {
        name: "busy",
        version: 1,
        tables: [],
        handles: new Set(["NamespaceUpserted"]),
        evolve: () => busy(0.5),
      };
      const store = await memoryStore([projection], { applySliceMs: 2 });
      const by = { kind: "server", id: "test" } as const;
      const events = Array.from({ length: 20 }, (_, i) => ({
        type: "NamespaceUpserted" as const,
        v: 1,
        at: 1,
        by,
        data: { Namespace: { Name: `ns-${i}`, Description: "", Quota: "", Meta: null, Capabilities: null } },
      }));
      const { last } = await store.append(events);
      await store.waitFor(last);
      await store.stop();
      // 10 ms of records in slices of 2 ms: each slice but the last keeps
      // the next iteration's 2 ms, and every slice claims what was kept.
      expect(reserve.mock.calls.length).toBeGreaterThanOrEqual(3);
      for (const [ms] of reserve.mock.calls) expect(ms).toBe(2);
      expect(claim.mock.calls.length).toBe(reserve.mock.calls.length + 1);
    } finally {
      reserve.mockRestore();
      claim.mockRestore();
    }
  });

  it("leave a quiet loop alone: calls run at once", () => {
    const turn = new LoopTurn(10);
    const pacer = new TurnPacer(1000, undefined, undefined, turn);
    let ran = 0;
    for (let i = 0; i < 500; i++) pacer.run(() => ran++);
    expect(ran).toBe(500);
    expect(turn.remaining()).toBeGreaterThan(0);
  });
});
