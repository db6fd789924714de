import { type logCreator, logLevel } from "kafkajs";
import { type Logger, pino } from "pino";

export type KafkaLogLevel = "error" | "warn" | "info" | "debug";

const TO_KAFKAJS: Record<KafkaLogLevel, logLevel> = {
  error: logLevel.ERROR,
  warn: logLevel.WARN,
  info: logLevel.INFO,
  debug: logLevel.DEBUG,
};

export function kafkajsLevel(level: KafkaLogLevel): logLevel {
  return TO_KAFKAJS[level];
}

/**
 * Routes kafkajs's own logging into pino, so client warnings (reconnects,
 * rebalances, retries) land in the server's structured log instead of on the
 * console. Without a logger, warnings and errors still go somewhere: stderr.
 */
export function pinoLogCreator(logger?: Logger): logCreator {
  const base = (logger ?? pino({ level: "warn" }, pino.destination(2))).child({ component: "kafkajs" });
  return () =>
    ({ namespace, level, log }) => {
      const { message, timestamp: _timestamp, logger: _logger, ...fields } = log;
      const entry = { namespace, ...fields };
      // kafkajs logs every error response at error level, including the
      // retriable ones it then retries (coordinator loading, leader moving).
      // What finally fails reaches the caller as a rejected promise.
      const retried = namespace === "Connection" && message.startsWith("Response ");
      switch (retried ? logLevel.DEBUG : level) {
        case logLevel.ERROR:
          base.error(entry, message);
          break;
        case logLevel.WARN:
          base.warn(entry, message);
          break;
        case logLevel.INFO:
          base.info(entry, message);
          break;
        default:
          base.debug(entry, message);
      }
    };
}
