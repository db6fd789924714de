import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { benchFileLog } from "../bench/file-log-bench.ts";
import { benchKafkaLog } from "../bench/kafka-log-bench.ts";
import { benchReplay, benchVisible } from "../bench/store-bench.ts";

type Figures = Record<string, object | number>;

/**
 * `npm run bench [-- --json]`: the foundation's figures. Each part reports
 * to stderr as it goes, so the long run shows progress; the result goes to
 * stdout as a table, or as one JSON object with --json.
 */
export async function runBench(args: readonly string[], out: NodeJS.WritableStream): Promise<number> {
  const json = args.includes("--json");
  const unknown = args.filter((a) => a !== "--json");
  if (unknown.length) {
    process.stderr.write(`chronomad bench: unknown argument ${unknown[0]} (only --json)\n`);
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
  progress("replay of 1,000,000 records");
  figures.replay = await benchReplay();
  progress("append -> visible");
  const visible = await benchVisible();
  figures.visible_p50_ms = visible.visible_p50_ms;
  figures.visible_p99_ms = visible.visible_p99_ms;
  const brokers = process.env.KAFKA_BROKERS;
  if (brokers) {
    progress(`kafka log appends (${brokers})`);
    figures.kafka_log = await benchKafkaLog(brokers);
  } else {
    progress("kafka log skipped: KAFKA_BROKERS is not set");
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
  return 0;
}

function fmt(n: number): string {
  return Number.isInteger(n) ? n.toLocaleString("en-US") : n.toFixed(3);
}
