import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { benchAcl } from "../bench/acl-bench.ts";
import { benchCluster } from "../bench/cluster-bench.ts";
import type { CSIBenchFigures } from "../bench/csi-bench.ts";
import type { EvalDeleteFigures } from "../bench/eval-delete-bench.ts";
import { benchEventStream } from "../bench/event-stream-bench.ts";
import { benchExport } from "../bench/export-bench.ts";
import { benchFileLog } from "../bench/file-log-bench.ts";
import { benchFilter } from "../bench/filter-bench.ts";
import { inFreshProcess } from "../bench/fresh-process.ts";
import { benchHeartbeats } from "../bench/heartbeat-bench.ts";
import type { HistoryBenchFigures } from "../bench/history-bench.ts";
import { benchIdentity } from "../bench/identity-bench.ts";
import { benchKafkaLog } from "../bench/kafka-log-bench.ts";
import { benchLogOpen, DEFAULT_LOG_OPEN_SIZES_MB } from "../bench/log-open-bench.ts";
import { benchPipeline, type PipelineBenchOptions } from "../bench/pipeline-bench.ts";
import { benchPorts } from "../bench/ports-bench.ts";
import { benchPreferences, flatPreferencesFigures } from "../bench/preferences-bench.ts";
import { benchRegistration, type RegistrationBenchOptions } from "../bench/registration-bench.ts";
import { benchRpcCost, RPC_COST_METHODS } from "../bench/rpc-cost-bench.ts";
import { benchScheduler } from "../bench/scheduler-bench.ts";
import { benchVisible } from "../bench/store-bench.ts";
import { benchVariables } from "../bench/variables-bench.ts";

type Figures = Record<string, object | number>;

const USAGE = `Usage: chronomad bench [--json] [--eval-delete | --all]
       chronomad bench --ports [--json]
       chronomad bench --registration [--vs URL] [--jobs N] [--concurrency C]
                       [--warmup N] [--fsync always|never] [--pause-broker] [--json]
       chronomad bench --pipeline [--jobs N] [--nodes N] [--workers W]
                       [--fsync always|never] [--json]
       chronomad bench --preferences [--json]
       chronomad bench --log-open [--log-sizes MB,MB,...] [--json]
       chronomad bench --history-read [--transitions N] [--json]
       chronomad bench --csi [--json]
       chronomad bench --rpc-cost [--acl] [--methods M,M] [--cpu-profile DIR] [--json]

Runs chronomad's benchmarks (file log appends, replay, append-to-visible,
filters, event stream, heartbeats, ACLs, scheduler, job registrations,
variables, workload identities; Kafka log and a three-server cluster when
KAFKA_BROKERS names a broker) and prints their figures as a table. Progress
goes to stderr.

  --json          print the figures as one JSON object instead of a table
  --eval-delete   also delete 1,000,000 evaluations (several minutes)
  --all           every benchmark, --eval-delete included
  --ports         only the ports benchmark: placements/s of one job of
                  10,000 allocations on 5,000 nodes with a host network,
                  asking for no port, then for two dynamic ports, then
                  2,500 allocations with a static and a dynamic port
  -h, --help      print this and exit

The registration benchmark alone (--registration, implied by --vs): N batch
jobs (default 2,000) registered with PUT /v1/jobs by C keep-alive clients
(default 16) from a separate process; registrations/s, p50/p99 latency, and
the time from the first registration until no evaluation of those jobs is
pending. It uses only Nomad's API, so it measures any Nomad-API server.

  --vs URL        measure the server at URL (e.g. a Nomad 1.6.1 agent,
                  http://127.0.0.1:4646) instead of an in-process chronomad
                  on a fresh file log
  --jobs N        jobs to register (default 2000)
  --concurrency C clients in flight (default 16)
  --warmup N      register (and evaluate) N other jobs first, so that a
                  warmed-up server is measured (default 0: a fresh one)
  --fsync MODE    the in-process chronomad's --fsync (default always)
  --pause-broker  register with the eval broker paused (the write path
                  alone; evaluations are not waited for)

The evaluation pipeline alone (--pipeline): N batch jobs (default 2,000)
registered with the eval broker paused, then the broker resumed and the
drain timed (dequeue, compute on the scheduler threads, append, apply,
ack): evaluations/s, the server's CPU per evaluation (every thread), and
the appends and records per evaluation. Without nodes (the default) each
evaluation ends complete with a blocked follow-up.

  --jobs N        jobs to register (default 2000)
  --nodes N       ready nodes first (default 0); each job then places 10
                  allocations, and placements/s and refused plans are reported
  --workers W     scheduler workers (default 4)
  --fsync MODE    the in-process chronomad's --fsync (default always)

The history benchmark alone (--history-read): N allocation transitions
(default 2,000,000) over 20,000 allocations written straight to a file log,
one allocation with 1,000; a server replays it, restarts, and reads that
allocation's history. Heap and RSS after the restart (after full
collections) against an empty server's, the restart time, the read latency
of the whole history and of its newest page, and whether the answer equals
each change's entries concatenated (1) as a replay computes them.

The placement preferences benchmark alone (--preferences): the plan of a
job of 1,000 allocations over 5,000 nodes in four datacenters, computed
with a count only, then with a spread over datacenters and an affinity to
a node class (Nomad then scores max(count, 100) nodes per placement).

The CSI benchmark alone (--csi), in a fresh process: 1,000 volumes
claimed and released by one job of 1,000 allocations (per_alloc) on 100
simulated nodes running a CSI node and controller plugin: claims/s from
the job's registration, releases/s from its stop, and the time from one
allocation's stop to its claim freed (p50/p99); then 1,000 idle volumes:
RSS and heap growth per volume, and the volume watcher's passes (0).

The client RPC cost benchmark alone (--rpc-cost): 1,000 ready nodes with
one allocation each; then Node.UpdateStatus, Node.GetClientAllocs,
Alloc.GetAllocs, 20,000 calls each by 16 keep-alive clients in another
process, and Node.UpdateAlloc, 5,000 calls by 192 (it answers after its
50 ms window), then Node.Register of 5,000 nodes the server has not seen
(the simulator's body) by 16: the server's CPU time per call (every
thread, and the main thread's alone), calls/s, p50/p99 latency. With
--methods, only the methods named (e.g. Node.Register). With --acl, the
same on a server with ACLs enabled and bootstrapped (nodes call with
their secrets).
With --cpu-profile DIR, a CPU profile of the server's main thread for each
method's measured run is written to DIR/<method>.cpuprofile (the sampler
adds to the figures of that run).

The file log open benchmark alone (--log-open): one file log grown to each
size in turn (default 100, 1024 and 5120 MB of 1 KiB records; --log-sizes
to change them), opened in a fresh process (median of three, right
after it was written): the open alone, and the open plus reading the 10,000 records after
a snapshot near the end. Needs the largest size free in the temp dir;
the log is removed afterwards.
`;

/**
 * `npm run bench [-- --json]`: the foundation's figures. Each part reports
 * to stderr as it goes, so the long run shows progress; the result goes to
 * stdout as a table, or as one JSON object with --json.
 */
export async function runBench(args: readonly string[], out: NodeJS.WritableStream): Promise<number> {
  if (args.includes("--help") || args.includes("-h")) {
    out.write(USAGE);
    return 0;
  }
  const parsed = parseArgs(args);
  if (typeof parsed === "string") {
    process.stderr.write(`chronomad bench: ${parsed}\n\n${USAGE}`);
    return 2;
  }
  const { json, evalDelete, registration, preferences } = parsed;
  const progress = (what: string) => process.stderr.write(`bench: ${what}...\n`);
  const figures: Figures = {};
  if (parsed.historyRead !== undefined) {
    const perAlloc = Math.max(1, Math.round(parsed.historyRead / 20_000));
    progress(
      `history: ${(perAlloc * 20_000).toLocaleString("en")} allocation transitions, in a fresh process`,
    );
    figures.history = await inFreshProcess<HistoryBenchFigures>(
      {
        module: "./history-bench.ts",
        exported: "benchHistory",
        args: [
          {
            allocs: 20_000,
            transitionsPerAlloc: perAlloc,
            hotTransitions: 1_000,
            allocsPerRecord: 200,
            reads: 50,
          },
          null,
        ],
        progressAt: 1,
        label: "history",
      },
      ["--expose-gc"],
    );
    return report(figures, json, out, false);
  }
  if (parsed.csi) {
    progress("csi: 1,000 volumes claimed and released by a 1,000-allocation job, then 1,000 idle volumes");
    figures.csi = await inFreshProcess<CSIBenchFigures>(
      { module: "./csi-bench.ts", exported: "benchCSI", args: [{}], progressAt: 1, label: "csi" },
      ["--expose-gc"],
    );
    return report(figures, json, out, false);
  }
  if (parsed.rpcCost) {
    figures.rpc_cost = await benchRpcCost({
      acl: parsed.rpcCostAcl,
      cpuProfileDir: parsed.rpcCostProfileDir,
      methods: parsed.rpcCostMethods,
      progress,
    });
    return report(figures, json, out, false);
  }
  if (parsed.ports) {
    progress("ports: 10,000 allocations on 5,000 networked nodes, without then with ports");
    figures.ports = await benchPorts();
    return report(figures, json, out, false);
  }
  if (parsed.pipeline) {
    const { jobs = 2_000, nodes = 0 } = parsed.pipeline;
    progress(`evaluation pipeline: ${jobs.toLocaleString("en")} evaluations drained, ${nodes} nodes`);
    figures.pipeline = await benchPipeline({ ...parsed.pipeline, jobs, nodes });
    return report(figures, json, out, false);
  }
  if (registration) {
    figures.registration = await benchRegistration({ ...registration, progress });
    return report(figures, json, out, false);
  }
  if (parsed.logOpen) {
    figures.log_open = await benchLogOpen(parsed.logOpen, progress);
    return report(figures, json, out, false);
  }
  if (preferences) {
    progress(
      "placement preferences: 1,000 allocations over 5,000 nodes, count only, then spread and affinity",
    );
    figures.preferences = flatPreferencesFigures(await benchPreferences());
    return report(figures, json, out, false);
  }

  progress("file log appends");
  const dir = await mkdtemp(join(tmpdir(), "chronomad-bench-log-"));
  try {
    figures.file_log = await benchFileLog(dir);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
  progress("replay of 1,000,000 records (median of three, in a fresh process)");
  figures.replay = await inFreshProcess<Figures>({
    module: "./store-bench.ts",
    exported: "benchReplay",
    args: [],
    label: "replay",
  });
  progress("append -> visible");
  const visible = await benchVisible();
  figures.visible_p50_ms = visible.visible_p50_ms;
  figures.visible_p99_ms = visible.visible_p99_ms;
  progress("filter expressions: one compiled 3-clause filter over 1,000,000 evaluations");
  figures.filter = benchFilter();
  progress("event stream: delivery to 1 and 100 subscribers, idle subscriber memory");
  figures.event_stream = await benchEventStream();
  progress("client heartbeats over HTTP with 5,000 nodes, and alloc update coalescing");
  figures.heartbeat = await benchHeartbeats();
  progress("ACL: authorization per request, and GET /v1/jobs throughput with ACLs off and on");
  figures.acl = await benchAcl();
  progress("scheduler: one job of 10,000 allocations over 5,000 nodes, then 1,000 jobs of 10");
  figures.scheduler = await benchScheduler();
  progress("job registrations: 2,000 batch jobs, 16 clients, then their evaluations (no nodes)");
  figures.registration = await benchRegistration();
  progress("variables over HTTP: writes and reads of 2,000 paths, 16 in flight, encryption included");
  figures.variables = await benchVariables();
  progress("workload identities: JWTs signed while 10,000 allocations of 3 tasks are placed");
  figures.identity = await benchIdentity();
  progress("export to a file: a 60,000-record history from index 0, then append -> row lag of live writes");
  figures.export_file = await benchExport("file");
  const brokers = process.env.KAFKA_BROKERS;
  if (brokers) {
    progress(`kafka log appends (${brokers})`);
    figures.kafka_log = await benchKafkaLog(brokers);
    progress(`three servers on one topic: follower visibility and failover (${brokers})`);
    figures.cluster = await benchCluster(brokers);
    progress(`export to Kafka: the same history, then append -> row lag (${brokers})`);
    figures.export_kafka = await benchExport({ brokers });
  } else {
    progress("kafka log skipped: KAFKA_BROKERS is not set");
  }
  if (evalDelete) {
    progress("eval delete: 1,000,000 evaluations, in a fresh process (several minutes)");
    figures.eval_delete = await inFreshProcess<EvalDeleteFigures>({
      module: "./eval-delete-bench.ts",
      exported: "benchEvalDelete",
      args: [1_000_000, null],
      progressAt: 1,
      label: "eval delete",
    });
  } else {
    progress("eval delete skipped: pass --eval-delete or --all");
  }

  return report(figures, json, out, !evalDelete);
}

interface BenchArgs {
  readonly json: boolean;
  /** The million-evaluation delete takes minutes: only on request. */
  readonly evalDelete: boolean;
  /** Set when only the registration benchmark runs. */
  readonly registration: RegistrationBenchOptions | undefined;
  /** Set when only the evaluation pipeline benchmark runs. */
  readonly pipeline: PipelineBenchOptions | undefined;
  /** Set when only the placement preferences benchmark runs. */
  readonly preferences: boolean;
  /** Only the ports benchmark. */
  readonly ports: boolean;
  /** Only the CSI claims benchmark. */
  readonly csi: boolean;
  /** Only the client RPC cost benchmark. */
  readonly rpcCost: boolean;
  /** The client RPC cost benchmark on a server with ACLs on. */
  readonly rpcCostAcl: boolean;
  /** Where the client RPC cost benchmark writes its CPU profiles. */
  readonly rpcCostProfileDir: string | undefined;
  /** Only these methods of the client RPC cost benchmark. */
  readonly rpcCostMethods: readonly string[] | undefined;
  /** Only the file log open benchmark, at these sizes (MB). */
  readonly logOpen: readonly number[] | undefined;
  /** Only the history benchmark, with this many transitions. */
  readonly historyRead: number | undefined;
}

/** The arguments, or what is wrong with them. */
function parseArgs(args: readonly string[]): BenchArgs | string {
  const flags = [
    "--json",
    "--eval-delete",
    "--all",
    "--registration",
    "--pause-broker",
    "--preferences",
    "--ports",
    "--log-open",
    "--history-read",
    "--csi",
    "--pipeline",
    "--rpc-cost",
    "--acl",
  ];
  const valued = [
    "--vs",
    "--jobs",
    "--concurrency",
    "--warmup",
    "--fsync",
    "--transitions",
    "--nodes",
    "--workers",
    "--cpu-profile",
    "--methods",
  ];
  const seen = new Set<string>();
  const values = new Map<string, string>();
  let logSizes: string | undefined;
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    if (flags.includes(a)) seen.add(a);
    else if (a === "--log-sizes") {
      logSizes = args[++i];
      if (logSizes === undefined) return `${a} needs a value`;
    } else if (valued.includes(a)) {
      const v = args[++i];
      if (v === undefined) return `${a} needs a value`;
      values.set(a, v);
    } else return `unknown argument ${a} (known: ${[...flags, ...valued, "--log-sizes"].join(", ")})`;
  }
  const count = (flag: string, least: number) => {
    const text = values.get(flag);
    if (text === undefined) return undefined;
    const n = Number(text);
    return Number.isSafeInteger(n) && n >= least ? n : Number.NaN;
  };
  const jobs = count("--jobs", 1);
  const concurrency = count("--concurrency", 1);
  const warmup = count("--warmup", 0);
  if (Number.isNaN(jobs) || Number.isNaN(concurrency))
    return "--jobs and --concurrency take a positive integer";
  if (Number.isNaN(warmup)) return "--warmup takes a count (0 or more)";
  const fsync = values.get("--fsync");
  if (fsync !== undefined && fsync !== "always" && fsync !== "never") return "--fsync is always or never";
  const sizes = logSizes?.split(",").map(Number) ?? [...DEFAULT_LOG_OPEN_SIZES_MB];
  if (sizes.some((n) => !Number.isSafeInteger(n) || n < 1))
    return "--log-sizes takes sizes in MB separated by commas, e.g. 100,1024";
  if (logSizes !== undefined && !seen.has("--log-open")) return "--log-sizes is for --log-open";
  const url = values.get("--vs");
  const registrationOnly = seen.has("--registration") || url !== undefined;
  const transitions = count("--transitions", 20_000);
  if (Number.isNaN(transitions)) return "--transitions takes a count of 20,000 or more";
  if (transitions !== undefined && !seen.has("--history-read")) return "--transitions is for --history-read";
  const given = (a: string) => seen.has(a) || values.has(a);
  if (seen.has("--acl") && !seen.has("--rpc-cost")) return "--acl is for --rpc-cost";
  if (values.has("--cpu-profile") && !seen.has("--rpc-cost")) return "--cpu-profile is for --rpc-cost";
  if (values.has("--methods") && !seen.has("--rpc-cost")) return "--methods is for --rpc-cost";
  const methods = values.get("--methods")?.split(",");
  const unknownMethod = methods?.find((m) => !RPC_COST_METHODS.includes(m));
  if (unknownMethod !== undefined)
    return `--methods: unknown method ${unknownMethod} (known: ${RPC_COST_METHODS.join(", ")})`;
  const pipelineOnly = seen.has("--pipeline");
  if (pipelineOnly && registrationOnly)
    return "--pipeline and --registration (or --vs) are separate benchmarks";
  const nodes = count("--nodes", 0);
  const workers = count("--workers", 1);
  if (Number.isNaN(nodes)) return "--nodes takes a count (0 or more)";
  if (Number.isNaN(workers)) return "--workers takes a positive integer";
  const pipelineArgs = ["--nodes", "--workers"].filter(given);
  if (!pipelineOnly && pipelineArgs.length > 0) return `${pipelineArgs[0]} is for --pipeline`;
  const registrationArgs = ["--pause-broker", "--vs", "--concurrency", "--warmup"].filter(given);
  if (pipelineOnly && registrationArgs.length > 0)
    return `${registrationArgs[0]} is for the registration benchmark (--registration or --vs)`;
  if (!registrationOnly && registrationArgs.length > 0)
    return `${registrationArgs[0]} is for the registration benchmark (--registration or --vs)`;
  const shared = ["--jobs", "--fsync"].filter(given);
  if (!registrationOnly && !pipelineOnly && shared.length > 0)
    return `${shared[0]} is for the registration benchmark (--registration or --vs) or --pipeline`;
  return {
    json: seen.has("--json"),
    evalDelete: seen.has("--eval-delete") || seen.has("--all"),
    registration: registrationOnly
      ? { url, jobs, concurrency, warmup, fsync, pauseBroker: seen.has("--pause-broker") }
      : undefined,
    pipeline: pipelineOnly ? { jobs, nodes, workers, fsync } : undefined,
    preferences: seen.has("--preferences") && !registrationOnly,
    ports: seen.has("--ports"),
    csi: seen.has("--csi"),
    rpcCost: seen.has("--rpc-cost"),
    rpcCostAcl: seen.has("--acl"),
    rpcCostProfileDir: values.get("--cpu-profile"),
    rpcCostMethods: methods,
    logOpen: seen.has("--log-open") ? sizes : undefined,
    historyRead: seen.has("--history-read") ? (transitions ?? 2_000_000) : undefined,
  };
}

function report(
  figures: Figures,
  json: boolean,
  out: NodeJS.WritableStream,
  evalDeleteSkipped: boolean,
): number {
  if (json) {
    out.write(`${JSON.stringify(figures)}\n`);
    return 0;
  }
  const rows: [string, string][] = [];
  for (const [group, value] of Object.entries(figures)) {
    if (typeof value === "number") rows.push([group, fmt(value)]);
    else for (const [k, v] of Object.entries(value)) rows.push([`${group}.${k}`, fmt(Number(v))]);
  }
  const width = Math.max(...rows.map(([k]) => k.length));
  out.write(`${"figure".padEnd(width)}  value\n${"-".repeat(width)}  ${"-".repeat(12)}\n`);
  for (const [k, v] of rows) out.write(`${k.padEnd(width)}  ${v}\n`);
  if (evalDeleteSkipped) out.write(`${"eval_delete".padEnd(width)}  skipped (pass --eval-delete or --all)\n`);
  return 0;
}

function fmt(n: number): string {
  return Number.isInteger(n) ? n.toLocaleString("en-US") : n.toFixed(3);
}
