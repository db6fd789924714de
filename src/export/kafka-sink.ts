import { randomUUID } from "node:crypto";
import { type Admin, Kafka, logLevel, type Producer } from "kafkajs";
import { packPlain } from "../codec/envelope-codec.ts";
import { parseKafkaUrl } from "../log/kafka/index.ts";
import type { FlatRecord } from "./flat-records.ts";
import type { ExportFormat, ExportSink } from "./sink.ts";

/** The header that carries a record's log index, so a restart finds where the topic ends. */
const INDEX_HEADER = "chronomad-index";
/** How far back from the end to look for the last committed record, at first. */
const LOOKBACK = 2048;

/**
 * Records produced to a Kafka topic in transactions: one transaction per
 * commit, so a consumer reading committed data sees whole batches or
 * nothing. The position is recovered from the topic itself: the highest
 * index header among its committed records.
 */
export class KafkaSink implements ExportSink {
  private constructor(
    private readonly producer: Producer,
    private readonly topic: string,
    private readonly format: ExportFormat,
    private at: number,
  ) {}

  static async open(url: string, format: ExportFormat): Promise<KafkaSink> {
    const address = parseKafkaUrl(url);
    const kafka = new Kafka({
      clientId: "chronomad-export",
      brokers: [...address.brokers],
      logLevel: logLevel.ERROR,
    });
    const admin = kafka.admin();
    await admin.connect();
    try {
      await admin.createTopics({
        topics: [{ topic: address.topic, numPartitions: 1, replicationFactor: address.replicationFactor }],
        waitForLeaders: true,
      });
      const at = await lastCommittedIndex(kafka, admin, address.topic);
      // One transactional id per sink topic: a restarted exporter fences the
      // producer of the one it replaces, whose open transaction is aborted.
      const producer = kafka.producer({
        transactionalId: `chronomad-export-${address.topic}`,
        idempotent: true,
        maxInFlightRequests: 1,
      });
      await producer.connect();
      return new KafkaSink(producer, address.topic, format, at);
    } finally {
      await admin.disconnect();
    }
  }

  async position(): Promise<number> {
    return this.at;
  }

  async commit(records: readonly FlatRecord[], index: number): Promise<void> {
    const tx = await this.producer.transaction();
    try {
      await tx.send({
        topic: this.topic,
        acks: -1,
        messages: records.map((r) => ({
          key: String(r.Key),
          value: this.format === "json" ? JSON.stringify(r) : Buffer.from(packPlain(r)),
          headers: { [INDEX_HEADER]: String(r.Index), "chronomad-topic": String(r.Topic) },
        })),
      });
      // A batch of frames that produced no records still moves the position.
      if (records.length === 0 || records[records.length - 1]!.Index !== index) {
        await tx.send({
          topic: this.topic,
          acks: -1,
          messages: [{ key: "chronomad-position", value: null, headers: { [INDEX_HEADER]: String(index) } }],
        });
      }
      await tx.commit();
    } catch (err) {
      await tx.abort().catch(() => undefined);
      throw err;
    }
    this.at = index;
  }

  async close(): Promise<void> {
    await this.producer.disconnect();
  }
}

async function lastCommittedIndex(kafka: Kafka, admin: Admin, topic: string): Promise<number> {
  const [offsets] = await admin.fetchTopicOffsets(topic);
  const high = Number(offsets?.high ?? 0);
  const low = Number(offsets?.low ?? 0);
  for (let back = LOOKBACK; ; back *= 4) {
    const from = Math.max(low, high - back);
    const found = await maxIndexFrom(kafka, topic, from, high);
    if (found > 0 || from === low) return found;
  }
}

/** Reads committed records in [from, high) and returns the highest index header seen. */
async function maxIndexFrom(kafka: Kafka, topic: string, from: number, high: number): Promise<number> {
  if (from >= high) return 0;
  const consumer = kafka.consumer({
    groupId: `chronomad-export-reader-${randomUUID()}`,
    readUncommitted: false,
  });
  await consumer.connect();
  let max = 0;
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
              if (header !== undefined) max = Math.max(max, Number(String(header)));
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
  return max;
}
