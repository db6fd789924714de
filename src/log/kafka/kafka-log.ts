import { type Admin, Kafka, type KafkaConfig, Partitioners, type Producer } from "kafkajs";
import type { Logger } from "pino";
import { Observable, type Subscriber } from "rxjs";
import {
  type AppendResult,
  type EventLog,
  LogError,
  type LogRecord,
  type ReadOptions,
} from "../event-log.ts";
import { GroupCommit } from "./group-commit.ts";
import { type KafkaLogLevel, kafkajsLevel, pinoLogCreator } from "./kafka-logging.ts";
import { ensureLogTopic, fetchWatermarks, TOPIC_MAX_MESSAGE_BYTES } from "./kafka-topic.ts";
import { type KafkaLogAddress, parseKafkaUrl } from "./kafka-url.ts";
import { PartitionReader } from "./partition-reader.ts";
import { RecordQueue } from "./record-queue.ts";

export interface KafkaLogOptions {
  /** Receives kafkajs's own log lines. Without one, warnings and errors go to stderr. */
  readonly logger?: Logger;
  /** Least severe kafkajs line passed on (default "warn": kafkajs is chatty at info). */
  readonly kafkaLogLevel?: KafkaLogLevel;
  /** kafkajs client id, seen in broker logs and quotas (default "chronomad"). */
  readonly clientId?: string;
  /** Group commit: payload bytes per send, above which appends wait for the next one. */
  readonly maxBatchBytes?: number;
  /** Group commit: records per send. */
  readonly maxBatchRecords?: number;
  /** Connection settings (ssl, sasl, timeouts, retry) passed to kafkajs as they are. */
  readonly client?: Omit<KafkaConfig, "brokers" | "clientId" | "logCreator" | "logLevel">;
}

const DEFAULT_READ_BATCH = 1024;
// Below the broker's default message.max.bytes (1 MiB), so group commit also
// works on a log topic created elsewhere with default settings.
const DEFAULT_MAX_BATCH_BYTES = 900 * 1024;
// kafkajs groups a send's messages per partition by copying the array once
// per message (groupMessagesPerPartition.js), quadratic in the batch: past a
// couple of thousand records per send, bigger batches get slower, not faster.
const DEFAULT_MAX_BATCH_RECORDS = 2048;
// Short long-polls: an idle tail costs a few empty fetches a second, and a
// stopping reader never waits long for its fetch in flight.
const READER_MAX_WAIT_MS = 250;
const READER_MAX_BYTES_PER_PARTITION = 4 * 1024 * 1024;
const READ_QUEUE_CAPACITY = 16_384;

/**
 * Opens (creating if needed) the log kept in a single-partition Kafka topic:
 * `kafka://host:port[,host:port]/topic[?replicationFactor=1&minInsyncReplicas=1]`.
 */
export async function openKafkaLog(url: string, options: KafkaLogOptions = {}): Promise<KafkaLog> {
  const address = parseKafkaUrl(url);
  const kafka = new Kafka({
    ...options.client,
    clientId: options.clientId ?? "chronomad",
    brokers: [...address.brokers],
    logLevel: kafkajsLevel(options.kafkaLogLevel ?? "warn"),
    logCreator: pinoLogCreator(options.logger),
  });
  const admin = kafka.admin();
  let producer: Producer | undefined;
  try {
    await admin.connect();
    await ensureLogTopic(admin, address);
    const marks = await fetchWatermarks(admin, address.topic);
    producer = kafka.producer({
      idempotent: true,
      // kafkajs does not reorder retried batches (no sequence re-assignment),
      // so more than one request in flight could reorder or lose records.
      maxInFlightRequests: 1,
      allowAutoTopicCreation: false,
      createPartitioner: Partitioners.DefaultPartitioner,
    });
    await producer.connect();
    return new KafkaLog(url, address, kafka, admin, producer, marks.low, marks.high, options);
  } catch (error) {
    await producer?.disconnect().catch(() => undefined);
    await admin.disconnect().catch(() => undefined);
    if (error instanceof LogError) throw error;
    throw Object.assign(
      new LogError(
        `cannot open Kafka log ${url}: ${error instanceof Error ? error.message : String(error)}`,
        "io",
      ),
      { cause: error },
    );
  }
}

/**
 * The log as one single-partition topic shared by every server: the Kafka
 * offset is the order, index = offset + 1. Appends go through one idempotent
 * producer (acks=all) with group commit; reads and tails each run their own
 * consumer that commits nothing.
 */
export class KafkaLog implements EventLog {
  private readonly commit: GroupCommit;
  private readonly readers = new Set<PartitionReader>();
  private readonly stopping = new Set<Promise<void>>();
  private readonly tails = new Set<Subscriber<LogRecord[]>>();
  private readonly endReads = new Set<() => void>();
  private closing: Promise<void> | undefined;

  /** @internal use {@link openKafkaLog} */
  constructor(
    readonly url: string,
    private readonly address: KafkaLogAddress,
    private readonly kafka: Kafka,
    private readonly admin: Admin,
    private readonly producer: Producer,
    private low: number,
    private high: number,
    options: KafkaLogOptions,
  ) {
    this.commit = new GroupCommit((records) => this.send(records), {
      maxBatchBytes: Math.min(options.maxBatchBytes ?? DEFAULT_MAX_BATCH_BYTES, TOPIC_MAX_MESSAGE_BYTES),
      maxBatchRecords: options.maxBatchRecords ?? DEFAULT_MAX_BATCH_RECORDS,
    });
  }

  /** The topic holding the log. */
  get topic(): string {
    return this.address.topic;
  }

  append(records: readonly Uint8Array[]): Promise<AppendResult> {
    if (this.closing) return Promise.reject(new LogError(`${this.url} is closed`, "closed"));
    if (records.length === 0) return Promise.reject(new LogError("append of an empty batch", "range"));
    // Views, not copies: kafkajs only reads the bytes while encoding the request.
    return this.commit.append(records.map((r) => Buffer.from(r.buffer, r.byteOffset, r.byteLength)));
  }

  async *read(fromIndex: number, options: ReadOptions = {}): AsyncIterable<LogRecord[]> {
    this.assertOpen();
    const maxBatch = Math.max(1, Math.floor(options.maxBatch ?? DEFAULT_READ_BATCH));
    const from = Math.max(1, Math.floor(fromIndex));
    // The end is fixed now, from the broker, so a read over a busy log ends.
    const marks = await this.refreshWatermarks();
    const until = Math.min(options.untilIndex ?? Number.POSITIVE_INFINITY, marks.high);
    if (from > until) return;

    const queue = new RecordQueue(READ_QUEUE_CAPACITY);
    const end = () => queue.end();
    this.endReads.add(end);
    const reader = this.startReader(from - 1, from - 1, {
      onRecords: (records) => queue.push(records),
      onError: (error) => queue.fail(error),
    });
    try {
      let next = from;
      while (next <= until) {
        const batch = await queue.take(Math.min(maxBatch, until - next + 1));
        if (!batch) throw new LogError(`${this.url} was closed during a read`, "closed");
        yield batch;
        next = batch[batch.length - 1]!.index + 1;
      }
    } finally {
      this.endReads.delete(end);
      // Not awaited: the caller has what it asked for; close() waits for it.
      void this.stopReader(reader);
    }
  }

  tail(fromIndex: number): Observable<LogRecord[]> {
    return new Observable<LogRecord[]>((subscriber) => {
      if (this.closing) {
        subscriber.error(new LogError(`${this.url} is closed`, "closed"));
        return;
      }
      const from = Math.max(1, Math.floor(fromIndex));
      let reader: PartitionReader | undefined;
      let cancelled = false;
      this.tails.add(subscriber);
      this.refreshWatermarks()
        .then((marks) => {
          if (cancelled) return;
          // A fetch past the end is "out of range" and kafkajs would rewind
          // to the start; start at the end instead and skip up to `from`.
          reader = this.startReader(Math.min(from - 1, marks.high), from - 1, {
            onRecords: (records) => {
              for (let i = 0; i < records.length && !subscriber.closed; i += DEFAULT_READ_BATCH) {
                subscriber.next(records.slice(i, i + DEFAULT_READ_BATCH));
              }
              return undefined;
            },
            onError: (error) => subscriber.error(error),
          });
        })
        .catch((error: unknown) => subscriber.error(error));
      return () => {
        cancelled = true;
        this.tails.delete(subscriber);
        if (reader) void this.stopReader(reader);
      };
    });
  }

  lastIndex(): number {
    return this.high;
  }

  firstIndex(): number {
    return this.low + 1;
  }

  close(): Promise<void> {
    this.closing ??= this.shutdown();
    return this.closing;
  }

  private async shutdown(): Promise<void> {
    await this.commit.drain();
    for (const subscriber of [...this.tails]) subscriber.complete();
    for (const end of [...this.endReads]) end();
    for (const reader of [...this.readers]) void this.stopReader(reader);
    await Promise.allSettled([...this.stopping]);
    await this.producer.disconnect().catch(() => undefined);
    await this.admin.disconnect().catch(() => undefined);
  }

  private async send(records: readonly Buffer[]): Promise<number> {
    const [meta] = await this.producer.send({
      topic: this.address.topic,
      acks: -1,
      messages: records.map((value) => ({ partition: 0, value })),
    });
    if (meta?.errorCode !== 0 || meta.baseOffset === undefined) {
      throw new LogError(`${this.url}: the broker gave no offset for an append`, "io");
    }
    const base = Number(meta.baseOffset);
    this.observeHigh(base + records.length);
    return base + 1;
  }

  private startReader(
    seekOffset: number,
    deliverFrom: number,
    handlers: {
      onRecords: (records: LogRecord[]) => Promise<void> | undefined;
      onError: (error: unknown) => void;
    },
  ): PartitionReader {
    const reader = new PartitionReader(this.kafka, {
      topic: this.address.topic,
      seekOffset,
      deliverFrom,
      maxWaitMs: READER_MAX_WAIT_MS,
      maxBytesPerPartition: READER_MAX_BYTES_PER_PARTITION,
      onHighWatermark: (offset) => this.observeHigh(offset),
      ...handlers,
    });
    this.readers.add(reader);
    return reader;
  }

  private stopReader(reader: PartitionReader): Promise<void> {
    if (!this.readers.delete(reader)) return reader.stop();
    const stopped = reader.stop().finally(() => this.stopping.delete(stopped));
    this.stopping.add(stopped);
    return stopped;
  }

  private async refreshWatermarks(): Promise<{ low: number; high: number }> {
    const marks = await fetchWatermarks(this.admin, this.address.topic);
    this.observeHigh(marks.high);
    this.low = Math.max(this.low, marks.low);
    return { low: this.low, high: this.high };
  }

  // Watermarks only move forward; answers can arrive out of order.
  private observeHigh(offset: number): void {
    if (offset > this.high) this.high = offset;
  }

  private assertOpen(): void {
    if (this.closing) throw new LogError(`${this.url} is closed`, "closed");
  }
}
