import type { Admin } from "kafkajs";
import { LogError } from "../event-log.ts";
import type { KafkaLogAddress } from "./kafka-url.ts";

/** Largest record batch the topic accepts: one append (one batch) may be big. */
export const TOPIC_MAX_MESSAGE_BYTES = 8 * 1024 * 1024;

/**
 * Creates the log topic if it does not exist yet. An existing topic must have
 * exactly one partition: the log's total order is a partition's order.
 */
export async function ensureLogTopic(admin: Admin, address: KafkaLogAddress): Promise<void> {
  // Asking first keeps a server restart from logging the broker's
  // TOPIC_ALREADY_EXISTS, which kafkajs reports at error level.
  const exists = (await admin.listTopics()).includes(address.topic);
  if (!exists) await createLogTopic(admin, address);
  const { topics } = await admin.fetchTopicMetadata({ topics: [address.topic] });
  const partitions = topics[0]?.partitions.length ?? 0;
  if (partitions !== 1) {
    throw new LogError(
      `topic ${address.topic} has ${partitions} partitions; a chronomad log needs exactly one (one total order)`,
      "config",
    );
  }
}

async function createLogTopic(admin: Admin, address: KafkaLogAddress): Promise<void> {
  // Resolves false when another server created it in between: fine.
  await admin.createTopics({
    waitForLeaders: true,
    topics: [
      {
        topic: address.topic,
        numPartitions: 1,
        replicationFactor: address.replicationFactor,
        configEntries: [
          // The log is the source of truth: the broker must never delete from it.
          { name: "retention.ms", value: "-1" },
          { name: "retention.bytes", value: "-1" },
          { name: "cleanup.policy", value: "delete" },
          { name: "min.insync.replicas", value: String(address.minInsyncReplicas) },
          // An acknowledged record that an unclean leader drops would leave a
          // hole under indexes that clients have already seen.
          { name: "unclean.leader.election.enable", value: "false" },
          { name: "max.message.bytes", value: String(TOPIC_MAX_MESSAGE_BYTES) },
        ],
      },
    ],
  });
}

export interface Watermarks {
  /** Offset of the first record still held. */
  readonly low: number;
  /** Offset the next record will get: the count of records ever written. */
  readonly high: number;
}

export async function fetchWatermarks(admin: Admin, topic: string): Promise<Watermarks> {
  const offsets = await admin.fetchTopicOffsets(topic);
  const p0 = offsets.find((o) => o.partition === 0);
  if (!p0) throw new LogError(`topic ${topic} has no partition 0`, "config");
  return { low: Number(p0.low), high: Number(p0.high) };
}
