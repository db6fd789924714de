import { parseArgs } from "node:util";
import type { Frame } from "../events/frames.ts";
import { TOPIC_NAMES } from "../events/topics.ts";
import { FileSink } from "../export/file-sink.ts";
import { type FlatRecord, flatten } from "../export/flat-records.ts";
import { KafkaSink } from "../export/kafka-sink.ts";
import type { ExportFormat, ExportSink } from "../export/sink.ts";

const USAGE = `Usage: chronomad export --to <file:PATH | kafka://host:port/topic> [--server URL]
                        [--format json|msgpack] [--topics Node,Allocation,...]

Streams table changes as flat records (one per change, scalar columns; the
schema per topic is in the README) from a server's event stream into a file
or a Kafka topic. It resumes from its own committed position after a stop or
a crash, delivering every index exactly once. Runs until SIGINT/SIGTERM.

  --to        file:PATH (NDJSON, or msgpack maps with --format msgpack; the
              position is kept in PATH.position) or kafka://host:port/topic
              (one transaction per batch; the position is read back from it)
  --server    the chronomad server (default http://127.0.0.1:4646)
  --format    json (default) or msgpack
  --topics    only these topics (default: all)
`;

/** Frames gathered before a commit; or fewer, when the stream pauses. */
const BATCH_FRAMES = 2000;
const BATCH_WAIT_MS = 200;
const RECONNECT_MS = 1000;

interface ExportOptions {
  readonly to: string;
  readonly server: string;
  readonly format: ExportFormat;
  readonly topics: readonly string[];
}

/** `chronomad export`: resolves with the exit code once stopped (0), or 1/2 on errors. */
export async function runExport(
  args: readonly string[],
  out: NodeJS.WritableStream,
  signal?: AbortSignal,
): Promise<number> {
  let opts: ExportOptions;
  try {
    opts = parse(args);
  } catch (err) {
    out.write(`chronomad export: ${(err as Error).message}\n\n${USAGE}`);
    return 2;
  }
  const sink: ExportSink = opts.to.startsWith("kafka://")
    ? await KafkaSink.open(opts.to, opts.format)
    : await FileSink.open(opts.to.slice("file:".length), opts.format);
  const stop = new AbortController();
  const onSignal = () => stop.abort();
  process.once("SIGTERM", onSignal);
  process.once("SIGINT", onSignal);
  signal?.addEventListener("abort", onSignal);
  try {
    out.write(`export: from ${opts.server} to ${opts.to}, after index ${await sink.position()}\n`);
    while (!stop.signal.aborted) {
      try {
        await follow(opts, sink, out, stop.signal);
      } catch (err) {
        if (stop.signal.aborted) break;
        out.write(`export: ${(err as Error).message}; reconnecting\n`);
      }
      await new Promise((r) => setTimeout(r, RECONNECT_MS));
    }
    out.write(`export: stopped at index ${await sink.position()}\n`);
    return 0;
  } finally {
    process.off("SIGTERM", onSignal);
    process.off("SIGINT", onSignal);
    await sink.close();
  }
}

function parse(args: readonly string[]): ExportOptions {
  const { values } = parseArgs({
    args: [...args],
    options: {
      to: { type: "string" },
      server: { type: "string", default: "http://127.0.0.1:4646" },
      format: { type: "string", default: "json" },
      topics: { type: "string" },
    },
    strict: true,
  });
  if (!values.to) throw new Error("--to is required");
  if (!values.to.startsWith("file:") && !values.to.startsWith("kafka://")) {
    throw new Error(`--to must be file:PATH or kafka://host:port/topic, not "${values.to}"`);
  }
  if (values.format !== "json" && values.format !== "msgpack") {
    throw new Error(`--format must be json or msgpack, not "${values.format}"`);
  }
  const topics = values.topics ? values.topics.split(",").map((t) => t.trim()) : [];
  for (const t of topics) {
    if (!TOPIC_NAMES.has(t)) throw new Error(`unknown topic "${t}" (known: ${[...TOPIC_NAMES].join(", ")})`);
  }
  return { to: values.to, server: values.server!.replace(/\/$/, ""), format: values.format, topics };
}

/** Reads the event stream after the sink's position and commits in batches until the stream ends. */
async function follow(
  opts: ExportOptions,
  sink: ExportSink,
  out: NodeJS.WritableStream,
  signal: AbortSignal,
) {
  const after = await sink.position();
  const query = new URLSearchParams({ index: String(after), namespace: "*" });
  for (const t of opts.topics) query.append("topic", t);
  const response = await fetch(`${opts.server}/v1/event/stream?${query}`, { signal });
  if (!response.ok || !response.body)
    throw new Error(`event stream answered ${response.status}: ${await response.text()}`);

  let pending: FlatRecord[] = [];
  let pendingIndex = after;
  let frames = 0;
  let delivered = 0;
  let lastReport = performance.now();
  const flush = async () => {
    // Taken before the await: frames keep arriving while the commit runs.
    const records = pending;
    const index = pendingIndex;
    pending = [];
    frames = 0;
    if (index === (await sink.position())) return;
    await sink.commit(records, index);
    delivered += records.length;
    if (performance.now() - lastReport > 2000) {
      lastReport = performance.now();
      out.write(`export: index ${index}, ${delivered.toLocaleString("en-US")} records delivered\n`);
    }
  };

  const decoder = new TextDecoder();
  const reader = response.body.getReader();
  let partial = "";
  let timer: NodeJS.Timeout | undefined;
  let flushing: Promise<void> = Promise.resolve();
  const scheduleFlush = () => {
    timer ??= setTimeout(() => {
      timer = undefined;
      flushing = flushing.then(flush);
    }, BATCH_WAIT_MS);
  };
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      partial += decoder.decode(value, { stream: true });
      const lines = partial.split("\n");
      partial = lines.pop()!;
      for (const line of lines) {
        if (line === "" || line === "{}") continue;
        const frame = JSON.parse(line) as Frame & { Error?: string };
        if (frame.Error) throw new Error(`server ended the stream: ${frame.Error}`);
        for (const event of frame.Events) pending.push(flatten(frame, event));
        pendingIndex = frame.Index;
        if (++frames >= BATCH_FRAMES) {
          clearTimeout(timer);
          timer = undefined;
          flushing = flushing.then(flush);
          await flushing;
        } else {
          scheduleFlush();
        }
      }
    }
  } finally {
    clearTimeout(timer);
    await flushing;
    // What was received before a stop is committed, not thrown away.
    await flush();
  }
}
