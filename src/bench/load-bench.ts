import { mkdir, writeFile } from "node:fs/promises";
import { availableParallelism } from "node:os";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { parseArgs } from "node:util";
import type { WorkloadMix } from "../nodesim/workload.ts";
import { parseDuration } from "../util/duration.ts";
import { compare, goals, type LoadBenchReport, toMarkdown } from "./load-report.ts";
import { type LoadRunFigures, type LoadRunOptions, loadRun } from "./load-run.ts";

const USAGE = `Usage: npm run bench:load -- [options]

Starts a server process on a fresh file log, runs N simulated nodes against
it, places a mix of system, service and batch jobs (about 10 allocations per
node), measures a steady state, injects a disconnect wave and times the
convergence after it; counts and replays the produced log. Once with
prioritized client updates, once without. Writes JSON and markdown under
bench-results/ and prints the markdown.

  --nodes N          simulated nodes (default 5000)
  --seed S           simulation seed (default "load-bench")
  --only on|off      run one mode only
  --steady D         steady-state measurement (default 20s)
  --place-timeout D  longest wait for every allocation to run (default 120s)
  --converge-timeout D  longest wait for convergence after the wave (default 60s)
  --wave-share F     share of nodes the wave silences (default 0.1)
  --wave-for D       how long they stay silent (default 60s: past TTL + grace)
  --heartbeats-per-second N  the server's max_heartbeats_per_second (default 500:
                     a 10-20 s TTL at 5,000 nodes)
  --heartbeat-grace D  the server's heartbeat_grace (default 10s, Nomad's)
  --heartbeats-from thread|main  where the simulated nodes' heartbeats go out
                     from: a worker thread that does nothing else (default: the
                     round trip is the server's, as a Nomad client, a process of
                     its own, sees it), or the simulator's main thread, behind
                     every node's allocation work (as before)
  --sim-nice N       nice value (0 to 19, default 0) of the simulator's main
                     thread, the nodes' allocation work, from once the nodes'
                     heartbeat thread runs (Linux): the simulator stands for
                     thousands of other machines, yet shares the server's
                     cores here; above 0 it takes them only when the server
                     leaves them, while the heartbeats keep the priority
                     they had. Needs --heartbeats-from thread
  --out DIR          where the report goes (default bench-results)
  --keep-data        leave each run's server data directory (log, snapshots) in place
  --burst-only       stop once the placement burst is measured: no steady state,
                     no disconnect wave, no replay (for comparing bursts quickly;
                     the goals on those are then not judged)

The server process gets extra node flags from CHRONOMAD_BENCH_SERVER_NODE_FLAGS
(for example "--cpu-prof --cpu-prof-dir=/tmp/prof").
`;

/** `npm run bench:load`: resolves with the exit code. */
export async function runLoadBench(args: readonly string[]): Promise<number> {
  let v: ReturnType<typeof parse>;
  try {
    v = parse(args);
  } catch (err) {
    process.stderr.write(`bench:load: ${(err as Error).message}\n\n${USAGE}`);
    return 2;
  }
  const started = performance.now();
  const startedAt = new Date().toISOString();
  const perNode = Math.max(1, Math.round(v.nodes / 5));
  const mix: WorkloadMix = {
    systemJobs: 2,
    serviceJobs: 25,
    serviceCount: perNode,
    tolerantShare: 0.5,
    batchJobs: 15,
    batchCount: perNode,
    // Longer than the run: batch allocations stay running, so they count toward "placed and running".
    batchRunFor: "1h",
  };
  const settings = {
    nodes: v.nodes,
    seed: v.seed,
    mix,
    steady_ms: v.steadyMs,
    wave: { share: v.waveShare, duration_ms: v.waveForMs },
    // Nomad's default of 50 heartbeats/s gives 5,000 nodes a 100-200 s TTL; 500/s gives 10-20 s, so a
    // missed heartbeat fits in the run. The grace is Nomad's default (10 s): a node declared down
    // before the disconnect wave means the server kept a heartbeat waiting that long.
    server_args: [
      "--max-heartbeats-per-second",
      String(v.heartbeatsPerSecond),
      "--heartbeat-grace",
      `${v.heartbeatGraceMs}ms`,
    ],
    driver: { failureRate: 0.005, eventInterval: 60_000 },
    heartbeats_from: v.heartbeatThread ? "thread" : "main",
    sim_nice: v.simNice,
    burst_only: v.burstOnly,
  };
  const runs: LoadRunFigures[] = [];
  for (const prioritized of v.modes) {
    const label = `prioritized ${prioritized ? "on" : "off"}`;
    const options: LoadRunOptions = {
      nodes: v.nodes,
      seed: v.seed,
      prioritized,
      mix,
      steadyMs: v.steadyMs,
      wave: { share: v.waveShare, durationMs: v.waveForMs },
      serverArgs: settings.server_args,
      driver: settings.driver,
      heartbeatThread: v.heartbeatThread,
      simNice: v.simNice,
      burstOnly: v.burstOnly,
      placeTimeoutMs: v.placeTimeoutMs,
      convergeTimeoutMs: v.convergeTimeoutMs,
      keepData: v.keepData,
      progress: (m) =>
        process.stderr.write(
          `bench:load [${label}] ${m} (${Math.round((performance.now() - started) / 1000)}s)\n`,
        ),
    };
    runs.push(await loadRun(options));
  }
  const on = runs.find((r) => r.prioritized_updates);
  const off = runs.find((r) => !r.prioritized_updates);
  const comparison = on && off ? compare(on, off) : null;
  const totalSeconds = (performance.now() - started) / 1000;
  const report: LoadBenchReport = {
    started_at: startedAt,
    machine: {
      cpus: availableParallelism(),
      node: process.version,
      platform: `${process.platform}/${process.arch}`,
    },
    settings: { ...settings, total_seconds: Math.round(totalSeconds) },
    runs,
    comparison,
    goals: goals(runs, comparison, totalSeconds),
  };
  await mkdir(v.out, { recursive: true });
  const stamp = startedAt.replace(/[:.]/g, "-");
  const base = join(v.out, `load-${stamp}`);
  const markdown = toMarkdown(report);
  await writeFile(`${base}.json`, `${JSON.stringify(report, null, 2)}\n`);
  await writeFile(`${base}.md`, markdown);
  process.stdout.write(markdown);
  process.stderr.write(`bench:load: wrote ${base}.json and ${base}.md\n`);
  return 0;
}

function parse(args: readonly string[]) {
  const { values } = parseArgs({
    args: [...args],
    options: {
      nodes: { type: "string" },
      seed: { type: "string" },
      only: { type: "string" },
      steady: { type: "string" },
      "wave-share": { type: "string" },
      "wave-for": { type: "string" },
      "heartbeats-per-second": { type: "string" },
      "heartbeat-grace": { type: "string" },
      out: { type: "string" },
      "keep-data": { type: "boolean" },
      "heartbeats-from": { type: "string" },
      "sim-nice": { type: "string" },
      "burst-only": { type: "boolean" },
      "place-timeout": { type: "string" },
      "converge-timeout": { type: "string" },
    },
    strict: true,
  });
  const nodes = Number(values.nodes ?? 5000);
  if (!Number.isSafeInteger(nodes) || nodes < 1) throw new Error(`--nodes must be a positive integer`);
  const ms = (flag: string, text: string) => {
    const d = parseDuration(text);
    if (d === undefined || d < 0) throw new Error(`${flag} must be a duration such as 30s`);
    return d;
  };
  const positive = (flag: string, text: string) => {
    const n = Number(text);
    if (!Number.isFinite(n) || n <= 0) throw new Error(`${flag} must be a positive number`);
    return n;
  };
  const waveShare = Number(values["wave-share"] ?? 0.1);
  if (!(waveShare >= 0 && waveShare <= 1)) throw new Error("--wave-share must be between 0 and 1");
  const from = values["heartbeats-from"] ?? "thread";
  if (from !== "thread" && from !== "main") throw new Error("--heartbeats-from must be thread or main");
  const simNice = Number(values["sim-nice"] ?? 0);
  if (!Number.isSafeInteger(simNice) || simNice < 0 || simNice > 19)
    throw new Error("--sim-nice must be a whole number from 0 to 19");
  if (simNice > 0 && from !== "thread")
    throw new Error("--sim-nice needs --heartbeats-from thread: the heartbeats would go out behind it");
  if (values.only !== undefined && values.only !== "on" && values.only !== "off")
    throw new Error("--only must be on or off");
  return {
    nodes,
    seed: values.seed ?? "load-bench",
    modes: values.only === undefined ? [true, false] : [values.only === "on"],
    steadyMs: ms("--steady", values.steady ?? "20s"),
    placeTimeoutMs: ms("--place-timeout", values["place-timeout"] ?? "120s"),
    convergeTimeoutMs: ms("--converge-timeout", values["converge-timeout"] ?? "60s"),
    waveShare,
    waveForMs: ms("--wave-for", values["wave-for"] ?? "60s"),
    heartbeatsPerSecond: positive("--heartbeats-per-second", values["heartbeats-per-second"] ?? "500"),
    heartbeatGraceMs: ms("--heartbeat-grace", values["heartbeat-grace"] ?? "10s"),
    out: resolve(values.out ?? "bench-results"),
    keepData: values["keep-data"] === true,
    heartbeatThread: from === "thread",
    simNice,
    burstOnly: values["burst-only"] === true,
  };
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  // Exit on a signal so the "exit" handlers stop the server child.
  for (const signal of ["SIGINT", "SIGTERM"] as const) process.once(signal, () => process.exit(130));
  process.exitCode = await runLoadBench(process.argv.slice(2));
}
