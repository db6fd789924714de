import { Kafka } from "kafkajs";
import type { Logger } from "pino";
import { LogError } from "./event-log.ts";
import { kafkajsLevel, pinoLogCreator } from "./kafka/kafka-logging.ts";
import { parseKafkaUrl } from "./kafka/kafka-url.ts";

/**
 * Refuses a Kafka log whose topic does not exist, before openKafkaLog
 * (which creates a missing topic, as a server starting a new cluster
 * wants) gets to it: a log opened only to be read must already be there,
 * and a mistyped topic name must not leave an empty topic behind.
 */
export async function assertKafkaTopicExists(url: string, logger: Logger): Promise<void> {
  const address = parseKafkaUrl(url);
  const kafka = new Kafka({
    clientId: "chronomad",
    brokers: [...address.brokers],
    logLevel: kafkajsLevel("warn"),
    logCreator: pinoLogCreator(logger),
  });
  const admin = kafka.admin();
  let topics: string[];
  try {
    await admin.connect();
    topics = await admin.listTopics();
  } catch (err) {
    throw new LogError(`cannot open Kafka log ${url}: ${(err as Error).message}`, "io");
  } finally {
    await admin.disconnect().catch(() => undefined);
  }
  if (!topics.includes(address.topic)) {
    throw new LogError(
      `Kafka log ${url}: topic ${address.topic} does not exist on ${address.brokers.join(",")}; there is nothing to read`,
      "config",
    );
  }
}
