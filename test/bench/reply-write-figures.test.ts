import { execFile } from "node:child_process";
import { closeSync, openSync, readSync } from "node:fs";
import { Socket } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { benchRpcCost } from "../../src/bench/rpc-cost-bench.ts";

/**
 * What a client RPC's reply write (`writev` in the main thread's profiles)
 * is made of: the server's own CPU in the syscall, or the wait for a core
 * after the write woke the process reading the reply. Heartbeats of
 * `npm run bench -- --rpc-cost` (the server in this process, the callers
 * in another), each server-side socket write timed by the wall clock, with
 * the process's involuntary context switches (getrusage) and the main
 * thread's wait for a core (/proc/thread-self/schedstat) read around it.
 * A write during which neither moved ran on its core throughout.
 * A minute or two: run on demand only,
 * CHRONOMAD_WRITE_FIGURES=1 npx vitest run test/bench/reply-write-figures.test.ts
 * With CHRONOMAD_WRITE_FIGURES_BATCH=1 the callers' process runs as
 * SCHED_BATCH (chrt), which the kernel never lets preempt a running task
 * when it wakes: what the writes cost when the reader is not handed the
 * core at once (as when it is on another machine).
 */
const enabled = process.env.CHRONOMAD_WRITE_FIGURES === "1";
if (!enabled) console.warn("reply write figures skipped: set CHRONOMAD_WRITE_FIGURES=1 to take them");

interface WriteSample {
  readonly wallUs: number;
  readonly preempted: boolean;
  readonly waitUs: number;
}

const restore: (() => void)[] = [];
afterEach(() => {
  for (const r of restore.splice(0).reverse()) r();
});

/** Times every write of a server-side socket (one whose `server` is set) until the returned stop. */
function timeServerWrites(samples: WriteSample[]): () => void {
  const fd = openSync("/proc/thread-self/schedstat", "r");
  const buf = Buffer.alloc(128);
  const waitNs = () => Number(buf.toString("latin1", 0, readSync(fd, buf, 0, 128, 0)).split(" ")[1]);
  // Socket's internal write step, shared by write and writev: not in @types/node.
  const proto = Socket.prototype as unknown as { _writeGeneric: (...args: unknown[]) => unknown };
  const original = proto._writeGeneric;
  proto._writeGeneric = function (this: Socket & { server?: unknown }, ...args: unknown[]) {
    if (this.server == null) return original.apply(this, args);
    const w0 = waitNs();
    const r0 = process.resourceUsage().involuntaryContextSwitches;
    const t0 = process.hrtime.bigint();
    const out = original.apply(this, args);
    const t1 = process.hrtime.bigint();
    const r1 = process.resourceUsage().involuntaryContextSwitches;
    const w1 = waitNs();
    samples.push({ wallUs: Number(t1 - t0) / 1000, preempted: r1 > r0 || w1 > w0, waitUs: (w1 - w0) / 1000 });
    return out;
  };
  return () => {
    proto._writeGeneric = original;
    closeSync(fd);
  };
}

/** Keeps the load processes this one forks at SCHED_BATCH (they are forked per run). */
function callersAsBatch(): () => void {
  const timer = setInterval(() => {
    execFile("sh", [
      "-c",
      `for p in $(pgrep -P ${process.pid} -f -- --http-load-process); do for t in /proc/$p/task/*; do chrt -b -p 0 "\${t##*/}"; done; done`,
    ]);
  }, 100);
  return () => clearInterval(timer);
}

const quantile = (xs: number[], q: number) => {
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[Math.floor(q * (sorted.length - 1))] ?? Number.NaN;
};
const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);

describe.runIf(enabled)("reply write figures", () => {
  it("a heartbeat reply's write: on the core, or waiting for it", { timeout: 600_000 }, async () => {
    const samples: WriteSample[] = [];
    if (process.env.CHRONOMAD_WRITE_FIGURES_BATCH === "1") restore.push(callersAsBatch());
    restore.push(timeServerWrites(samples));
    const figures = await benchRpcCost({
      methods: ["Node.UpdateStatus"],
      calls: Number(process.env.CHRONOMAD_WRITE_FIGURES_CALLS ?? 20_000),
    });
    const clean = samples.filter((s) => !s.preempted).map((s) => s.wallUs);
    const preempted = samples.filter((s) => s.preempted);
    const all = sum(samples.map((s) => s.wallUs));
    const lost = sum(preempted.map((s) => s.wallUs));
    console.log(
      `writes ${samples.length}: ${((preempted.length / samples.length) * 100).toFixed(1)}% preempted, ` +
        `mean wall ${(all / samples.length).toFixed(1)} µs\n` +
        `  not preempted: wall p10 / p50 / p90 ${quantile(clean, 0.1).toFixed(1)} / ` +
        `${quantile(clean, 0.5).toFixed(1)} / ${quantile(clean, 0.9).toFixed(1)} µs, ` +
        `mean ${(sum(clean) / clean.length).toFixed(1)}\n` +
        `  preempted: wall p50 ${quantile(
          preempted.map((s) => s.wallUs),
          0.5,
        ).toFixed(1)} µs, wait for a core p50 ${quantile(
          preempted.map((s) => s.waitUs),
          0.5,
        ).toFixed(1)} µs; ` +
        `${((lost / all) * 100).toFixed(1)}% of the writes' wall time\n` +
        `  server main thread ${figures["Node.UpdateStatus.main_thread_cpu_us_per_call"]} µs/call, ` +
        `${figures["Node.UpdateStatus.calls_per_s"]} calls/s`,
    );
    expect(samples.length).toBeGreaterThan(0);
  });
});
