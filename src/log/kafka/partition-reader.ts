import { randomUUID } from "node:crypto";
import type { Batch, Consumer, Kafka } from "kafkajs";
import { LogError, type LogRecord } from "../event-log.ts";

export interface PartitionReaderOptions {
  readonly topic: string;
  /** Where the consumer starts fetching: must not be past the high watermark. */
  readonly seekOffset: number;
  /** First offset handed to `onRecords`; records before it are fetched and dropped. */
  readonly deliverFrom: number;
  /** Long-poll bound: also how long a stop may wait for the fetch in flight. */
  readonly maxWaitMs: number;
  readonly maxBytesPerPartition: number;
  /**
   * Records in offset order, starting exactly at `deliverFrom`, without gaps.
   * A returned promise is awaited before the next fetch (backpressure).
   */
  readonly onRecords: (records: LogRecord[]) => Promise<void> | undefined;
  /** The partition's high watermark after each fetch. */
  readonly onHighWatermark: (offset: number) => void;
  readonly onError: (error: unknown) => void;
}

const EMPTY = new Uint8Array(0);
const HEARTBEAT_WHILE_WAITING_MS = 1000;

/**
 * Reads partition 0 of the log topic from a given offset with a kafkajs
 * consumer. kafkajs has no assign-only consumer, so each reader is the only
 * member of a throw-away group; it never commits offsets (so the group holds
 * no state and the broker drops it when the reader leaves), and it positions
 * itself by `seek` on every group join: after a rebalance or a crash restart,
 * kafkajs would otherwise fall back to the group's (absent) committed offset.
 */
export class PartitionReader {
  private readonly consumer: Consumer;
  /** The offset the next delivered record must have: anything else is a replay or a gap. */
  private next: number;
  private stopped = false;
  private stopping: Promise<void> | undefined;
  private readonly started: Promise<void>;
  private releaseWaits: (() => void) | undefined;
  private readonly stoppedSignal: Promise<void>;

  constructor(
    kafka: Kafka,
    private readonly options: PartitionReaderOptions,
  ) {
    this.next = options.seekOffset;
    this.stoppedSignal = new Promise<void>((resolve) => {
      this.releaseWaits = resolve;
    });
    this.consumer = kafka.consumer({
      groupId: `chronomad-reader-${options.topic}-${randomUUID()}`,
      allowAutoTopicCreation: false,
      maxWaitTimeInMs: options.maxWaitMs,
      maxBytesPerPartition: options.maxBytesPerPartition,
      // Nothing to share: a new group of one needs no wait for other members.
      rebalanceTimeout: 10_000,
    });
    this.started = this.start().catch((error: unknown) => {
      if (!this.stopped) options.onError(error);
    });
  }

  /** Leaves the group and closes the consumer's connections; safe to call more than once. */
  stop(): Promise<void> {
    if (!this.stopping) {
      this.stopped = true;
      this.releaseWaits?.();
      this.stopping = this.started.then(() => this.consumer.disconnect()).catch(() => undefined);
    }
    return this.stopping;
  }

  private async start(): Promise<void> {
    const { consumer, options } = this;
    consumer.on(consumer.events.GROUP_JOIN, () => {
      consumer.seek({ topic: options.topic, partition: 0, offset: String(this.next) });
    });
    consumer.on(consumer.events.CRASH, (event) => {
      // kafkajs restarts itself after retriable failures; the rest are ours to report.
      if (!event.payload.restart && !this.stopped) options.onError(event.payload.error);
    });
    await consumer.connect();
    if (this.stopped) return;
    await consumer.subscribe({ topics: [options.topic], fromBeginning: true });
    if (this.stopped) return;
    await consumer.run({
      autoCommit: false,
      eachBatchAutoResolve: true,
      eachBatch: async ({ batch, heartbeat }) => this.deliver(batch, heartbeat),
    });
  }

  private async deliver(batch: Batch, heartbeat: () => Promise<void>): Promise<void> {
    if (this.stopped) return;
    this.options.onHighWatermark(Number(batch.highWatermark));
    const records: LogRecord[] = [];
    for (const message of batch.messages) {
      const offset = Number(message.offset);
      if (offset < this.next) continue;
      if (offset > this.next) {
        this.stopped = true;
        this.options.onError(
          new LogError(
            `topic ${this.options.topic}: expected offset ${this.next} but the broker returned ${offset}; ` +
              "records are missing (truncated log, or transactional writes to the log topic)",
            "range",
          ),
        );
        return;
      }
      this.next = offset + 1;
      if (offset >= this.options.deliverFrom) {
        records.push({ index: offset + 1, bytes: message.value ?? EMPTY });
      }
    }
    if (records.length === 0) return;
    const wait = this.options.onRecords(records);
    if (!wait) return;
    // A slow reader must not cost the group its member: past the session
    // timeout the broker would rebalance and the fetch would start over.
    const timer = setInterval(() => heartbeat().catch(() => undefined), HEARTBEAT_WHILE_WAITING_MS);
    try {
      await Promise.race([wait, this.stoppedSignal]);
    } finally {
      clearInterval(timer);
    }
  }
}
