import { performance } from "node:perf_hooks";
import { describe, expect, it } from "vitest";
import { AllocUpdateBatcher } from "../../../src/api/client-rpc/alloc-update-batcher.ts";
import type { ApiContext } from "../../../src/api/context.ts";
import { EnvelopeCodec } from "../../../src/codec/envelope-codec.ts";
import type { Outcome } from "../../../src/store/projection.ts";
import { VirtualClock } from "../../../src/util/clock.ts";
import type { ClientAllocUpdate } from "../../../streams/allocs.ts";
import type { Envelope } from "../../../streams/event-schema.ts";
import { allSchemas } from "../../../streams/index.ts";
import { countHeapAllocation } from "../../heap-allocation.ts";
import { runningTaskState } from "./running-task-state.ts";

/**
 * The figures docs/architecture.md ("Long turns: the work, or the wait for a
 * core") quotes for the client update window's flush: windows of 100, 1,000
 * and 3,600 updates, the entries a simulated node sends in Node.UpdateAlloc
 * (an allocation of one task that just started), in calls of 1 to 5
 * updates. Per window size: the longest and median synchronous flush step
 * (the window's timer callback: building and encoding its records, up to the
 * append), and the process's CPU (process.cpuUsage) and heap bytes per
 * update over the calls' submits and the flush. The store is a stub that
 * encodes what is not encoded yet, as Store.append does, and applies
 * nothing. Run on demand only:
 * CHRONOMAD_FLUSH_FIGURES=1 npx vitest run test/api/client-rpc/flush-figures.test.ts
 */
const enabled = process.env.CHRONOMAD_FLUSH_FIGURES === "1";
const WINDOWS = 40;
const WARM_UP = 10;

/**
 * Nanoseconds of CPU the process has used. Not the thread's schedstat: the
 * kernel brings a running thread's total up to date only at scheduler
 * ticks and switches, milliseconds apart, coarser than a window of 100
 * updates. Node 20 has no per-thread counter; GC helper threads count too.
 */
function cpuNs(): number {
  const { user, system } = process.cpuUsage();
  return (user + system) * 1000;
}

/** A window's updates as update-alloc.ts builds them from a simulated node's report. */
function windowCalls(updates: number, seq: number): { nodeID: string; updates: ClientAllocUpdate[] }[] {
  const calls: { nodeID: string; updates: ClientAllocUpdate[] }[] = [];
  const ms = 1_763_800_000_000 + seq;
  for (let made = 0, c = 0; made < updates; c++) {
    const n = Math.min(1 + (c % 5), updates - made);
    const nodeID = `${(seq * 7919 + c).toString(16).padStart(8, "0")}-6c1e-4a0b-9f4e-2a7c3d9e${String(c).padStart(4, "0")}`;
    const list: ClientAllocUpdate[] = [];
    for (let i = 0; i < n; i++, made++) {
      const state = runningTaskState(ms);
      // The server gets what msgpack decoding of the request gave: plain objects.
      const taskStates = JSON.parse(JSON.stringify({ web: state })) as ClientAllocUpdate["TaskStates"];
      list.push({
        ID: `${(seq * 100_003 + made).toString(16).padStart(8, "0")}-1f2e-4d3c-8b7a-69584f3e2d1c`,
        NodeID: nodeID,
        ClientStatus: "running",
        ClientDescription: "Tasks are running",
        TaskStates: taskStates,
        DeploymentStatus: null,
        NetworkStatus: null,
        ModifyTime: ms * 1e6,
      });
    }
    calls.push({ nodeID, updates: list });
  }
  return calls;
}

describe.skipIf(!enabled)("the client update window's flush (figures)", () => {
  it("reports the longest flush step and the CPU and heap per update", async () => {
    const codec = new EnvelopeCodec(allSchemas);
    let index = 0;
    let bytesWritten = 0;
    const store = {
      append: async (records: readonly (Envelope | Uint8Array)[]) => {
        const bytes = records.map((e) => (e instanceof Uint8Array ? e : codec.encode(e)));
        for (const b of bytes) bytesWritten += b.length;
        const first = index + 1;
        index += bytes.length;
        return { first, last: index };
      },
      waitFor: async (i: number): Promise<Outcome> => ({ index: i, status: "applied" }),
    };
    const clock = new VirtualClock();
    const ctx = {
      store,
      tables: { nodes: new Map() },
      clock,
      config: { serverName: "s1" },
    } as unknown as ApiContext;
    const batcher = new AllocUpdateBatcher(ctx);
    const lines: string[] = [];
    for (const size of [100, 1_000, 3_600]) {
      const steps: number[] = [];
      let cpuTotal = 0;
      let submitNs = 0;
      let gcs = 0;
      let heap = 0;
      let longestSubmit = 0;
      const submitTimes: number[] = [];
      let counted = 0;
      for (let w = 0; w < WINDOWS; w++) {
        const calls = windowCalls(size, w);
        const counting = countHeapAllocation();
        const cpu0 = cpuNs();
        const answers: Promise<number>[] = [];
        for (const c of calls) {
          const t = performance.now();
          answers.push(batcher.submit({ ...c, reconnected: [], evals: [] }));
          const took = performance.now() - t;
          if (w >= WARM_UP) {
            longestSubmit = Math.max(longestSubmit, took);
            submitTimes.push(took);
          }
        }
        const submitted = cpuNs();
        const t0 = performance.now();
        clock.advance(50);
        const step = performance.now() - t0;
        const cpu = cpuNs() - cpu0;
        const { bytes: allocated, collections } = counting.stop();
        await Promise.all(answers);
        // Let the answers' paced turns run before the next window.
        await new Promise((r) => setImmediate(r));
        if (w < WARM_UP) continue;
        steps.push(step);
        cpuTotal += cpu;
        submitNs += submitted - cpu0;
        gcs += collections;
        heap += allocated;
        counted += size;
      }
      steps.sort((a, b) => a - b);
      submitTimes.sort((a, b) => a - b);
      lines.push(
        `${size} updates: flush step median ${steps[steps.length >> 1]!.toFixed(2)} ms, max ${steps[steps.length - 1]!.toFixed(2)} ms; ` +
          `submit p99 ${submitTimes[Math.floor(submitTimes.length * 0.99)]!.toFixed(3)}, longest ${longestSubmit.toFixed(3)} ms; CPU ${(cpuTotal / 1000 / counted).toFixed(1)} us/update ` +
          `(submits ${(submitNs / 1000 / counted).toFixed(1)}), GCs ${(gcs / (WINDOWS - WARM_UP)).toFixed(1)}/window, ` +
          `heap ${Math.round(heap / counted)} B/update (submits and flush)`,
      );
    }
    process.stdout.write(`${lines.join("\n")}\n(${bytesWritten} bytes written)\n`);
    expect(bytesWritten).toBeGreaterThan(0);
  }, 300_000);
});
