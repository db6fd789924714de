import { randomUUID } from "node:crypto";
import { type Admin, type IHeaders, Kafka, logLevel, type Message, type Producer } from "kafkajs";
import { packPlain } from "../codec/envelope-codec.ts";
import { parseKafkaUrl } from "../log/kafka/index.ts";
import {
  type ExportFormat,
  type ExportMessage,
  type ExportSink,
  ExportTargetBusy,
  type SinkPosition,
} from "./sink.ts";

/** The header that carries a record's log index, so a restart finds where the topic ends. */
const INDEX_HEADER = "chronomad-index";
/** The header naming the cluster whose history the record belongs to. */
const CLUSTER_HEADER = "chronomad-cluster";
/** The key of position markers: records that only say how far a commit went. */
export const POSITION_KEY = "chronomad-position";
/** How far back from the end to look for the last committed record, at first. */
const LOOKBACK = 2048;

export interface KafkaSinkOptions {
  readonly format: ExportFormat;
  /** One topic per event-stream topic (`<topic>.Allocation`, …); the named topic keeps only position markers. */
  readonly topicPerTable: boolean;
  /** Create the topics with `cleanup.policy=compact`: the latest row per key (and tombstones) survive. */
  readonly compact: boolean;
}

/**
 * Rows produced to Kafka in transactions, one per commit, so a consumer
 * reading committed data sees whole batches or nothing. Each row is keyed
 * `Topic/Namespace/ID`; a delete is followed by a tombstone (null value)
 * on the same key, so a compacted topic forgets the object. The position
 * and the cluster are recovered from the named topic itself: the highest
 * `chronomad-index` header among its committed records.
 */
export class KafkaSink implements ExportSink {
  private constructor(
    private readonly admin: Admin,
    private readonly producer: Producer,
    private readonly base: string,
    private readonly options: KafkaSinkOptions,
    private readonly created: TopicCreation,
    private at: SinkPosition,
  ) {}

  static async open(url: string, options: KafkaSinkOptions): Promise<KafkaSink> {
    const address = parseKafkaUrl(url);
    const kafka = new Kafka({
      clientId: "chronomad-export",
      brokers: [...address.brokers],
      logLevel: logLevel.NOTHING,
    });
    const admin = kafka.admin();
    await admin.connect();
    try {
      const topics = new Set(await admin.listTopics());
      const created = {
        admin,
        topics,
        replicationFactor: address.replicationFactor,
        compact: options.compact,
      };
      await ensureTopic(created, address.topic);
      const at = await lastCommitted(kafka, admin, address.topic);
      // One transactional id per target: a second exporter fences the first,
      // whose open transaction is aborted and whose next commit fails.
      const producer = kafka.producer({
        transactionalId: `chronomad-export-${address.topic}`,
        idempotent: true,
        maxInFlightRequests: 1,
      });
      await producer.connect();
      return new KafkaSink(admin, producer, address.topic, options, created, at);
    } catch (err) {
      await admin.disconnect();
      throw err;
    }
  }

  async position(): Promise<SinkPosition> {
    return this.at;
  }

  async commit(messages: readonly ExportMessage[], index: number, clusterId: string): Promise<void> {
    const byTopic = new Map<string, Message[]>();
    const add = (topic: string, m: Message) => {
      const list = byTopic.get(topic);
      if (list) list.push(m);
      else byTopic.set(topic, [m]);
    };
    for (const m of messages) {
      const topic = this.options.topicPerTable ? `${this.base}.${m.topic}` : this.base;
      const headers: IHeaders = {
        [INDEX_HEADER]: String(m.index),
        [CLUSTER_HEADER]: clusterId,
        "chronomad-topic": m.topic,
      };
      add(topic, { key: m.key, value: this.encode(m.value), headers });
      if (m.deleted) add(topic, { key: m.key, value: null, headers });
    }
    // The named topic ends every commit with its position, unless its last row already says it.
    const lastHere = byTopic.get(this.base)?.at(-1);
    if (lastHere?.headers?.[INDEX_HEADER] !== String(index)) {
      add(this.base, {
        key: POSITION_KEY,
        value: JSON.stringify({ index, clusterId }),
        headers: { [INDEX_HEADER]: String(index), [CLUSTER_HEADER]: clusterId },
      });
    }
    for (const topic of byTopic.keys()) await ensureTopic(this.created, topic);
    const tx = await this.producer.transaction();
    try {
      // Several requests in one transaction: a broker refuses a record batch
      // past its message.max.bytes (1 MiB by default).
      for (const [topic, msgs] of byTopic) {
        for (const messages of requestSized(msgs)) await tx.send({ topic, acks: -1, messages });
      }
      await tx.commit();
    } catch (err) {
      await tx.abort().catch(() => undefined);
      if ((err as { type?: string }).type === "INVALID_PRODUCER_EPOCH") {
        throw new ExportTargetBusy(
          `another exporter took over ${this.base} (same transactional id): this one stops; one exporter per target`,
        );
      }
      throw err;
    }
    this.at = { index, clusterId };
  }

  async close(): Promise<void> {
    await this.producer.disconnect();
    await this.admin.disconnect();
  }

  private encode(value: Readonly<Record<string, unknown>>): string | Buffer {
    return this.options.format === "json" ? JSON.stringify(value) : Buffer.from(packPlain(value));
  }
}

/** Below Kafka's default message.max.bytes (1 MiB), with room for record overhead. */
const REQUEST_BYTES = 512 * 1024;

/** `messages` cut into runs of at most REQUEST_BYTES of keys and values (a larger message goes alone). */
function* requestSized(messages: readonly Message[]): Generator<Message[]> {
  let run: Message[] = [];
  let bytes = 0;
  for (const m of messages) {
    const size = 64 + String(m.key ?? "").length + (m.value === null ? 0 : m.value.length);
    if (run.length > 0 && bytes + size > REQUEST_BYTES) {
      yield run;
      run = [];
      bytes = 0;
    }
    run.push(m);
    bytes += size;
  }
  if (run.length > 0) yield run;
}

interface TopicCreation {
  readonly admin: Admin;
  /** Topics known to exist. */
  readonly topics: Set<string>;
  readonly replicationFactor: number;
  readonly compact: boolean;
}

/** Creates `topic` (one partition: the changes of one object stay in order) unless it exists. */
async function ensureTopic(how: TopicCreation, topic: string): Promise<void> {
  if (how.topics.has(topic)) return;
  await how.admin.createTopics({
    topics: [
      {
        topic,
        numPartitions: 1,
        replicationFactor: how.replicationFactor,
        configEntries: how.compact ? [{ name: "cleanup.policy", value: "compact" }] : [],
      },
    ],
    waitForLeaders: true,
  });
  how.topics.add(topic);
}

async function lastCommitted(kafka: Kafka, admin: Admin, topic: string): Promise<SinkPosition> {
  const [offsets] = await admin.fetchTopicOffsets(topic);
  const high = Number(offsets?.high ?? 0);
  const low = Number(offsets?.low ?? 0);
  for (let back = LOOKBACK; ; back *= 4) {
    const from = Math.max(low, high - back);
    const found = await lastFrom(kafka, topic, from, high);
    if (found.index > 0 || from === low) return found;
  }
}

/** Reads committed records in [from, high) and returns the highest index header seen, with its cluster. */
async function lastFrom(kafka: Kafka, topic: string, from: number, high: number): Promise<SinkPosition> {
  if (from >= high) return { index: 0 };
  const consumer = kafka.consumer({
    groupId: `chronomad-export-reader-${randomUUID()}`,
    readUncommitted: false,
  });
  await consumer.connect();
  let last: SinkPosition = { index: 0 };
  try {
    await consumer.subscribe({ topic, fromBeginning: true });
    await new Promise<void>((resolve, reject) => {
      // Transaction markers take offsets no record is delivered for, so the
      // read ends when the fetches come back empty, not at an exact offset.
      let idle = setTimeout(resolve, 3000);
      consumer
        .run({
          eachBatch: async ({ batch }) => {
            for (const m of batch.messages) {
              const header = m.headers?.[INDEX_HEADER];
              if (header === undefined) continue;
              const index = Number(String(header));
              const cluster = m.headers?.[CLUSTER_HEADER];
              if (index >= last.index) {
                last = cluster === undefined ? { index } : { index, clusterId: String(cluster) };
              }
            }
            clearTimeout(idle);
            idle = setTimeout(resolve, Number(batch.lastOffset()) + 1 >= high ? 0 : 1500);
          },
        })
        .catch(reject);
      consumer.seek({ topic, partition: 0, offset: String(from) });
    });
  } finally {
    await consumer.disconnect();
  }
  return last;
}
