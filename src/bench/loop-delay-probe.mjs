// Preloaded into the load benchmark's server process (node --import): the
// main event loop's delay, as perf_hooks measures it, and the server-side
// time of each client RPC method and the garbage collector's pauses, between
// two SIGUSR2s, written as JSON to
// CHRONOMAD_LOOP_PROBE_FILE. The benchmark resets it when the placement burst
// starts and reads it when the burst ends. Plain JavaScript: it loads before
// the server registers its TypeScript loader.
import { subscribe } from "node:diagnostics_channel";
import { renameSync, writeFileSync } from "node:fs";
import {
  constants,
  createHistogram,
  monitorEventLoopDelay,
  PerformanceObserver,
  performance,
} from "node:perf_hooks";

const RPC_PREFIX = "/v1/rpc/";
const ms = (ns) => Math.round(ns / 1e3) / 1e3;
const methodOf = (url) => {
  const q = url.indexOf("?");
  return url.slice(RPC_PREFIX.length, q < 0 ? undefined : q);
};

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
  // The simulator stamps its heartbeats with when they went out (src/nodesim/rpc-client.ts,
  // on performance.timeOrigin + now(), one clock for every process here): from that to the
  // headers read is the wait in the sockets and behind the server's other work.
  const waits = new Map();
  const histogram = (map, method) => {
    let h = map.get(method);
    if (!h) {
      h = createHistogram();
      map.set(method, h);
    }
    return h;
  };
  subscribe("http.server.request.start", ({ request }) => {
    if (!request.url?.startsWith(RPC_PREFIX)) return;
    arrived.set(request, process.hrtime.bigint());
    const sent = Number(request.headers["x-nodesim-sent-at"]);
    if (sent > 0) {
      const waitedNs = (performance.timeOrigin + performance.now() - sent) * 1e6;
      histogram(waits, methodOf(request.url)).record(Math.max(1, Math.round(waitedNs)));
    }
  });
  subscribe("http.server.response.finish", ({ request }) => {
    const at = arrived.get(request);
    if (at === undefined) return;
    arrived.delete(request);
    // Nanoseconds; a histogram takes integers of at least 1.
    histogram(rpc, methodOf(request.url)).record(Math.max(1, Number(process.hrtime.bigint() - at)));
  });
  // The collector's pauses on this (the main) thread by kind: what of the
  // loop delay above is GC. Entries arrive on a later turn; takeRecords()
  // below collects those not delivered yet when the phase ends.
  const GC_KINDS = [
    [constants.NODE_PERFORMANCE_GC_MINOR, "scavenge"],
    [constants.NODE_PERFORMANCE_GC_MAJOR, "mark_compact"],
    [constants.NODE_PERFORMANCE_GC_INCREMENTAL, "incremental_marking"],
    [constants.NODE_PERFORMANCE_GC_WEAKCB, "weak_callbacks"],
  ];
  const gcZero = () => ({ count: 0, total_ms: 0, max_ms: 0 });
  let gc = new Map(GC_KINDS.map(([kind]) => [kind, gcZero()]));
  const recordGc = (entries) => {
    for (const entry of entries) {
      const g = gc.get(entry.detail?.kind);
      if (!g) continue;
      g.count++;
      g.total_ms += entry.duration;
      if (entry.duration > g.max_ms) g.max_ms = entry.duration;
    }
  };
  const gcObserver = new PerformanceObserver((list) => recordGc(list.getEntries()));
  gcObserver.observe({ entryTypes: ["gc"] });
  const round = (v) => Math.round(v * 1000) / 1000;
  let seq = 0;
  process.on("SIGUSR2", () => {
    seq++;
    recordGc(gcObserver.takeRecords());
    const gcFigures = {};
    for (const [kind, name] of GC_KINDS) {
      const g = gc.get(kind);
      gcFigures[name] = { count: g.count, total_ms: round(g.total_ms), max_ms: round(g.max_ms) };
    }
    gc = new Map(GC_KINDS.map(([kind]) => [kind, gcZero()]));
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
      const w = waits.get(method);
      if (w && w.count > 0) {
        methods[method].sent_to_read = {
          count: w.count,
          p50_ms: ms(w.percentile(50)),
          p99_ms: ms(w.percentile(99)),
          max_ms: ms(w.max),
        };
      }
    }
    for (const w of waits.values()) w.reset();
    const figures = {
      seq,
      p50_ms: ms(delay.percentile(50)),
      p99_ms: ms(delay.percentile(99)),
      max_ms: ms(delay.max),
      count: delay.count,
      rpc: methods,
      gc: gcFigures,
      // When this phase ended on the CPU profiler's monotonic clock (µs), to cut a --cpu-prof profile to it.
      mono_us: Number(process.hrtime.bigint() / 1000n),
    };
    // Whole or not at all: the benchmark may read it at any moment.
    writeFileSync(`${file}.tmp`, JSON.stringify(figures));
    renameSync(`${file}.tmp`, file);
    delay.reset();
  });
}
