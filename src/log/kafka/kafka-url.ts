import { LogError } from "../event-log.ts";

/** What a `kafka://` log URL names: where the cluster is and which topic holds the log. */
export interface KafkaLogAddress {
  readonly brokers: readonly string[];
  readonly topic: string;
  /** Used only when the topic has to be created. */
  readonly replicationFactor: number;
  /** Used only when the topic has to be created; with acks=all it bounds durability. */
  readonly minInsyncReplicas: number;
}

// Kafka's own rule for topic names (Topic.java): legal characters, at most 249.
const TOPIC = /^[a-zA-Z0-9._-]{1,249}$/;
const BROKER = /^(\[[0-9a-fA-F:.]+\]|[^\s:/,[\]]+):(\d{1,5})$/;
const KNOWN_PARAMS = new Set(["replicationFactor", "minInsyncReplicas"]);

/**
 * Parses `kafka://host:port[,host:port]/topic[?replicationFactor=1&minInsyncReplicas=1]`.
 * WHATWG URL cannot be used: a comma-separated host list is not a valid
 * authority, so the URL is split by hand.
 */
export function parseKafkaUrl(url: string): KafkaLogAddress {
  const match = /^kafka:\/\/([^/?#]+)\/([^?#]+)(?:\?([^#]*))?$/.exec(url.trim());
  if (!match) throw config(url, "expected kafka://host:port[,host:port]/topic");
  const [, hosts = "", rawTopic = "", query = ""] = match;

  const brokers = hosts.split(",").map((b) => b.trim());
  for (const broker of brokers) {
    const parts = BROKER.exec(broker);
    const port = Number(parts?.[2]);
    if (!parts || port < 1 || port > 65535) throw config(url, `bad broker address "${broker}" (host:port)`);
  }

  const topic = decodeURIComponent(rawTopic);
  if (!TOPIC.test(topic) || topic === "." || topic === "..") {
    throw config(url, `bad topic name "${topic}" (letters, digits, '.', '_', '-'; at most 249)`);
  }

  const params = new URLSearchParams(query);
  for (const key of params.keys()) {
    if (!KNOWN_PARAMS.has(key)) throw config(url, `unknown parameter "${key}"`);
  }
  const replicationFactor = positiveInt(url, params, "replicationFactor", 1);
  const minInsyncReplicas = positiveInt(url, params, "minInsyncReplicas", 1);
  if (minInsyncReplicas > replicationFactor) {
    throw config(url, "minInsyncReplicas cannot exceed replicationFactor: every append would fail");
  }
  return { brokers, topic, replicationFactor, minInsyncReplicas };
}

function positiveInt(url: string, params: URLSearchParams, key: string, fallback: number): number {
  const raw = params.get(key);
  if (raw === null) return fallback;
  const value = Number(raw);
  if (!/^\d+$/.test(raw) || value < 1 || value > 32767)
    throw config(url, `${key} must be a positive integer`);
  return value;
}

function config(url: string, why: string): LogError {
  return new LogError(`bad Kafka log URL ${JSON.stringify(url)}: ${why}`, "config");
}
