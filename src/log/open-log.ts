import { resolve } from "node:path";
import type { Logger } from "pino";
import { type EventLog, LogError } from "./event-log.ts";
import { openFileLog, openFileLogReadOnly } from "./file/index.ts";
import { MemoryLog } from "./memory-log.ts";
import { ReadOnlyLog } from "./read-only-log.ts";

export interface OpenLogOptions {
  readonly logger: Logger;
  readonly fsync?: "always" | "never";
  /**
   * Open an existing log to read it, beside any writer: appends are refused,
   * nothing is created (a missing file directory or Kafka topic is a
   * LogError naming it), and a file log is neither locked nor repaired (see
   * openFileLogReadOnly). For replay sources and `serve --read-only`.
   */
  readonly readOnly?: boolean;
}

/**
 * Opens the log a URL names: `file:DIR`, `memory:`, `kafka://host:port[,host:port]/topic`,
 * `esdb://host:port[?tls=false][&stream=NAME]`. The Kafka and EventStoreDB
 * clients are imported only for their own URLs, so the default file log
 * never loads them.
 */
export async function openLog(url: string, options: OpenLogOptions): Promise<EventLog> {
  if (url === "memory:") {
    if (options.readOnly) {
      throw new LogError(
        "memory: cannot be opened read-only: a new memory log holds nothing to read",
        "config",
      );
    }
    return new MemoryLog();
  }
  if (url.startsWith("file:")) {
    const dir = fileLogDir(url);
    if (options.readOnly) return openFileLogReadOnly(dir, { logger: options.logger });
    return openFileLog(dir, { fsync: options.fsync ?? "always", logger: options.logger });
  }
  if (url.startsWith("kafka://")) {
    const { openKafkaLog } = await import("./kafka/index.ts");
    if (!options.readOnly) return openKafkaLog(url, { logger: options.logger });
    const { assertKafkaTopicExists } = await import("./kafka-topic-exists.ts");
    await assertKafkaTopicExists(url, options.logger);
    return new ReadOnlyLog(await openKafkaLog(url, { logger: options.logger }));
  }
  if (url.startsWith("esdb://")) {
    // A stream that does not exist is created by the first append, so a
    // read-only open must find it there first.
    const { openEsdbLog } = await import("./esdb/index.ts");
    const log = await openEsdbLog(url, { logger: options.logger, mustExist: options.readOnly });
    return options.readOnly ? new ReadOnlyLog(log) : log;
  }
  throw new LogError(
    `unsupported log URL "${url}": use file:DIR, memory:, kafka://host:port[,host:port]/topic ` +
      "or esdb://host:port?tls=false[&stream=NAME]",
    "config",
  );
}

/** The absolute directory of a `file:DIR` (or `file:///abs/dir`) log URL. */
export function fileLogDir(url: string): string {
  const dir = url.slice("file:".length).replace(/^\/\/(?=\/)/, "");
  if (!dir) throw new LogError(`log URL ${url} names no directory (use file:DIR)`, "config");
  return resolve(dir);
}
