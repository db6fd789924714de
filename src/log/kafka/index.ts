export { KafkaLog, type KafkaLogOptions, openKafkaLog } from "./kafka-log.ts";
export type { KafkaLogLevel } from "./kafka-logging.ts";
export { type KafkaLogAddress, parseKafkaUrl } from "./kafka-url.ts";
