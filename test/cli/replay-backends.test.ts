import { randomUUID } from "node:crypto";
import { join } from "node:path";
import { Writable } from "node:stream";
import { pino } from "pino";
import { afterAll, describe, expect, it } from "vitest";
import { mixedHistory } from "../../src/bench/mixed-history.ts";
import { boundedRuns, runReplay } from "../../src/cli/replay-command.ts";
import { EnvelopeCodec } from "../../src/codec/envelope-codec.ts";
import type { LogRecord } from "../../src/log/event-log.ts";
import { openLog } from "../../src/log/open-log.ts";
import { allSchemas } from "../../streams/index.ts";
import { useTempDirs } from "../store/helpers.ts";

// Enough to fill several read batches and many byte-bounded appends, small
// enough that a copy through a real broker or EventStoreDB takes seconds.
const RECORDS = 20_000;
const brokers = process.env.KAFKA_BROKERS;
const esdbUrl = process.env.ESDB_URL;
const quiet = pino({ level: "silent" });

async function replay(args: string[]): Promise<{ code: number; output: string }> {
  let output = "";
  const out = new Writable({
    write(chunk, _encoding, done) {
      output += String(chunk);
      done();
    },
  });
  const code = await runReplay(args, out);
  return { code, output };
}

async function contents(url: string): Promise<Buffer[]> {
  const log = await openLog(url, { logger: quiet, readOnly: true });
  try {
    const out: Buffer[] = [];
    for await (const batch of log.read(1, { maxBatch: 4096 }))
      for (const r of batch) out.push(Buffer.from(r.bytes));
    return out;
  } finally {
    await log.close();
  }
}

/** The kinds of log a copy can go through here: file always, Kafka and EventStoreDB when one is named. */
type Kind = "file" | "kafka" | "esdb";
const available: Kind[] = ["file"];
if (brokers) available.push("kafka");
if (esdbUrl) available.push("esdb");

describe("chronomad replay between backends", () => {
  const tempDir = useTempDirs();
  const kafkaTopics: string[] = [];

  afterAll(async () => {
    if (!brokers || kafkaTopics.length === 0) return;
    const { Kafka, logLevel } = await import("kafkajs");
    const admin = new Kafka({ brokers: brokers.split(","), logLevel: logLevel.NOTHING }).admin();
    await admin.connect();
    await admin.deleteTopics({ topics: kafkaTopics }).catch(() => undefined);
    await admin.disconnect();
  });

  const freshUrl = async (kind: Kind): Promise<string> => {
    if (kind === "file") return `file:${join(await tempDir(), "log")}`;
    if (kind === "kafka") {
      const topic = `chronomad-replay-${randomUUID()}`;
      kafkaTopics.push(topic);
      return `kafka://${brokers}/${topic}`;
    }
    const sep = esdbUrl!.includes("?") ? "&" : "?";
    return `${esdbUrl}${sep}stream=chronomad-replay-${randomUUID()}`;
  };

  const history = async (): Promise<string> => {
    const url = await freshUrl("file");
    const codec = new EnvelopeCodec(allSchemas);
    const log = await openLog(url, { logger: quiet, fsync: "never" });
    let batch: Uint8Array[] = [];
    for (const e of mixedHistory(RECORDS, 7)) {
      batch.push(codec.encode(e));
      if (batch.length === 5000) {
        await log.append(batch);
        batch = [];
      }
    }
    if (batch.length) await log.append(batch);
    await log.close();
    return url;
  };

  // Each backend is a copy's target once and the next copy's source, so every
  // available kind is written and read: file -> A -> B -> ... -> file.
  const chains: Kind[][] = [["file", "file"]];
  for (const via of available.filter((k) => k !== "file")) chains.push(["file", via, "file"]);
  if (brokers && esdbUrl) chains.push(["file", "kafka", "esdb", "file"], ["file", "esdb", "kafka", "file"]);

  for (const chain of chains) {
    it(`copies ${chain.join(" -> ")} record for record, with progress and equal table hashes`, async () => {
      const origin = await history();
      const expected = await contents(origin);
      let from = origin;
      for (const kind of chain.slice(1)) {
        const to = await freshUrl(kind);
        const run = await replay(["--from", from, "--to", to, "--verify"]);
        expect(run.code, run.output).toBe(0);
        expect(run.output).toMatch(/replay: 20,000\/20,000 \(100%\), [\d,]+ records\/s/);
        expect(run.output).toMatch(`replay: copied ${RECORDS} records; the target ends at index ${RECORDS}`);
        expect(run.output).toMatch(/verify: equal/);
        from = to;
      }
      const copied = await contents(from);
      expect(copied.length).toBe(RECORDS);
      expect(copied.every((bytes, i) => bytes.equals(expected[i]!))).toBe(true);
    });
  }

  it("refuses two spellings of one EventStoreDB stream as source and target", async () => {
    const run = await replay([
      "--from",
      "esdb://127.0.0.1:2113?tls=false",
      "--to",
      "esdb://127.0.0.1:2113?stream=chronomad-global&tls=false",
    ]);
    expect(run.code).toBe(2);
    expect(run.output).toMatch(/--from and --to name the same log/);
  });
});

describe("bounded appends (to EventStoreDB)", () => {
  const rec = (index: number, size: number): LogRecord => ({ index, bytes: new Uint8Array(size) });
  const ids = (runs: LogRecord[][]) => runs.map((r) => r.map((x) => x.index));
  it("splits a batch into runs within the byte and record limits, in order, a larger record alone", () => {
    const limits = { maxBatchBytes: 100, maxBatchRecords: 10, overheadPerRecord: 5 };
    const batch = [rec(1, 40), rec(2, 40), rec(3, 40), rec(4, 150), rec(5, 10)];
    expect(ids(boundedRuns(batch, limits))).toEqual([[1, 2], [3], [4], [5]]);
    // 35 bytes each with the overhead: two fit in 100, three (105) do not.
    expect(ids(boundedRuns([rec(1, 30), rec(2, 30), rec(3, 30)], limits))).toEqual([[1, 2], [3]]);
    const many = Array.from({ length: 5 }, (_, i) => rec(i + 1, 0));
    expect(ids(boundedRuns(many, { ...limits, maxBatchRecords: 2 }))).toEqual([[1, 2], [3, 4], [5]]);
    expect(boundedRuns([], limits)).toEqual([]);
  });
});

for (const [name, set] of [
  ["KAFKA_BROKERS", brokers],
  ["ESDB_URL", esdbUrl],
] as const) {
  if (!set)
    process.stderr.write(
      `replay through ${name === "KAFKA_BROKERS" ? "Kafka" : "EventStoreDB"} skipped: ${name} is not set\n`,
    );
}
