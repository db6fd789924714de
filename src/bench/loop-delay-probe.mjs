// Preloaded into the load benchmark's server process (node --import): the
// main event loop's delay, as perf_hooks measures it, and the server-side
// time of each client RPC method, between two SIGUSR2s, written as JSON to
// CHRONOMAD_LOOP_PROBE_FILE. The benchmark resets it when the placement burst
// starts and reads it when the burst ends. Plain JavaScript: it loads before
// the server registers its TypeScript loader.
import { subscribe } from "node:diagnostics_channel";
import { renameSync, writeFileSync } from "node:fs";
import { createHistogram, monitorEventLoopDelay } from "node:perf_hooks";

const RPC_PREFIX = "/v1/rpc/";
const ms = (ns) => Math.round(ns / 1e3) / 1e3;

const file = process.env.CHRONOMAD_LOOP_PROBE_FILE;
if (file) {
  const delay = monitorEventLoopDelay({ resolution: 1 });
  delay.enable();
  // From the moment node's HTTP parser hands the request over (its headers
  // read by the server's loop) until the reply's last byte is handed to the
  // socket: what the server spent on the call. The wait before the loop read
  // the request (in the socket, behind other work) is not in it; the loop
  // delay above bounds that.
  const arrived = new WeakMap();
  const rpc = new Map();
  subscribe("http.server.request.start", ({ request }) => {
    if (request.url?.startsWith(RPC_PREFIX)) arrived.set(request, process.hrtime.bigint());
  });
  subscribe("http.server.response.finish", ({ request }) => {
    const at = arrived.get(request);
    if (at === undefined) return;
    arrived.delete(request);
    const url = request.url;
    const q = url.indexOf("?");
    const method = url.slice(RPC_PREFIX.length, q < 0 ? undefined : q);
    let h = rpc.get(method);
    if (!h) {
      h = createHistogram();
      rpc.set(method, h);
    }
    // Nanoseconds; a histogram takes integers of at least 1.
    h.record(Math.max(1, Number(process.hrtime.bigint() - at)));
  });
  let seq = 0;
  process.on("SIGUSR2", () => {
    seq++;
    const methods = {};
    for (const [method, h] of [...rpc].sort(([a], [b]) => a.localeCompare(b))) {
      if (h.count === 0) continue;
      methods[method] = {
        count: h.count,
        p50_ms: ms(h.percentile(50)),
        p99_ms: ms(h.percentile(99)),
        max_ms: ms(h.max),
      };
      h.reset();
    }
    const figures = {
      seq,
      p50_ms: ms(delay.percentile(50)),
      p99_ms: ms(delay.percentile(99)),
      max_ms: ms(delay.max),
      count: delay.count,
      rpc: methods,
      // When this phase ended on the CPU profiler's monotonic clock (µs), to cut a --cpu-prof profile to it.
      mono_us: Number(process.hrtime.bigint() / 1000n),
    };
    // Whole or not at all: the benchmark may read it at any moment.
    writeFileSync(`${file}.tmp`, JSON.stringify(figures));
    renameSync(`${file}.tmp`, file);
    delay.reset();
  });
}
