import { randomUUID } from "node:crypto";
import { pathToFileURL } from "node:url";
import { Kafka, logLevel } from "kafkajs";
import type { EventLog } from "../log/event-log.ts";
import { openKafkaLog } from "../log/kafka/index.ts";
import { percentile } from "./percentile.ts";

// A type, not an interface: the bench command collects figures as
// Record<string, number>, which only type aliases are assignable to.
export type KafkaLogBenchResult = {
  /** Events (records) made durable per second, acks=all, idempotent, one partition. */
  readonly appends_per_s: number;
  /** Latency of one batched append under that load, submit to resolve. */
  readonly append_p50_ms: number;
  readonly append_p99_ms: number;
};

export interface KafkaLogBenchOptions {
  /** Concurrent appenders, each with one append in flight at a time. */
  readonly appenders?: number;
  /** Events per append. */
  readonly batch?: number;
  readonly durationMs?: number;
}

const RECORD_BYTES = 200;
const WARMUP_EVENTS = 5000;

/**
 * Appends ~200-byte events from many concurrent appenders to a fresh topic on
 * `brokers` for a fixed time; the group commit turns their appends into few,
 * large produce requests. The topic is deleted afterwards.
 */
export async function benchKafkaLog(
  brokers: string,
  options: KafkaLogBenchOptions = {},
): Promise<KafkaLogBenchResult> {
  const appenders = options.appenders ?? 64;
  const batch = options.batch ?? 20;
  const durationMs = options.durationMs ?? 5000;
  const topic = `chronomad-bench-${randomUUID()}`;
  const records = distinctRecords(4096);
  const log = await openKafkaLog(`kafka://${brokers}/${topic}`);
  try {
    // Connections, producer id and JIT warm up outside the measurement.
    await load(log, records, appenders, batch, WARMUP_EVENTS / batch);
    const latencies: number[] = [];
    const start = performance.now();
    const events = await loadFor(log, records, appenders, batch, start + durationMs, latencies);
    const seconds = (performance.now() - start) / 1000;
    return {
      appends_per_s: Math.round(events / seconds),
      append_p50_ms: percentile(latencies, 0.5),
      append_p99_ms: percentile(latencies, 0.99),
    };
  } finally {
    await log.close();
    await deleteTopic(brokers, topic);
  }
}

async function load(
  log: EventLog,
  records: readonly Uint8Array[],
  appenders: number,
  batch: number,
  appends: number,
): Promise<void> {
  let left = appends;
  await Promise.all(
    Array.from({ length: appenders }, async (_, a) => {
      for (let k = 0; left-- > 0; k++) await log.append(slice(records, a * 997 + k * batch, batch));
    }),
  );
}

async function loadFor(
  log: EventLog,
  records: readonly Uint8Array[],
  appenders: number,
  batch: number,
  until: number,
  latencies: number[],
): Promise<number> {
  let events = 0;
  await Promise.all(
    Array.from({ length: appenders }, async (_, a) => {
      for (let k = 0; performance.now() < until; k++) {
        const t0 = performance.now();
        await log.append(slice(records, a * 997 + k * batch, batch));
        latencies.push(performance.now() - t0);
        events += batch;
      }
    }),
  );
  return events;
}

function slice(records: readonly Uint8Array[], at: number, n: number): Uint8Array[] {
  return Array.from({ length: n }, (_, i) => records[(at + i) % records.length]!);
}

/** Distinct payloads so nothing benefits from appending the same bytes over and over. */
function distinctRecords(count: number): Uint8Array[] {
  return Array.from({ length: count }, (_, i) => {
    const r = new Uint8Array(RECORD_BYTES);
    for (let k = 0; k < RECORD_BYTES; k++) r[k] = (i * 131 + k * 17) & 0xff;
    return r;
  });
}

async function deleteTopic(brokers: string, topic: string): Promise<void> {
  const admin = new Kafka({ brokers: brokers.split(","), logLevel: logLevel.NOTHING }).admin();
  try {
    await admin.connect();
    await admin.deleteTopics({ topics: [topic] });
  } catch {
    // A leftover bench topic costs disk, not correctness.
  } finally {
    await admin.disconnect().catch(() => undefined);
  }
}

// `npx tsx src/bench/kafka-log-bench.ts [brokers]`: the figures alone, as JSON.
if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const brokers = process.argv[2] ?? process.env.KAFKA_BROKERS ?? "127.0.0.1:9092";
  process.stdout.write(`${JSON.stringify(await benchKafkaLog(brokers))}\n`);
}
