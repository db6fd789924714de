import { parseArgs } from "node:util";
import { pino } from "pino";
import { CSI_DETACH_BEHAVIOURS, type CSIDetachBehaviour } from "../nodesim/csi-plugins.ts";
import type { DriverOptions, Range } from "../nodesim/driver-options.ts";
import { progressLine } from "../nodesim/progress-line.ts";
import type { Encoding } from "../nodesim/rpc-client.ts";
import { NodeSimulator, type SimReport } from "../nodesim/simulator.ts";
import { parseDuration } from "../util/duration.ts";

const USAGE = `Usage: chronomad nodesim --server URL --nodes N [options]

Runs N simulated Nomad clients in this process against a server's client RPC:
they register, heartbeat at the TTL they are given, long-poll their
allocations, run them with a simulated driver and report them. Prints a
progress line every --report-every to stderr and the counters as JSON to
stdout when it ends (after --duration, or on Ctrl-C).

  --server URL                    the server (http://host:port)
  --nodes N                       how many nodes
  --seed S                        seed of every random choice (default "chronomad")
  --duration D                    stop after D (default: run until interrupted)
  --report-every D                progress line interval (default 10s; 0 for none)
  --prioritized-updates BOOL      Nomad PR 17354's update priorities (default true);
                                  false sends on every 200 ms tick with updates waiting
  --encoding json|msgpack         RPC body encoding (default json)
  --short-sockets N               sockets for registrations, their concurrency (default 128);
                                  long polls and alloc updates get one socket per node,
                                  and each node heartbeats on a connection of its own
  --max-query-time D              Node.GetClientAllocs MaxQueryTime (default 5m)
  --initial-heartbeat-stagger D   first heartbeat within D of registering (default 10s)
  --heartbeats-from thread|main   where the nodes' heartbeats go out from: a worker thread that
                                  does nothing else (default), so that a heartbeat's round trip
                                  is the server's, as a Nomad client (a process of its own) sees
                                  it, or this process's main thread, behind every node's
                                  allocation work; as bench:load's flag
  --disconnect-share F            share of nodes a disconnect wave silences (0..1)
  --disconnect-after D            when the wave starts (default 60s)
  --disconnect-for D              how long the nodes stay silent (default 30s)
  --datacenter NAME  --node-class NAME  --name-prefix P
  --cpu MHZ  --memory MB  --disk MB
  --start-time R                  driver event to "Started" (a duration or min..max)
  --batch-run-for R               batch task run time, unless the task's run_for says
  --failure-rate F                share of tasks that fail (batch exit 1, service crash)
  --event-interval D              low-priority activity while running: a template re-render
                                  (hook message, then a signal) per allocation every D
                                  (default 60s; 0: none)
  --restart-delay D               delay before a restart (default: the group's restart policy)
  --csi-node-plugins IDS          CSI plugins (comma-separated IDs) every node fingerprints a
                                  healthy node plugin of: its allocations claim their csi
                                  volumes at start and unpublish them at their end
  --csi-controller-plugins IDS    CSI plugins every node fingerprints a healthy controller of
  --csi-detach ack|fail|ignore    what the plugins do with the server's detach calls: succeed
                                  (default), answer a plugin error, or never answer
  --deregister                    deregister the nodes when stopping
  -h, --help                      print this and exit
`;

const OPTIONS = {
  server: { type: "string" },
  nodes: { type: "string" },
  seed: { type: "string" },
  duration: { type: "string" },
  "report-every": { type: "string" },
  "prioritized-updates": { type: "string" },
  encoding: { type: "string" },
  "short-sockets": { type: "string" },
  "max-query-time": { type: "string" },
  "initial-heartbeat-stagger": { type: "string" },
  "heartbeats-from": { type: "string" },
  "disconnect-share": { type: "string" },
  "disconnect-after": { type: "string" },
  "disconnect-for": { type: "string" },
  datacenter: { type: "string" },
  "node-class": { type: "string" },
  "name-prefix": { type: "string" },
  cpu: { type: "string" },
  memory: { type: "string" },
  disk: { type: "string" },
  "start-time": { type: "string" },
  "batch-run-for": { type: "string" },
  "failure-rate": { type: "string" },
  "event-interval": { type: "string" },
  "restart-delay": { type: "string" },
  "csi-node-plugins": { type: "string" },
  "csi-controller-plugins": { type: "string" },
  "csi-detach": { type: "string" },
  deregister: { type: "boolean" },
  help: { type: "boolean", short: "h" },
} as const;

/**
 * `chronomad nodesim`: resolves with the exit code (0 done, 1 failed, 2
 * usage). `stop` ends the run as Ctrl-C does (for a caller that embeds it).
 */
export async function runNodesim(
  args: readonly string[],
  out: NodeJS.WritableStream,
  err: NodeJS.WritableStream = process.stderr,
  stop?: AbortSignal,
): Promise<number> {
  let sim: NodeSimulator;
  let plan: {
    durationMs?: number;
    reportEveryMs: number;
    wave?: { share: number; afterMs: number; forMs: number };
  };
  let deregister = false;
  try {
    const { values: v } = parseArgs({ args: [...args], options: OPTIONS, strict: true });
    if (v.help) {
      out.write(USAGE);
      return 0;
    }
    if (!v.server) throw new Error("--server is required");
    const nodes = integer("--nodes", v.nodes, undefined);
    const share =
      v["disconnect-share"] === undefined ? 0 : fraction("--disconnect-share", v["disconnect-share"]);
    plan = {
      durationMs: v.duration === undefined ? undefined : duration("--duration", v.duration),
      reportEveryMs: duration("--report-every", v["report-every"] ?? "10s"),
      wave:
        share > 0
          ? {
              share,
              afterMs: duration("--disconnect-after", v["disconnect-after"] ?? "60s"),
              forMs: duration("--disconnect-for", v["disconnect-for"] ?? "30s"),
            }
          : undefined,
    };
    deregister = v.deregister ?? false;
    const driver: Partial<DriverOptions> = {
      ...(v["start-time"] !== undefined && { start: range("--start-time", v["start-time"]) }),
      ...(v["batch-run-for"] !== undefined && { batchRunFor: range("--batch-run-for", v["batch-run-for"]) }),
      ...(v["failure-rate"] !== undefined && { failureRate: fraction("--failure-rate", v["failure-rate"]) }),
      ...(v["event-interval"] !== undefined && {
        eventInterval: duration("--event-interval", v["event-interval"]),
      }),
      ...(v["restart-delay"] !== undefined && {
        restartDelay: duration("--restart-delay", v["restart-delay"]),
      }),
    };
    sim = new NodeSimulator({
      server: v.server,
      nodes,
      seed: v.seed,
      prioritizedUpdates: bool("--prioritized-updates", v["prioritized-updates"] ?? "true"),
      encoding: encoding(v.encoding ?? "json"),
      shortSockets: integer("--short-sockets", v["short-sockets"], 128),
      maxQueryTimeMs: duration("--max-query-time", v["max-query-time"] ?? "5m"),
      initialHeartbeatStaggerMs: duration(
        "--initial-heartbeat-stagger",
        v["initial-heartbeat-stagger"] ?? "10s",
      ),
      // Main by default, as before: a bundled build (the Nomad api suite's shim) has no worker entry file.
      heartbeatThread: heartbeatsFrom(v["heartbeats-from"] ?? "thread") === "thread",
      shape: {
        ...(v.datacenter !== undefined && { datacenter: v.datacenter }),
        ...(v["node-class"] !== undefined && { nodeClass: v["node-class"] }),
        ...(v["name-prefix"] !== undefined && { namePrefix: v["name-prefix"] }),
        ...(v.cpu !== undefined && { cpu: integer("--cpu", v.cpu, undefined) }),
        ...(v.memory !== undefined && { memoryMB: integer("--memory", v.memory, undefined) }),
        ...(v.disk !== undefined && { diskMB: integer("--disk", v.disk, undefined) }),
        ...(v["csi-node-plugins"] !== undefined && {
          csiNodePlugins: pluginIDs("--csi-node-plugins", v["csi-node-plugins"]),
        }),
        ...(v["csi-controller-plugins"] !== undefined && {
          csiControllerPlugins: pluginIDs("--csi-controller-plugins", v["csi-controller-plugins"]),
        }),
      },
      csiDetach: csiDetach(v["csi-detach"] ?? "ack"),
      driver,
      logger: pino({ level: "warn" }, process.stderr),
    });
  } catch (e) {
    err.write(`chronomad nodesim: ${(e as Error).message}\n\n${USAGE}`);
    return 2;
  }

  let last: SimReport | undefined;
  // A ref'd interval: the simulator's own timers do not keep the process alive.
  const ticker = setInterval(
    () => {
      if (plan.reportEveryMs <= 0) return;
      const now = sim.report();
      err.write(`${progressLine(now, last)}\n`);
      last = now;
    },
    plan.reportEveryMs > 0 ? plan.reportEveryMs : 60_000,
  );
  let finish: () => void = () => undefined;
  const finished = new Promise<void>((resolve) => {
    finish = resolve;
  });
  const onSignal = () => finish();
  process.once("SIGINT", onSignal);
  process.once("SIGTERM", onSignal);
  if (stop?.aborted) finish();
  stop?.addEventListener("abort", onSignal, { once: true });
  const timers: NodeJS.Timeout[] = [];
  try {
    err.write(
      `nodesim: registering ${sim.nodes.length} nodes, heartbeating from ${sim.heartbeatThread ? "a thread of their own" : "the main thread"}\n`,
    );
    await Promise.race([sim.start(), finished]);
    err.write(`nodesim: ${sim.nodes.filter((n) => n.state === "up").length} nodes registered\n`);
    const wave = plan.wave;
    if (wave) {
      timers.push(
        setTimeout(() => {
          err.write(
            `nodesim: disconnect wave: ${wave.share * 100}% of the nodes silent for ${wave.forMs / 1000}s\n`,
          );
          void sim
            .disconnectWave({ share: wave.share, durationMs: wave.forMs })
            .then((r) =>
              err.write(
                `nodesim: ${r.nodes.length} nodes back; reconnect orders ${JSON.stringify(r.orders)}\n`,
              ),
            );
        }, wave.afterMs),
      );
    }
    if (plan.durationMs !== undefined) timers.push(setTimeout(finish, plan.durationMs));
    await finished;
  } finally {
    for (const t of timers) clearTimeout(t);
    clearInterval(ticker);
    process.off("SIGINT", onSignal);
    process.off("SIGTERM", onSignal);
    stop?.removeEventListener("abort", onSignal);
    await sim.stop({ deregister });
  }
  const thread = sim.heartbeatThread;
  out.write(
    `${JSON.stringify({
      ...sim.report(),
      heartbeats_from: thread ? "thread" : "main",
      // The heartbeats the thread sent, counted with the others in `rpc`.
      ...(thread && { heartbeat_thread_calls: thread.calls }),
    })}\n`,
  );
  return 0;
}

function duration(flag: string, text: string): number {
  const ms = parseDuration(text);
  if (ms === undefined || ms < 0)
    throw new Error(`${flag} must be a duration such as 30s or 5m, not "${text}"`);
  return ms;
}

/** `1s` or `300ms..1.5s`. */
function range(flag: string, text: string): Range {
  const [a, b] = text.split("..");
  const min = duration(flag, a!);
  const max = b === undefined ? min : duration(flag, b);
  if (max < min) throw new Error(`${flag}: ${text} ends before it starts`);
  return { min, max };
}

function integer(flag: string, text: string | undefined, fallback: number | undefined): number {
  if (text === undefined) {
    if (fallback === undefined) throw new Error(`${flag} is required`);
    return fallback;
  }
  const n = Number(text);
  if (!Number.isSafeInteger(n) || n < 1) throw new Error(`${flag} must be a positive integer, not "${text}"`);
  return n;
}

function fraction(flag: string, text: string): number {
  const n = Number(text);
  if (!Number.isFinite(n) || n < 0 || n > 1)
    throw new Error(`${flag} must be between 0 and 1, not "${text}"`);
  return n;
}

function bool(flag: string, text: string): boolean {
  if (text === "true") return true;
  if (text === "false") return false;
  throw new Error(`${flag} must be true or false, not "${text}"`);
}

/** `ebs` or `ebs,nfs`: distinct plugin IDs, none empty. */
function pluginIDs(flag: string, text: string): string[] {
  const ids = text.split(",").map((id) => id.trim());
  if (ids.some((id) => id === ""))
    throw new Error(`${flag} must be plugin IDs separated by commas, not "${text}"`);
  const twice = ids.find((id, i) => ids.indexOf(id) !== i);
  if (twice !== undefined) throw new Error(`${flag} lists plugin ${twice} twice`);
  return ids;
}

function csiDetach(text: string): CSIDetachBehaviour {
  const found = CSI_DETACH_BEHAVIOURS.find((b) => b === text);
  if (found === undefined)
    throw new Error(`--csi-detach must be one of ${CSI_DETACH_BEHAVIOURS.join(", ")}, not "${text}"`);
  return found;
}

function heartbeatsFrom(text: string): "thread" | "main" {
  if (text === "thread" || text === "main") return text;
  throw new Error(`--heartbeats-from must be thread or main, not "${text}"`);
}

function encoding(text: string): Encoding {
  if (text === "json" || text === "msgpack") return text;
  throw new Error(`--encoding must be json or msgpack, not "${text}"`);
}
