import { type ChildProcess, spawn } from "node:child_process";
import { createWriteStream } from "node:fs";
import { readdir, readFile, stat } from "node:fs/promises";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { NODE_FLAGS } from "../cli/node-flags.ts";

const ROOT = join(import.meta.dirname, "../..");
const BIN = join(ROOT, "bin/chronomad.js");
const PROBE = join(ROOT, "src/bench/loop-delay-probe.mjs");

/** The main event loop's delay over a phase, as perf_hooks.monitorEventLoopDelay samples it every millisecond. */
export interface LoopDelay {
  readonly p50_ms: number;
  readonly p99_ms: number;
  readonly max_ms: number;
  readonly count: number;
  /** The server's: when the phase ended on the CPU profiler's monotonic clock (µs), to cut a --cpu-prof profile to it. */
  readonly mono_us?: number;
  /** The server's: the garbage collector's pauses on its main thread over the phase, a part of the delay above. */
  readonly gc?: GcPauses;
  /**
   * The server's: its main thread's time over the phase on a core and
   * runnable but waiting for one (ms; Linux only): what of the delay above
   * was the machine's other threads and processes.
   */
  readonly main_thread?: { readonly cpu_ms: number; readonly waiting_ms: number };
  /**
   * The server's other threads over the phase (scheduler threads, V8's GC
   * and compile helpers, libuv's pool; Linux only): their time on a core and
   * waiting for one (ms), how many there were at its end, and the busiest
   * four's time on a core (ms).
   */
  readonly other_threads?: {
    readonly cpu_ms: number;
    readonly waiting_ms: number;
    readonly threads: number;
    readonly busiest_cpu_ms: readonly number[];
  };
  /** The share of the machine's cores busy over the phase (all processes; Linux only). */
  readonly machine_busy?: number;
  /**
   * With CHRONOMAD_LOOP_PROBE_TURNS_MS set for the server: each stretch of at
   * least that long between two runs of a 1 ms timer, [start on the CPU
   * profiler's clock (µs), length (µs), the main thread's time on a core and
   * waiting for one in it (µs, from /proc; -1 without)], to cut a --cpu-prof
   * profile to.
   */
  readonly long_turns?: readonly (readonly [number, number, number, number])[];
  /**
   * With the long turns: the collector's pauses on the main thread, [start on
   * the same clock (µs), length (µs), perf_hooks' kind], to tell the turns
   * that held one.
   */
  readonly gc_pauses?: readonly (readonly [number, number, number])[];
}

/** The pauses of one kind of garbage collection over a phase (perf_hooks `gc` entries). */
export interface GcKindPauses {
  readonly count: number;
  readonly total_ms: number;
  readonly max_ms: number;
}

/** By kind of collection: young generation (scavenge), full (mark-compact), and the steps between. */
export interface GcPauses {
  readonly scavenge: GcKindPauses;
  readonly mark_compact: GcKindPauses;
  readonly incremental_marking: GcKindPauses;
  readonly weak_callbacks: GcKindPauses;
}

/** A client RPC method's server-side time: from the request's headers read by the server to its reply sent. */
export interface ServerRpcTiming extends Timing {
  /**
   * Calls stamped with when they went out (the simulator's heartbeats): from
   * then until the server read their headers, the wait in the sockets and
   * behind the server's other work.
   */
  readonly sent_to_read?: Timing;
}

interface Timing {
  readonly count: number;
  readonly p50_ms: number;
  readonly p99_ms: number;
  readonly max_ms: number;
}

/** What the server's probe measured over a phase. */
export interface ServerPhase {
  readonly loop: LoopDelay;
  /** By client RPC method (`Node.UpdateStatus`, ...), the calls answered in the phase. */
  readonly rpc: Readonly<Record<string, ServerRpcTiming>>;
}

export interface LoadServer {
  readonly child: ChildProcess;
  /**
   * The main event loop's delay, its GC pauses and the client RPCs'
   * server-side times since the last call (src/bench/loop-delay-probe.mjs,
   * preloaded into the server): call once to start a phase, once to end it.
   */
  phase(): Promise<ServerPhase>;
  readonly url: string;
  /** Resolves with the exit code once the process ended. */
  readonly exited: Promise<number | null>;
  /** SIGTERM, then waits for the exit (the server snapshots and closes its log first). */
  stop(): Promise<number | null>;
}

/**
 * Runs `chronomad serve` as its own process on an ephemeral port and waits
 * for its "chronomad serving" log line.
 */
export async function startLoadServer(args: readonly string[], dataDir: string): Promise<LoadServer> {
  const common = ["--http-addr", "127.0.0.1:0", "--log-level", "info", ...args];
  // For diagnosing the server under load, e.g. CHRONOMAD_BENCH_SERVER_NODE_FLAGS="--cpu-prof".
  const extra = (process.env.CHRONOMAD_BENCH_SERVER_NODE_FLAGS ?? "").split(" ").filter(Boolean);
  const probeFile = join(dataDir, "loop-delay.json");
  const child = spawn(
    process.execPath,
    [...NODE_FLAGS, "--import", PROBE, ...extra, BIN, "serve", ...common],
    {
      cwd: ROOT,
      stdio: ["ignore", "pipe", "pipe"],
      env: { ...process.env, CHRONOMAD_LOOP_PROBE_FILE: probeFile },
    },
  );
  let stderr = "";
  child.stderr!.on("data", (d) => {
    stderr = (stderr + String(d)).slice(-4000);
  });
  const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
  // The bench may be interrupted: never leave the server running behind it.
  const orphan = () => child.kill("SIGKILL");
  process.once("exit", orphan);
  void exited.then(() => process.off("exit", orphan));
  const url = await new Promise<string>((resolve, reject) => {
    createInterface({ input: child.stdout! }).on("line", (line) => {
      if (!line.includes('"chronomad serving"')) return;
      try {
        resolve(`http://${String((JSON.parse(line) as { http: unknown }).http)}`);
      } catch (err) {
        reject(err);
      }
    });
    void exited.then((code) => reject(new Error(`the server exited with ${code} before serving: ${stderr}`)));
  });
  // Keep draining stdout so a chatty server never blocks on a full pipe; for
  // diagnosis (which nodes missed a heartbeat, and when), it can go to a file.
  const logPath = process.env.CHRONOMAD_BENCH_SERVER_LOG;
  if (logPath) child.stdout!.pipe(createWriteStream(logPath, { flags: "a" }));
  else child.stdout!.resume();
  let seq = 0;
  return {
    child,
    url,
    exited,
    phase: async () => {
      seq++;
      child.kill("SIGUSR2");
      for (let waited = 0; waited < 10_000; waited += 20) {
        // Not there yet, or (written by an older probe) not whole yet: read again.
        const figures = await readFile(probeFile, "utf8")
          .then((text) => JSON.parse(text) as ProbeFile)
          .catch(() => undefined);
        if (figures && figures.seq >= seq) {
          const { seq: _seq, rpc, ...loop } = figures;
          return { loop, rpc };
        }
        await new Promise((r) => setTimeout(r, 20));
      }
      throw new Error("the server's event-loop probe did not answer");
    },
    stop: async () => {
      if (child.exitCode === null) child.kill("SIGTERM");
      return exited;
    },
  };
}

/** What loop-delay-probe.mjs writes. */
interface ProbeFile extends LoopDelay {
  readonly seq: number;
  readonly rpc: Record<string, ServerRpcTiming>;
}

export interface ServerGauges {
  readonly rss: number;
  readonly heap: number;
  readonly lastIndex: number;
}

/** The runtime gauges of `/v1/metrics` (chronomad.runtime.rss_bytes / heap_bytes, chronomad.log.last_index). */
export async function serverGauges(url: string): Promise<ServerGauges> {
  // A server shedding load (503) or too busy to answer within 10 s is asked again, for a minute.
  let res = await fetch(`${url}/v1/metrics`, { signal: AbortSignal.timeout(10_000) }).catch(() => undefined);
  for (let tries = 1; !res?.ok && tries < 6; tries++) {
    await new Promise((r) => setTimeout(r, 2_000));
    res = await fetch(`${url}/v1/metrics`, { signal: AbortSignal.timeout(10_000) }).catch(() => undefined);
  }
  if (!res?.ok) throw new Error(`the server's /v1/metrics did not answer (${res?.status ?? "timeout"})`);
  const body = (await res.json()) as { Gauges: { Name: string; Value: number }[] };
  const g = (name: string) => body.Gauges.find((x) => x.Name === name)?.Value ?? 0;
  return {
    rss: g("chronomad.runtime.rss_bytes"),
    heap: g("chronomad.runtime.heap_bytes"),
    lastIndex: g("chronomad.log.last_index"),
  };
}

/** CPU seconds (user + system) a process has used so far, from /proc; 0 where /proc is not there. */
export async function processCpuSeconds(pid: number): Promise<number> {
  try {
    const text = await readFile(`/proc/${pid}/stat`, "utf8");
    // Fields after the command name (which may hold spaces) start after the last ')'.
    const fields = text.slice(text.lastIndexOf(")") + 2).split(" ");
    const ticks = Number(fields[11]) + Number(fields[12]);
    return ticks / 100;
  } catch {
    return 0;
  }
}

/** Bytes of the files directly in `dir` (a file log's segments). */
export async function dirBytes(dir: string): Promise<number> {
  let total = 0;
  for (const name of await readdir(dir).catch(() => [] as string[])) {
    const s = await stat(join(dir, name)).catch(() => undefined);
    if (s?.isFile()) total += s.size;
  }
  return total;
}
