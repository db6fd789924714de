import { parseArgs } from "node:util";
import type { ChangeEvent } from "../events/frames.ts";
import { TOPIC_NAMES } from "../events/topics.ts";
import { debeziumRow, flatRow } from "../export/export-row.ts";
import { FileSink } from "../export/file-sink.ts";
import { KafkaSink } from "../export/kafka-sink.ts";
import {
  type ExportEnvelope,
  type ExportFormat,
  type ExportMessage,
  type ExportSink,
  ExportTargetBusy,
} from "../export/sink.ts";
import { LogError } from "../log/event-log.ts";
import { parseKafkaUrl } from "../log/kafka/index.ts";

const USAGE = `Usage: chronomad export --to <file:PATH | kafka://host:port/topic> [options]

Streams every change of the cluster's tables (creations, updates and
deletes, with who made each and why) from a server's complete change feed
into a file or Kafka, one row per change. Resumes from its own committed
position after a stop or a crash, delivering every index exactly once.
Runs until SIGINT/SIGTERM. The row layout is in the README ("Export rows").

  --to URL            file:PATH (NDJSON, or msgpack maps with --format
                      msgpack; position in PATH.position, lock in PATH.lock)
                      or kafka://host:port[,host:port]/topic (one
                      transaction per batch; the position is read back
                      from the topic)
  --server URL        the chronomad server (default http://127.0.0.1:4646)
  --token SECRET      an ACL token allowed every topic (default NOMAD_TOKEN)
  --format F          json (default) or msgpack
  --envelope E        flat (default): one row of scalar columns; debezium:
                      {before, after, op, ts_ms, source} as Debezium writes
  --topics T,T        only these topics (default: all)
  --topic-per-table   Kafka: each topic's rows in <topic>.<Topic>
                      (e.g. changes.Allocation); <topic> keeps the position
  --compact           Kafka: create topics with cleanup.policy=compact
  -h, --help          this text

Exit status: 0 once stopped by a signal; 1 when the target is refused (in
use by another exporter, or holding another cluster's history); 2 on bad
arguments.
`;

/** Rows waiting for a commit before the stream is read no further. */
const MAX_PENDING_ROWS = 20_000;
const RECONNECT_MS = 1000;

interface ExportOptions {
  readonly to: string;
  readonly server: string;
  readonly token: string | undefined;
  readonly format: ExportFormat;
  readonly envelope: ExportEnvelope;
  readonly topics: readonly string[];
  readonly topicPerTable: boolean;
  readonly compact: boolean;
}

/** A reason to stop for good rather than reconnect. */
class Refused extends Error {}

/** `chronomad export`: resolves with the exit code once stopped (0), or 1/2 on errors. */
export async function runExport(
  args: readonly string[],
  out: NodeJS.WritableStream,
  signal?: AbortSignal,
  stats = new ExportStats(),
): Promise<number> {
  if (args.includes("--help") || args.includes("-h")) {
    out.write(USAGE);
    return 0;
  }
  let opts: ExportOptions;
  try {
    opts = parse(args);
  } catch (err) {
    out.write(`chronomad export: ${(err as Error).message}\n\n${USAGE}`);
    return 2;
  }
  let sink: ExportSink;
  try {
    sink = opts.to.startsWith("kafka://")
      ? await KafkaSink.open(opts.to, opts)
      : await FileSink.open(opts.to.slice("file:".length), opts.format);
  } catch (err) {
    if (!(err instanceof ExportTargetBusy)) out.write(`chronomad export: cannot open ${opts.to}: `);
    out.write(`${describeError(err)}\n`);
    return 1;
  }
  const stop = new AbortController();
  const onSignal = () => stop.abort();
  process.once("SIGTERM", onSignal);
  process.once("SIGINT", onSignal);
  signal?.addEventListener("abort", onSignal);
  try {
    out.write(`export: from ${opts.server} to ${opts.to}, after index ${(await sink.position()).index}\n`);
    let lastError = "";
    while (!stop.signal.aborted) {
      try {
        await follow(opts, sink, out, stop.signal, stats);
        lastError = "";
      } catch (err) {
        if (err instanceof Refused || err instanceof ExportTargetBusy) {
          out.write(`chronomad export: ${err.message}\n`);
          return 1;
        }
        if (stop.signal.aborted) break;
        // Said once per distinct cause, not once a second while a server is down.
        const why = describeError(err);
        if (why !== lastError) out.write(`export: ${why}; retrying every ${RECONNECT_MS / 1000}s\n`);
        lastError = why;
      }
      await new Promise((r) => setTimeout(r, RECONNECT_MS));
    }
    out.write(`export: stopped at index ${(await sink.position()).index}; ${stats.summary()}\n`);
    return 0;
  } finally {
    process.off("SIGTERM", onSignal);
    process.off("SIGINT", onSignal);
    signal?.removeEventListener("abort", onSignal);
    await sink.close();
  }
}

/** fetch() says only "fetch failed"; the reason (refused, unknown host, reset) is its cause. */
function describeError(err: unknown): string {
  const e = err as Error & { cause?: unknown };
  const cause = e.cause as (Error & { code?: string }) | undefined;
  if (cause && typeof cause === "object" && "message" in cause) return `${e.message}: ${cause.message}`;
  return e.message ?? String(err);
}

function parse(args: readonly string[]): ExportOptions {
  const { values } = parseArgs({
    args: [...args],
    options: {
      to: { type: "string" },
      server: { type: "string", default: "http://127.0.0.1:4646" },
      token: { type: "string" },
      format: { type: "string", default: "json" },
      envelope: { type: "string", default: "flat" },
      topics: { type: "string" },
      "topic-per-table": { type: "boolean", default: false },
      compact: { type: "boolean", default: false },
    },
    strict: true,
  });
  if (!values.to) throw new Error("--to is required");
  if (values.to.startsWith("kafka://")) {
    try {
      parseKafkaUrl(values.to);
    } catch (err) {
      if (err instanceof LogError) throw new Error(`--to: ${err.message}`);
      throw err;
    }
  } else if (!values.to.startsWith("file:") || values.to === "file:") {
    throw new Error(`--to must be file:PATH or kafka://host:port/topic, not "${values.to}"`);
  } else if (values["topic-per-table"] || values.compact) {
    throw new Error("--topic-per-table and --compact are for kafka:// targets");
  }
  if (values.format !== "json" && values.format !== "msgpack") {
    throw new Error(`--format must be json or msgpack, not "${values.format}"`);
  }
  if (values.envelope !== "flat" && values.envelope !== "debezium") {
    throw new Error(`--envelope must be flat or debezium, not "${values.envelope}"`);
  }
  const topics = values.topics ? values.topics.split(",").map((t) => t.trim()) : [];
  for (const t of topics) {
    if (!TOPIC_NAMES.has(t)) throw new Error(`unknown topic "${t}" (known: ${[...TOPIC_NAMES].join(", ")})`);
  }
  try {
    new URL(values.server!);
  } catch {
    throw new Error(`--server must be a URL such as http://127.0.0.1:4646, not "${values.server}"`);
  }
  return {
    to: values.to,
    server: values.server!.replace(/\/$/, ""),
    token: values.token ?? process.env.NOMAD_TOKEN,
    format: values.format,
    envelope: values.envelope,
    topics,
    topicPerTable: values["topic-per-table"] ?? false,
    compact: values.compact ?? false,
  };
}

/** Rows delivered, and the lag from each record's append (its envelope time) to its row's commit. */
export class ExportStats {
  rows = 0;
  /** The last index committed. */
  index = 0;
  private readonly lags: number[] = [];

  note(
    index: number,
    messages: readonly ExportMessage[],
    committedAt: number,
    appendedAt: readonly number[],
  ): void {
    this.index = index;
    this.rows += messages.length;
    for (const at of appendedAt) this.lags.push(committedAt - at);
    // Bounded: the latest samples speak for the lag now.
    if (this.lags.length > 100_000) this.lags.splice(0, this.lags.length - 100_000);
  }

  lagMs(p: number): number {
    if (this.lags.length === 0) return 0;
    const sorted = [...this.lags].sort((a, b) => a - b);
    return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(p * sorted.length) - 1))]!;
  }

  summary(): string {
    return `${this.rows.toLocaleString("en-US")} rows; append-to-row lag p50 ${this.lagMs(0.5)} ms, p99 ${this.lagMs(0.99)} ms`;
  }
}

interface ChangeFrame {
  readonly Index: number;
  readonly Time: string;
  readonly Events: readonly ChangeEvent[];
  readonly Error?: string;
}

/** Reads the change feed after the sink's position and commits in batches until the stream ends. */
async function follow(
  opts: ExportOptions,
  sink: ExportSink,
  out: NodeJS.WritableStream,
  signal: AbortSignal,
  stats: ExportStats,
) {
  const position = await sink.position();
  const query = new URLSearchParams({ index: String(position.index), namespace: "*", changes: "all" });
  for (const t of opts.topics) query.append("topic", t);
  const headers: Record<string, string> = opts.token ? { "X-Nomad-Token": opts.token } : {};
  const response = await fetch(`${opts.server}/v1/event/stream?${query}`, { signal, headers });
  if (!response.ok || !response.body) {
    const body = (await response.text()).trim();
    const why = `the server's change feed answered ${response.status}: ${body}`;
    throw response.status === 403 || response.status === 400 ? new Refused(why) : new Error(why);
  }
  const clusterId = response.headers.get("x-chronomad-cluster-id");
  if (!clusterId) {
    await response.body.cancel();
    throw new Error(
      `${opts.server} names no cluster (X-Chronomad-Cluster-Id): is it a bootstrapped chronomad?`,
    );
  }
  if (position.clusterId !== undefined && position.clusterId !== clusterId) {
    await response.body.cancel();
    throw new Refused(
      `${opts.to} holds cluster ${position.clusterId}'s changes up to index ${position.index}, ` +
        `but ${opts.server} serves cluster ${clusterId}: export another cluster to another target`,
    );
  }

  let pending: ExportMessage[] = [];
  let appended: number[] = [];
  let pendingIndex = position.index;
  let committed = position.index;
  let lastReport = performance.now();
  const flush = async () => {
    // Taken before the await: frames keep arriving while the commit runs.
    const messages = pending;
    const times = appended;
    const index = pendingIndex;
    pending = [];
    appended = [];
    if (index === committed) return;
    await sink.commit(messages, index, clusterId);
    committed = index;
    stats.note(index, messages, Date.now(), times);
    if (performance.now() - lastReport > 2000) {
      lastReport = performance.now();
      out.write(`export: index ${index}, ${stats.rows.toLocaleString("en-US")} rows delivered\n`);
    }
  };
  // Group commit: a commit starts as soon as rows are waiting and none is
  // running; rows that arrive during a commit go together in the next. A
  // quiet cluster's rows are out at once, a busy one's in large batches.
  let flushing: Promise<void> | undefined;
  let failure: unknown;
  const kick = () => {
    if (flushing) return;
    flushing = (async () => {
      // The rest of the chunk being parsed joins this batch.
      await new Promise((r) => setImmediate(r));
      while (pendingIndex !== committed) await flush();
    })()
      .catch((err: unknown) => {
        failure = err;
      })
      .finally(() => {
        flushing = undefined;
      });
  };

  const decoder = new TextDecoder();
  const reader = response.body.getReader();
  let partial = "";
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      partial += decoder.decode(value, { stream: true });
      const lines = partial.split("\n");
      partial = lines.pop()!;
      for (const line of lines) {
        if (line === "" || line === "{}") continue;
        const frame = JSON.parse(line) as ChangeFrame;
        if (frame.Error) throw new Error(`server ended the stream: ${frame.Error}`);
        const at = Date.parse(frame.Time);
        for (const event of frame.Events) {
          pending.push(message(opts.envelope, clusterId, event, frame.Time));
          appended.push(at);
        }
        pendingIndex = frame.Index;
      }
      if (failure) throw failure;
      kick();
      // Backpressure: a sink slower than the stream holds the reading, not memory.
      if (pending.length >= MAX_PENDING_ROWS) await flushing;
    }
  } finally {
    await flushing;
    // What was received before a stop is committed, not thrown away.
    if (!failure) await flush();
  }
  if (failure) throw failure;
}

function message(
  envelope: ExportEnvelope,
  clusterId: string,
  event: ChangeEvent,
  time: string,
): ExportMessage {
  return {
    key: `${event.Topic}/${event.Namespace}/${event.Key}`,
    topic: event.Topic,
    index: event.Index,
    value: envelope === "flat" ? flatRow(clusterId, event, time) : debeziumRow(clusterId, event, time),
    deleted: event.Op === "delete",
  };
}
