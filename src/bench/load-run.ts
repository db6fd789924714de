import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pino } from "pino";
import { createProjections } from "../../projections/index.ts";
import { allSchemas } from "../../streams/index.ts";
import { EnvelopeCodec } from "../codec/envelope-codec.ts";
import { openFileLog } from "../log/file/index.ts";
import { convergence, liveAllocations } from "../nodesim/convergence.ts";
import type { DriverOptions } from "../nodesim/driver-options.ts";
import { progressLine } from "../nodesim/progress-line.ts";
import { NodeSimulator, type SimReport } from "../nodesim/simulator.ts";
import {
  jobsApiServed,
  registerJobs,
  type WorkloadJob,
  type WorkloadMix,
  workloadJobs,
  workloadSize,
} from "../nodesim/workload.ts";
import { Store } from "../store/store.ts";
import { setThreadNice, threadNice } from "../util/thread-nice.ts";
import {
  dirBytes,
  type LoopDelay,
  processCpuSeconds,
  type ServerRpcTiming,
  serverGauges,
  startLoadServer,
} from "./load-server.ts";
import { type LogCensus, logCensus } from "./log-census.ts";
import { loopDelayWindow } from "./loop-delay-window.ts";

export interface LoadRunOptions {
  readonly nodes: number;
  readonly seed: string;
  readonly prioritized: boolean;
  readonly mix: WorkloadMix;
  /** How long the steady state is measured once every allocation runs. */
  readonly steadyMs: number;
  readonly wave: { readonly share: number; readonly durationMs: number };
  /** Extra `serve` flags (heartbeat settings). */
  readonly serverArgs: readonly string[];
  readonly driver: Partial<DriverOptions>;
  /** The simulated nodes heartbeat from a thread of their own (NodeSimOptions.heartbeatThread). */
  readonly heartbeatThread: boolean;
  /**
   * The nice value of the simulator's main thread (the nodes' allocation
   * work, their pulls and updates), set once its heartbeat thread runs, so
   * that the stand-in for thousands of other machines takes the server's
   * cores only when the server leaves them; the heartbeat thread keeps the
   * process's. 0 leaves it as it is. Linux only.
   */
  readonly simNice: number;
  /** Stop once the burst is measured: no steady state, disconnect wave or replay. */
  readonly burstOnly?: boolean;
  /** Upper bounds of the waits, so a stuck run ends with what it measured. */
  readonly placeTimeoutMs: number;
  readonly convergeTimeoutMs: number;
  readonly progress: (message: string) => void;
  /** Leave the server's data directory (log, snapshots) in place for inspection. */
  readonly keepData?: boolean;
}

export interface LoadRunFigures {
  readonly prioritized_updates: boolean;
  /** The nodes heartbeated from a thread of their own (the burst's heartbeat round trips then exclude the simulator's main loop). */
  readonly heartbeat_thread: boolean;
  /** The simulator main thread's nice value over the run (LoadRunOptions.simNice; 0 elsewhere than Linux). */
  readonly sim_nice: number;
  readonly notes: string[];
  readonly nodes: number;
  readonly allocs_desired: number;
  readonly allocs_placed: number;
  /** What the clients ran after the burst (a snapshot: a task that failed since is not in it). */
  readonly allocs_running: number;
  /** The burst's wait for every allocation to run: the measure of "placed and running". */
  readonly running_wait: RunningWait;
  readonly seconds: Record<string, number>;
  readonly registration_nodes_per_s: number;
  /** Allocations placed per second by the scheduler (first to last placement in the log). */
  readonly placement_per_s: number | null;
  /**
   * From the first job registration until every allocation runs: the
   * server's main event-loop delay and the nodes' heartbeat round trips.
   */
  readonly burst: {
    /** Allocations placed from the first registration until all ran, per second up to the last of them. */
    readonly placements_per_s: number | null;
    /** The server's main event loop. */
    readonly loop: LoopDelay;
    /** Node.UpdateStatus round trips as the simulated nodes timed them. */
    readonly heartbeat: { p50_ms: number; p99_ms: number; max_ms: number; count: number };
    /**
     * The simulator's own event loop (this process): its delay is in every
     * round trip above, as a real client's loop would not be.
     */
    readonly sim_loop: LoopDelay;
    /** The simulator's heartbeat thread's event loop, when the heartbeats go out from one. */
    readonly sim_heartbeat_loop: LoopDelay | null;
    /** CPU seconds (user + system) the simulator used over the burst. */
    readonly sim_cpu_s: number;
    /** By client RPC method, the server's time from a request's headers read to its reply sent. */
    readonly server_rpc: Readonly<Record<string, ServerRpcTiming>>;
  } | null;
  /** Nodes the server declared down before the disconnect wave (with enough capacity, none). */
  readonly nodes_down_before_wave: number;
  readonly log: {
    readonly records: number;
    readonly bytes: number;
    readonly events_per_s: number;
    readonly steady_events_per_s: number;
    readonly steady_bytes_per_s: number;
    readonly alloc_events: number;
    readonly alloc_bytes: number;
    readonly alloc_transitions: number;
    readonly bytes_per_alloc_transition: number;
    readonly client_update_events: number;
    readonly client_update_bytes: number;
    readonly client_update_entries: number;
    readonly client_transitions: number;
    readonly client_update_bytes_per_client_transition: number;
    readonly by_type: LogCensus["byType"];
  };
  readonly rpc_per_s_steady: Record<string, number>;
  readonly rpc_calls: Record<string, number>;
  readonly rpc_bytes_out: number;
  readonly heartbeat_p50_ms: number;
  readonly heartbeat_p99_ms: number;
  readonly wave: {
    readonly nodes: number;
    readonly orders: Record<string, number>;
    readonly converge_s: number | null;
  };
  readonly server: {
    readonly rss_peak: number;
    readonly heap_peak: number;
    readonly rss_end: number;
    readonly heap_end: number;
    readonly cpu_s: number;
  };
  readonly sim: { readonly cpu_s: number; readonly rss_peak: number; readonly heap_peak: number };
  /** Absent with `burstOnly`. */
  readonly replay?: { readonly seconds: number; readonly records_per_s: number };
  readonly sim_report: SimReport;
}

/**
 * One load run: a server process on a fresh file log, the simulated nodes,
 * the workload registered through PUT /v1/jobs and placed by the server's
 * scheduler, a measured steady state, a disconnect wave and the convergence after it;
 * then the produced log is counted and replayed.
 */
export async function loadRun(o: LoadRunOptions): Promise<LoadRunFigures> {
  const dataDir = await mkdtemp(join(tmpdir(), "chronomad-load-"));
  try {
    return await measure(o, dataDir);
  } finally {
    if (o.keepData) o.progress(`kept the server's data directory: ${dataDir}`);
    else await rm(dataDir, { recursive: true, force: true });
  }
}

async function measure(o: LoadRunOptions, dataDir: string): Promise<LoadRunFigures> {
  const t0 = performance.now();
  const mark: Record<string, number> = {};
  const since = (from: number) => Math.round((performance.now() - from) / 10) / 100;
  const notes: string[] = [];
  const logDir = join(dataDir, "log");
  const args = ["--data-dir", dataDir, ...o.serverArgs];

  const server = await startLoadServer(args, dataDir);
  if (!(await jobsApiServed(server.url))) {
    await server.stop();
    throw new Error(
      "the server does not serve PUT /v1/jobs: the load benchmark places its allocations through it",
    );
  }
  o.progress(`server at ${server.url}`);

  const peaks = { rss: 0, heap: 0, simRss: 0, simHeap: 0 };
  let lastReport: SimReport | undefined;
  let samples = 0;
  const sampler = setInterval(() => {
    // A progress line every ~20 s, so a long phase shows what the nodes are doing.
    if (++samples % 10 === 0 && simStarted) {
      const now = sim.report();
      o.progress(progressLine(now, lastReport));
      lastReport = now;
    }
    const mem = process.memoryUsage();
    peaks.simRss = Math.max(peaks.simRss, mem.rss);
    peaks.simHeap = Math.max(peaks.simHeap, mem.heapUsed);
    void serverGauges(server.url).then(
      (g) => {
        peaks.rss = Math.max(peaks.rss, g.rss);
        peaks.heap = Math.max(peaks.heap, g.heap);
      },
      () => undefined,
    );
  }, 2_000);

  const sim = new NodeSimulator({
    server: server.url,
    nodes: o.nodes,
    seed: o.seed,
    prioritizedUpdates: o.prioritized,
    driver: o.driver,
    heartbeatThread: o.heartbeatThread,
  });
  let simStarted = false;
  const jobs = workloadJobs(o.mix);
  const desired = workloadSize(jobs, o.nodes);
  let figuresEnd: { rss: number; heap: number } = { rss: 0, heap: 0 };
  let serverCpu = 0;
  let waveReport: Awaited<ReturnType<NodeSimulator["disconnectWave"]>> | undefined;
  let convergeS: number | null = null;
  let steady: { report: SimReport; seconds: number; records: number; bytes: number } | undefined;
  let burstFigures: Omit<NonNullable<LoadRunFigures["burst"]>, "placements_per_s"> | undefined;
  let runningWait: RunningWait = { target: desired, held: false, peak: 0 };
  let burstFrom = 0;
  let burstTo = 0;
  let waveAt = Number.POSITIVE_INFINITY;
  let before: SimReport | undefined;
  const niceBefore = threadNice();
  let simNice = niceBefore;
  try {
    // Registration: every node registered and heartbeated once (ready).
    let t = performance.now();
    simStarted = true;
    await sim.start();
    // After the start: a thread made later would inherit the value, the heartbeat thread among them.
    if (o.simNice) simNice = setThreadNice(o.simNice);
    await until(() => sim.report().heartbeat.count >= o.nodes, 120_000);
    await until(async () => (await readyNodes(server.url)) === o.nodes, 60_000);
    mark.register = since(t);
    o.progress(`${o.nodes} nodes ready in ${mark.register}s`);

    // Placement: the burst, with the server's event loop and the nodes' heartbeats measured over it.
    await server.phase();
    sim.counters.beginWindow();
    const simLoop = loopDelayWindow();
    // A heartbeat thread that failed is in the report's errors; the burst is measured all the same.
    await sim.heartbeatThread?.loopDelay().catch(() => undefined);
    const simCpu = process.cpuUsage();
    t = performance.now();
    burstFrom = Date.now();
    await registerJobs(server.url, jobs);
    mark.place_submit = since(t);
    const runningTarget = desired;
    const live = () => liveAllocations(sim, jobs);
    runningWait = await waitForRunning(live, runningTarget, o.placeTimeoutMs);
    const placed = runningWait.held;
    mark.place_to_running = since(t);
    burstTo = Date.now();
    const heartbeat = sim.counters.endWindow();
    const sim_loop = simLoop.end();
    const sim_heartbeat_loop = (await sim.heartbeatThread?.loopDelay().catch(() => undefined)) ?? null;
    const cpu = process.cpuUsage(simCpu);
    const serverPhase = await server.phase();
    burstFigures = {
      loop: serverPhase.loop,
      heartbeat,
      sim_loop,
      sim_heartbeat_loop,
      sim_cpu_s: Math.round((cpu.user + cpu.system) / 1e4) / 100,
      server_rpc: serverPhase.rpc,
    };
    const hbServer = serverPhase.rpc["Node.UpdateStatus"];
    o.progress(
      `burst: heartbeat p50/p99 ${heartbeat.p50_ms}/${heartbeat.p99_ms} ms (${heartbeat.count}); ` +
        `server side p50/p99 ${hbServer?.p50_ms ?? "-"}/${hbServer?.p99_ms ?? "-"} ms (${hbServer?.count ?? 0}); ` +
        `sent to read p50/p99 ${hbServer?.sent_to_read?.p50_ms ?? "-"}/${hbServer?.sent_to_read?.p99_ms ?? "-"} ms; ` +
        `server loop p99 ${serverPhase.loop.p99_ms} ms; simulator loop p50/p99 ${sim_loop.p50_ms}/${sim_loop.p99_ms} ms` +
        (sim_heartbeat_loop ? `; heartbeat thread loop p99 ${sim_heartbeat_loop.p99_ms} ms` : ""),
    );
    if (!placed)
      notes.push(
        `at most ${runningWait.peak} of ${runningTarget} allocations ran at once within the placement timeout`,
      );
    o.progress(`${live()}/${runningTarget} allocations running after ${mark.place_to_running}s`);

    if (!o.burstOnly) {
      // Steady state.
      before = sim.report();
      const g0 = await serverGauges(server.url);
      const b0 = await dirBytes(logDir);
      t = performance.now();
      await sleep(o.steadyMs);
      const after = sim.report();
      const g1 = await serverGauges(server.url);
      const b1 = await dirBytes(logDir);
      steady = {
        report: after,
        seconds: (performance.now() - t) / 1000,
        records: g1.lastIndex - g0.lastIndex,
        bytes: b1 - b0,
      };
      mark.steady = since(t);
      o.progress(`steady state: ${Math.round(steady.records / steady.seconds)} events/s into the log`);

      // Disconnect wave and convergence.
      t = performance.now();
      waveAt = Date.now();
      o.progress(
        `disconnect wave: ${o.wave.share * 100}% of the nodes silent for ${o.wave.durationMs / 1000}s`,
      );
      const wave = sim.disconnectWave(o.wave).then((r) => {
        waveReport = r;
        return r;
      });
      await sleep(o.wave.durationMs);
      // Convergence counts from the end of the partition: the nodes' three calls are part of it.
      const back = performance.now();
      const ok = await until(
        async () => waveReport !== undefined && (await converged(server.url, sim, jobs, o.nodes)),
        o.convergeTimeoutMs,
        1_000,
      );
      mark.wave = since(t);
      convergeS = ok ? Math.round((performance.now() - back) / 10) / 100 : null;
      if (!waveReport)
        notes.push("the nodes' reconnect calls had not all been answered when the convergence wait ended");
      else if (!ok)
        notes.push(`did not converge within ${o.convergeTimeoutMs / 1000}s after the disconnect wave`);
      void wave.catch(() => undefined);
      o.progress(`converged ${convergeS === null ? "never" : `${convergeS}s`} after the nodes came back`);
    }

    const gEnd = await serverGauges(server.url);
    figuresEnd = { rss: gEnd.rss, heap: gEnd.heap };
    peaks.rss = Math.max(peaks.rss, gEnd.rss);
    peaks.heap = Math.max(peaks.heap, gEnd.heap);
    serverCpu = await processCpuSeconds(server.child.pid ?? 0);
  } finally {
    clearInterval(sampler);
    await sim.stop();
    await server.stop();
    if (simNice !== niceBefore) {
      try {
        setThreadNice(niceBefore);
      } catch (err) {
        // Without CAP_SYS_NICE: a later run's threads start at this run's value.
        notes.push(`could not raise the simulator's priority again: ${(err as Error).message}`);
      }
    }
  }
  const final = sim.report();
  mark.total_until_stop = since(t0);

  o.progress("counting the log");
  const census = await logCensus(logDir);
  let replaySeconds: number | undefined;
  if (!o.burstOnly) {
    o.progress("replaying the log into a fresh store");
    replaySeconds = await replay(logDir);
  }

  const rate = (a: number, seconds: number) => (seconds > 0 ? Math.round((a / seconds) * 10) / 10 : 0);
  const rpcSteady: Record<string, number> = {};
  if (steady && before) {
    for (const [m, f] of Object.entries(steady.report.rpc))
      rpcSteady[m] = rate(f.calls - (before.rpc[m]?.calls ?? 0), steady.seconds);
  }
  const spanS = (census.lastAt - census.firstAt) / 1000;
  const placeSpanS = (census.lastPlacementAt - census.firstPlacementAt) / 1000;
  return {
    prioritized_updates: o.prioritized,
    heartbeat_thread: o.heartbeatThread,
    sim_nice: simNice,
    notes,
    nodes: o.nodes,
    allocs_desired: desired,
    allocs_placed: census.placed,
    allocs_running: before?.allocs.running ?? 0,
    running_wait: runningWait,
    seconds: { ...mark, total: since(t0) },
    registration_nodes_per_s: rate(o.nodes, mark.register ?? 0),
    placement_per_s: placeSpanS > 0 ? rate(census.placed, placeSpanS) : null,
    burst: burstFigures
      ? { placements_per_s: burstRate(census.placements, burstFrom, burstTo), ...burstFigures }
      : null,
    nodes_down_before_wave: census.nodeDownAt.filter((at) => at < waveAt).length,
    log: {
      records: census.records,
      bytes: census.bytes,
      events_per_s: rate(census.records, spanS),
      steady_events_per_s: steady ? rate(steady.records, steady.seconds) : 0,
      steady_bytes_per_s: steady ? rate(steady.bytes, steady.seconds) : 0,
      alloc_events: census.allocEvents,
      alloc_bytes: census.allocBytes,
      alloc_transitions: census.allocTransitions,
      bytes_per_alloc_transition: rate(census.allocBytes, census.allocTransitions),
      client_update_events: census.clientUpdateEvents,
      client_update_bytes: census.clientUpdateBytes,
      client_update_entries: census.clientUpdateEntries,
      client_transitions: census.clientTransitions,
      client_update_bytes_per_client_transition: rate(census.clientUpdateBytes, census.clientTransitions),
      by_type: census.byType,
    },
    rpc_per_s_steady: rpcSteady,
    rpc_calls: Object.fromEntries(Object.entries(final.rpc).map(([m, f]) => [m, f.calls])),
    rpc_bytes_out: final.bytes_out,
    heartbeat_p50_ms: final.heartbeat.p50_ms,
    heartbeat_p99_ms: final.heartbeat.p99_ms,
    wave: { nodes: waveReport?.nodes.length ?? 0, orders: { ...waveReport?.orders }, converge_s: convergeS },
    server: {
      rss_peak: peaks.rss,
      heap_peak: peaks.heap,
      rss_end: figuresEnd.rss,
      heap_end: figuresEnd.heap,
      cpu_s: serverCpu,
    },
    sim: {
      cpu_s: final.process.cpu_user_s + final.process.cpu_system_s,
      rss_peak: peaks.simRss,
      heap_peak: peaks.simHeap,
    },
    ...(replaySeconds === undefined
      ? {}
      : { replay: { seconds: replaySeconds, records_per_s: rate(census.records, replaySeconds) } }),
    sim_report: final,
  };
}

async function readyNodes(url: string): Promise<number> {
  const res = await fetch(`${url}/v1/nodes`, { signal: AbortSignal.timeout(30_000) });
  // An overloaded server sheds the read (503): not known yet, ask again.
  if (!res.ok) return -1;
  const nodes = (await res.json()) as { Status: string }[];
  return nodes.filter((n) => n.Status === "ready").length;
}

/**
 * After the wave: every node ready, nothing `unknown` on the server, every
 * client allocation started; with the scheduler, every job as desired on
 * the clients, no slot running twice (see nodesim/convergence.ts).
 */
async function converged(
  url: string,
  sim: NodeSimulator,
  jobs: readonly WorkloadJob[],
  nodes: number,
): Promise<boolean> {
  if (!convergence(sim, jobs, nodes).converged) return false;
  if ((await readyNodes(url)) !== nodes) return false;
  const filter = encodeURIComponent('ClientStatus == "unknown"');
  const res = await fetch(`${url}/v1/allocations?task_states=false&filter=${filter}`, {
    signal: AbortSignal.timeout(30_000),
  });
  return res.ok && ((await res.json()) as unknown[]).length === 0;
}

/** Seconds for a fresh store to rebuild every table from the log (no snapshot). */
async function replay(logDir: string): Promise<number> {
  const log = await openFileLog(logDir, { fsync: "never" });
  const store = new Store({
    log,
    codec: new EnvelopeCodec(allSchemas),
    projections: createProjections().all,
    logger: pino({ level: "silent" }),
  });
  const started = performance.now();
  await store.start();
  await store.caughtUp();
  const seconds = (performance.now() - started) / 1000;
  await store.stop();
  await log.close();
  return Math.round(seconds * 100) / 100;
}

export interface RunningWait {
  /** Allocations the workload asks for. */
  readonly target: number;
  /** The clients ran them all at once before the wait's timeout. */
  readonly held: boolean;
  /** The most the clients ran at once while the wait looked (the target or more when it held). */
  readonly peak: number;
}

/**
 * Waits until `running()` reaches `target`, keeping the most it saw: the
 * simulated driver fails some tasks, so a count read after the wait may be
 * below the target the wait saw reached.
 */
export async function waitForRunning(
  running: () => number,
  target: number,
  timeoutMs: number,
  everyMs = 500,
): Promise<RunningWait> {
  let peak = 0;
  const held = await until(
    () => {
      peak = Math.max(peak, running());
      return peak >= target;
    },
    timeoutMs,
    everyMs,
  );
  return { target, held, peak };
}

/** Polls `check` until it holds or `timeoutMs` passes; resolves whether it held. */
async function until(
  check: () => boolean | Promise<boolean>,
  timeoutMs: number,
  everyMs = 500,
): Promise<boolean> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    if (await check()) return true;
    if (performance.now() > deadline) return false;
    await sleep(everyMs);
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Placements per second from `from` to the last placement before `to` (envelope times, ms). */
function burstRate(placements: LogCensus["placements"], from: number, to: number): number | null {
  let n = 0;
  let last = from;
  for (const p of placements) {
    if (p.at < from || p.at > to) continue;
    n += p.n;
    last = Math.max(last, p.at);
  }
  return last > from ? Math.round((n / ((last - from) / 1000)) * 10) / 10 : null;
}
