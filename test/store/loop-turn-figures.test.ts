import { mkdtemp, rm } from "node:fs/promises";
import type { IncomingMessage, ServerResponse } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { monitorEventLoopDelay } from "node:perf_hooks";
import { pino } from "pino";
import { describe, expect, it } from "vitest";
import type { HistoryEntry } from "../../projections/history.ts";
import { RequestAdmission } from "../../src/api/request-admission.ts";
import { HistoryFile } from "../../src/history/history-file.ts";
import type { Projection } from "../../src/store/projection.ts";
import { TurnPacer } from "../../src/store/turn-pacer.ts";
import { memoryStore } from "./helpers.ts";

/**
 * The figures docs/architecture.md ("Long turns: the work, or the wait for
 * a core") quotes for one loop iteration's paced steps: every pacer of the
 * main thread with a backlog at once, at a placement burst's costs (busy
 * waits, so a wait for a core shortens the work and never stretches it):
 * the store's apply (records of 0.4 ms), the watches' wakes and the client
 * update window's answers (calls whose 150 and 100 µs of work run as
 * microtasks), admitted requests (250 µs, as microtasks) and the history
 * file's encoding (its chunks). Measured while all of them still have a
 * backlog: every iteration's length (an immediate that queues itself again
 * runs once an iteration), the loop's delay (perf_hooks, 1 ms resolution),
 * and what each step got through. It imports nothing new, so the same file
 * runs against the code before the shared allowance. On demand only:
 * CHRONOMAD_LOOP_TURN_FIGURES=1 npx vitest run test/store/loop-turn-figures.test.ts
 */
const enabled = process.env.CHRONOMAD_LOOP_TURN_FIGURES === "1";
if (!enabled) console.warn("loop turn figures skipped: set CHRONOMAD_LOOP_TURN_FIGURES=1 to take them");

const busy = (ms: number) => {
  const until = performance.now() + ms;
  while (performance.now() < until);
};
const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

const RECORDS = 4_000;
const WAKES = 8_000;
const ANSWERS = 8_000;
const REQUESTS = 6_000;
const CHUNKS = 400_000;

function entry(index: number): HistoryEntry {
  return {
    Index: index,
    Time: new Date(1_763_800_000_000 + index).toISOString(),
    Field: "ClientStatus",
    From: "pending",
    To: "running",
    Cause: { Event: "AllocClientUpdated" },
    Actor: { kind: "node", id: "n1" },
  };
}

const quantile = (sorted: readonly number[], q: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;

describe.skipIf(!enabled)("loop turn figures", () => {
  it("measures one iteration's paced work with every pacer behind", async () => {
    const dir = await mkdtemp(join(tmpdir(), "chronomad-loop-turn-"));
    const done = { applied: 0, woken: 0, answered: 0, admitted: 0 };
    const projection: Projection = {
      name: "busy",
      version: 1,
      tables: [],
      handles: new Set(["NamespaceUpserted"]),
      evolve() {
        busy(0.4);
        done.applied++;
      },
    };
    const store = await memoryStore([projection]);
    const { file: history } = await HistoryFile.open(dir, pino({ level: "silent" }));
    const wakes = new TurnPacer();
    const answers = new TurnPacer();
    const admission = new RequestAdmission(() => {
      void Promise.resolve().then(() => {
        busy(0.25);
        done.admitted++;
      });
    });
    const later = (ms: number, count: () => void) => () =>
      void Promise.resolve().then(() => {
        busy(ms);
        count();
      });
    const request = { req: { url: "/v1/rpc/Alloc.GetAllocs" } } as unknown as ServerResponse;

    const by = { kind: "server", id: "figures" } as const;
    const events = Array.from({ length: RECORDS }, (_, i) => ({
      type: "NamespaceUpserted" as const,
      v: 1,
      at: 1,
      by,
      data: { Namespace: { Name: `ns-${i}`, Description: "", Quota: "", Meta: null, Capabilities: null } },
    }));
    // Warm-up: each step runs, and the pacers measure their calls.
    for (let i = 0; i < 200; i++) {
      wakes.run(later(0.15, () => done.woken++));
      answers.run(later(0.1, () => done.answered++));
      admission.admit(request.req as IncomingMessage, request);
    }
    for (let i = 0; i < 10; i++) await nextTurn();

    const delay = monitorEventLoopDelay({ resolution: 1 });
    const written = store.append(events);
    for (let i = 0; i < WAKES; i++) wakes.run(later(0.15, () => done.woken++));
    for (let i = 0; i < ANSWERS; i++) answers.run(later(0.1, () => done.answered++));
    for (let i = 0; i < REQUESTS; i++) admission.admit(request.req as IncomingMessage, request);
    for (let i = 1; i <= CHUNKS; i++) history.append(`alloc\u0000${i % 5_000}`, i, [entry(i)]);
    const start = { ...done };
    const began = performance.now();
    delay.enable();
    const lengths: number[] = [];
    await new Promise<void>((resolve) => {
      let last = performance.now();
      const monitor = () => {
        const at = performance.now();
        lengths.push(at - last);
        last = at;
        if (done.applied < RECORDS && wakes.waiting > 0 && answers.waiting > 0 && admission.waiting > 0)
          setImmediate(monitor);
        else resolve();
      };
      setImmediate(monitor);
    });
    delay.disable();
    const seconds = (performance.now() - began) / 1000;
    const rates = Object.fromEntries(
      Object.entries(done).map(([k, v]) => [k, Math.round((v - start[k as keyof typeof done]) / seconds)]),
    );
    const { last } = await written;
    await store.waitFor(last);
    while (wakes.waiting > 0 || answers.waiting > 0 || admission.waiting > 0) await nextTurn();
    await history.close();
    await store.stop();
    await rm(dir, { recursive: true, force: true });

    const sorted = lengths.slice(1).sort((a, b) => a - b);
    const ms = (x: number) => Math.round(x * 10) / 10;
    console.log(
      JSON.stringify({
        seconds: ms(seconds),
        iterations: sorted.length,
        iteration_ms: {
          p50: ms(quantile(sorted, 0.5)),
          p99: ms(quantile(sorted, 0.99)),
          max: ms(sorted.at(-1)!),
        },
        loop_delay_ms: { p99: ms(delay.percentile(99) / 1e6), max: ms(delay.max / 1e6) },
        per_second: rates,
      }),
    );
    expect(sorted.length).toBeGreaterThan(10);
  }, 120_000);
});
