import { resolve } from "node:path";
import type { Logger } from "pino";
import { type EventLog, LogError } from "./event-log.ts";
import { openFileLog } from "./file/index.ts";
import { openKafkaLog } from "./kafka/index.ts";
import { MemoryLog } from "./memory-log.ts";

export interface OpenLogOptions {
  readonly logger: Logger;
  readonly fsync?: "always" | "never";
}

/** Opens the log a URL names: `file:DIR`, `memory:`, `kafka://host:port[,host:port]/topic`. */
export async function openLog(url: string, options: OpenLogOptions): Promise<EventLog> {
  if (url === "memory:") return new MemoryLog();
  if (url.startsWith("file:")) {
    const dir = url.slice("file:".length).replace(/^\/\/(?=\/)/, "");
    if (!dir) throw new LogError(`log URL ${url} names no directory (use file:DIR)`, "config");
    return openFileLog(resolve(dir), { fsync: options.fsync ?? "always", logger: options.logger });
  }
  if (url.startsWith("kafka://")) return openKafkaLog(url, { logger: options.logger });
  throw new LogError(
    `unsupported log URL "${url}": use file:DIR, memory: or kafka://host:port[,host:port]/topic`,
    "config",
  );
}
