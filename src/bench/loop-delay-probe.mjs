// Preloaded into the load benchmark's server process (node --import): the
// main event loop's delay, as perf_hooks measures it, and the server-side
// time of each client RPC method and the garbage collector's pauses, between
// two SIGUSR2s, written as JSON to
// CHRONOMAD_LOOP_PROBE_FILE. The benchmark resets it when the placement burst
// starts and reads it when the burst ends. Plain JavaScript: it loads before
// the server registers its TypeScript loader.
import { subscribe } from "node:diagnostics_channel";
import { openSync, readdirSync, readFileSync, readSync, renameSync, writeFileSync } from "node:fs";
import {
  constants,
  createHistogram,
  monitorEventLoopDelay,
  PerformanceObserver,
  performance,
} from "node:perf_hooks";

const RPC_PREFIX = "/v1/rpc/";
const HEARTBEAT_URL = `${RPC_PREFIX}Node.UpdateStatus`;
// src/nodesim/rpc-client.ts's SENT_AT_HEADER (this file loads before TypeScript can).
const SENT_AT_HEADER = "x-nodesim-sent-at";
/** A header's value from node's flat [name, value, ...] list, names in any case. */
const rawHeader = (raw, name) => {
  for (let i = 0; i < raw.length; i += 2) if (raw[i].toLowerCase() === name) return raw[i + 1];
  return undefined;
};
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
    // Only heartbeats carry the stamp. Not `request.headers`: node builds that
    // object on first read, and a burst's poll phase parses hundreds of calls
    // whose handlers (and their header reads) wait for later turns, so reading
    // it here put work in the long turns this probe measures.
    if (!request.url.startsWith(HEARTBEAT_URL)) return;
    const sent = Number(rawHeader(request.rawHeaders, SENT_AT_HEADER));
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
  // The long turns' threshold (ms; see below): with them, each pause as
  // [start on the profiler's monotonic clock (µs), length (µs), kind], to
  // tell which long turns held one. performance.now() counts from
  // timeOrigin on the same clock.
  const turnsMs = Number(process.env.CHRONOMAD_LOOP_PROBE_TURNS_MS ?? 0);
  const monoOffsetUs = Number(process.hrtime.bigint() / 1000n) - performance.now() * 1000;
  let gcPauses = [];
  const recordGc = (entries) => {
    for (const entry of entries) {
      const g = gc.get(entry.detail?.kind);
      if (!g) continue;
      if (turnsMs > 0 && gcPauses.length < 20_000)
        gcPauses.push([
          Math.round(monoOffsetUs + entry.startTime * 1000),
          Math.round(entry.duration * 1000),
          entry.detail.kind,
        ]);
      g.count++;
      g.total_ms += entry.duration;
      if (entry.duration > g.max_ms) g.max_ms = entry.duration;
    }
  };
  const gcObserver = new PerformanceObserver((list) => recordGc(list.getEntries()));
  gcObserver.observe({ entryTypes: ["gc"] });
  // The main thread's time on a core and runnable but waiting for one
  // (nanoseconds so far, the kernel's schedstat, brought up to date at each
  // scheduler tick; -1 without /proc): on a shared machine a long turn may
  // be mostly the second.
  let schedFd = -1;
  try {
    schedFd = openSync("/proc/thread-self/schedstat", "r");
  } catch {}
  const schedBuf = Buffer.alloc(128);
  const sched = () => {
    if (schedFd < 0) return [-1, -1];
    const n = readSync(schedFd, schedBuf, 0, schedBuf.length, 0);
    const [run, wait] = schedBuf.toString("latin1", 0, n).split(" ");
    return [Number(run), Number(wait)];
  };
  let phaseSched = sched();
  // Every thread's schedstat by thread id, and the machine's CPU times: what
  // the main thread competed with. The server's other threads (its scheduler
  // threads, V8's GC and compile helpers, libuv's pool) are told apart from
  // the rest of the machine, which the benchmark's simulator shares.
  const threadsSched = () => {
    const byTid = new Map();
    try {
      for (const tid of readdirSync("/proc/self/task")) {
        try {
          const [run, wait] = readFileSync(`/proc/self/task/${tid}/schedstat`, "latin1").split(" ");
          byTid.set(tid, [Number(run), Number(wait)]);
        } catch {} // the thread ended meanwhile
      }
    } catch {}
    return byTid;
  };
  // [busy, all] in clock ticks over every core: /proc/stat's first line.
  const machineTicks = () => {
    try {
      const f = readFileSync("/proc/stat", "latin1")
        .split("\n", 1)[0]
        .trim()
        .split(/\s+/)
        .slice(1)
        .map(Number);
      const all = f.slice(0, 8).reduce((a, b) => a + b, 0);
      return [all - f[3] - f[4], all];
    } catch {
      return undefined;
    }
  };
  let phaseThreads = threadsSched();
  let phaseMachine = machineTicks();
  // For finding what held the loop (CHRONOMAD_LOOP_PROBE_TURNS_MS=20): every
  // stretch of at least that long between two runs of a 1 ms timer, as
  // [start on the CPU profiler's monotonic clock (µs), length (µs), the main
  // thread's time on a core in it (µs), its time runnable but waiting for a
  // core (µs)] (the kernel's schedstat; -1 where there is none), so a
  // --cpu-prof profile can be cut to each one and a stretch told apart from
  // the machine's other work. Off by default: the timer is work of its own
  // on the loop the benchmark measures.
  let turns = [];
  if (turnsMs > 0) {
    let last = process.hrtime.bigint();
    let [lastRun, lastWait] = sched();
    const limit = BigInt(Math.round(turnsMs * 1e6));
    setInterval(() => {
      const now = process.hrtime.bigint();
      const [run, wait] = sched();
      if (now - last >= limit && turns.length < 20_000)
        turns.push([
          Number(last / 1000n),
          Number((now - last) / 1000n),
          run < 0 ? -1 : Math.round((run - lastRun) / 1000),
          wait < 0 ? -1 : Math.round((wait - lastWait) / 1000),
        ]);
      last = now;
      lastRun = run;
      lastWait = wait;
    }, 1).unref();
  }
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
    const nowSched = sched();
    const mainThread =
      nowSched[0] < 0
        ? undefined
        : {
            cpu_ms: round((nowSched[0] - phaseSched[0]) / 1e6),
            waiting_ms: round((nowSched[1] - phaseSched[1]) / 1e6),
          };
    phaseSched = nowSched;
    const nowThreads = threadsSched();
    const mainTid = String(process.pid);
    let otherRun = 0;
    let otherWait = 0;
    const runs = [];
    for (const [tid, [run, wait]] of nowThreads) {
      if (tid === mainTid) continue;
      const [run0, wait0] = phaseThreads.get(tid) ?? [0, 0];
      otherRun += run - run0;
      otherWait += wait - wait0;
      runs.push(run - run0);
    }
    // The busiest few by time on a core: a scheduler thread stands out from V8's helpers.
    const busiest = runs
      .sort((a, b) => b - a)
      .slice(0, 4)
      .map((run) => round(run / 1e6));
    const otherThreads =
      nowThreads.size === 0
        ? undefined
        : {
            cpu_ms: round(otherRun / 1e6),
            waiting_ms: round(otherWait / 1e6),
            threads: nowThreads.size - 1,
            busiest_cpu_ms: busiest,
          };
    phaseThreads = nowThreads;
    const nowMachine = machineTicks();
    const machineBusy =
      nowMachine && phaseMachine && nowMachine[1] > phaseMachine[1]
        ? round((nowMachine[0] - phaseMachine[0]) / (nowMachine[1] - phaseMachine[1]))
        : undefined;
    phaseMachine = nowMachine;
    const figures = {
      seq,
      p50_ms: ms(delay.percentile(50)),
      p99_ms: ms(delay.percentile(99)),
      max_ms: ms(delay.max),
      count: delay.count,
      rpc: methods,
      gc: gcFigures,
      ...(mainThread ? { main_thread: mainThread } : {}),
      ...(otherThreads ? { other_threads: otherThreads } : {}),
      ...(machineBusy !== undefined ? { machine_busy: machineBusy } : {}),
      // When this phase ended on the CPU profiler's monotonic clock (µs), to cut a --cpu-prof profile to it.
      mono_us: Number(process.hrtime.bigint() / 1000n),
      ...(turnsMs > 0 ? { long_turns: turns, gc_pauses: gcPauses } : {}),
    };
    turns = [];
    gcPauses = [];
    // Whole or not at all: the benchmark may read it at any moment.
    writeFileSync(`${file}.tmp`, JSON.stringify(figures));
    renameSync(`${file}.tmp`, file);
    delay.reset();
  });
}
