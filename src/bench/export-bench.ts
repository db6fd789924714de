import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pino } from "pino";
import { allSchemas } from "../../streams/index.ts";
import { ExportStats, runExport } from "../cli/export-command.ts";
import { EnvelopeCodec } from "../codec/envelope-codec.ts";
import { openLog } from "../log/open-log.ts";
import { mixedHistory } from "./mixed-history.ts";
import { spawnServer } from "./server-process.ts";

export interface ExportFigures {
  /** Records in the history exported from index 0. */
  readonly records: number;
  readonly rows: number;
  /** Rows per second from a standing start to the log's end (the server in its own process). */
  readonly rows_per_s: number;
  /** Live writes (one namespace each, 200 a second): from the append to the row's commit. */
  readonly lag_p50_ms: number;
  readonly lag_p99_ms: number;
}

const RECORDS = 60_000;
const LIVE_WRITES = 1_000;
const LIVE_PER_S = 200;

/**
 * The exporter against a server in its own process: first a backlog (a
 * mixed history of every event type) from index 0, for throughput; then,
 * resumed at the end, live writes at a steady rate, for the lag from the
 * append (the record's time) to the commit of its row. `to` names the
 * target: a file under the bench's directory, or a Kafka topic prefix.
 */
export async function benchExport(to: "file" | { brokers: string }): Promise<ExportFigures> {
  const dir = await mkdtemp(join(tmpdir(), "chronomad-bench-export-"));
  const logger = pino({ level: "warn" });
  try {
    const log = await openLog(`file:${join(dir, "data", "log")}`, { logger, fsync: "never" });
    const codec = new EnvelopeCodec(allSchemas);
    let batch: Uint8Array[] = [];
    for (const e of mixedHistory(RECORDS)) {
      batch.push(codec.encode(e));
      if (batch.length === 1000) {
        await log.append(batch);
        batch = [];
      }
    }
    if (batch.length > 0) await log.append(batch);
    await log.close();

    const server = await spawnServer("export-bench", ["--data-dir", join(dir, "data"), "--fsync", "never"]);
    try {
      const target =
        to === "file"
          ? `file:${join(dir, "changes.ndjson")}`
          : `kafka://${to.brokers}/chronomad-bench-export-${Date.now()}`;
      const quiet = { write: () => true } as unknown as NodeJS.WritableStream;
      /** Runs an exporter while `work` runs, until it has committed the index `work` resolves with. */
      const exportWhile = async (stats: ExportStats, work: () => Promise<number>) => {
        const stop = new AbortController();
        const running = runExport(["--to", target, "--server", server.url], quiet, stop.signal, stats);
        const until = await work();
        while (stats.index < until) await new Promise((r) => setTimeout(r, 20));
        stop.abort();
        await running;
      };

      const backlog = new ExportStats();
      // A write after the history: its index is where the backlog ends.
      const end = await writeNamespace(server.url, "backlog-end");
      const started = performance.now();
      await exportWhile(backlog, async () => end);
      const seconds = (performance.now() - started) / 1000;

      const live = new ExportStats();
      await exportWhile(live, async () => {
        let index = 0;
        for (let i = 0; i < LIVE_WRITES; i++) {
          index = await writeNamespace(server.url, `lag-${i}`);
          await new Promise((r) => setTimeout(r, 1000 / LIVE_PER_S));
        }
        return index;
      });
      return {
        records: end,
        rows: backlog.rows,
        rows_per_s: Math.round(backlog.rows / seconds),
        lag_p50_ms: live.lagMs(0.5),
        lag_p99_ms: live.lagMs(0.99),
      };
    } finally {
      server.child.kill("SIGTERM");
      await server.exited;
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** Writes a namespace; resolves with the index of its record. */
async function writeNamespace(url: string, name: string): Promise<number> {
  const res = await fetch(`${url}/v1/namespace/${name}`, { method: "PUT", body: "{}" });
  if (!res.ok) throw new Error(`namespace write: ${res.status} ${await res.text()}`);
  const index = Number(res.headers.get("x-nomad-index"));
  if (!(index > 0)) throw new Error("namespace write answered no X-Nomad-Index");
  return index;
}
