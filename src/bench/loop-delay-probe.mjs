// Preloaded into the load benchmark's server process (node --import): the
// main event loop's delay, as perf_hooks measures it, between two SIGUSR2s,
// written as JSON to CHRONOMAD_LOOP_PROBE_FILE. The benchmark resets it when
// the placement burst starts and reads it when the burst ends. Plain
// JavaScript: it loads before the server registers its TypeScript loader.
import { renameSync, writeFileSync } from "node:fs";
import { monitorEventLoopDelay } from "node:perf_hooks";

const file = process.env.CHRONOMAD_LOOP_PROBE_FILE;
if (file) {
  const delay = monitorEventLoopDelay({ resolution: 1 });
  delay.enable();
  let seq = 0;
  process.on("SIGUSR2", () => {
    seq++;
    const ms = (ns) => Math.round(ns / 1e3) / 1e3;
    const figures = {
      seq,
      p50_ms: ms(delay.percentile(50)),
      p99_ms: ms(delay.percentile(99)),
      max_ms: ms(delay.max),
      count: delay.count,
      // When this phase ended on the CPU profiler's monotonic clock (µs), to cut a --cpu-prof profile to it.
      mono_us: Number(process.hrtime.bigint() / 1000n),
    };
    // Whole or not at all: the benchmark may read it at any moment.
    writeFileSync(`${file}.tmp`, JSON.stringify(figures));
    renameSync(`${file}.tmp`, file);
    delay.reset();
  });
}
