import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { benchAcl } from "../bench/acl-bench.ts";
import { benchCluster } from "../bench/cluster-bench.ts";
import type { EvalDeleteFigures } from "../bench/eval-delete-bench.ts";
import { benchEventStream } from "../bench/event-stream-bench.ts";
import { benchExport } from "../bench/export-bench.ts";
import { benchFileLog } from "../bench/file-log-bench.ts";
import { benchFilter } from "../bench/filter-bench.ts";
import { inFreshProcess } from "../bench/fresh-process.ts";
import { benchHeartbeats } from "../bench/heartbeat-bench.ts";
import { benchIdentity } from "../bench/identity-bench.ts";
import { benchKafkaLog } from "../bench/kafka-log-bench.ts";
import { benchScheduler } from "../bench/scheduler-bench.ts";
import { benchVisible } from "../bench/store-bench.ts";
import { benchVariables } from "../bench/variables-bench.ts";

type Figures = Record<string, object | number>;

const USAGE = `Usage: chronomad bench [--json] [--eval-delete | --all]

Runs chronomad's benchmarks (file log appends, replay, append-to-visible,
filters, event stream, heartbeats, ACLs, scheduler, variables, workload
identities; Kafka log and a three-server cluster when KAFKA_BROKERS names a
broker) and prints their figures as a table. Progress goes to stderr.

  --json          print the figures as one JSON object instead of a table
  --eval-delete   also delete 1,000,000 evaluations (several minutes)
  --all           every benchmark, --eval-delete included
  -h, --help      print this and exit
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
  const json = args.includes("--json");
  // The million-evaluation delete takes minutes: only on request.
  const evalDelete = args.includes("--eval-delete") || args.includes("--all");
  const known = ["--json", "--eval-delete", "--all"];
  const unknown = args.filter((a) => !known.includes(a));
  if (unknown.length) {
    process.stderr.write(
      `chronomad bench: unknown argument ${unknown[0]} (known: ${known.join(", ")})\n\n${USAGE}`,
    );
    return 2;
  }
  const progress = (what: string) => process.stderr.write(`bench: ${what}...\n`);
  const figures: Figures = {};

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
  if (!evalDelete) out.write(`${"eval_delete".padEnd(width)}  skipped (pass --eval-delete or --all)\n`);
  return 0;
}

function fmt(n: number): string {
  return Number.isInteger(n) ? n.toLocaleString("en-US") : n.toFixed(3);
}
