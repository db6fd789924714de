/** One exported change, as a sink delivers it. */
export interface ExportMessage {
  /** `Topic/Namespace/ID`: the object's key, the same for every change of it. */
  readonly key: string;
  /** The change's event-stream topic (`Allocation`, `Node`, …): a Kafka sink may give each its own topic. */
  readonly topic: string;
  readonly index: number;
  /** The row (flat or Debezium-shaped), encoded by the sink's format. */
  readonly value: Readonly<Record<string, unknown>>;
  /** The object is gone: a Kafka sink follows the row with a tombstone on its key. */
  readonly deleted: boolean;
}

/** How far a sink got, and whose history it holds. */
export interface SinkPosition {
  /** The last index fully delivered (0 for a new sink). */
  readonly index: number;
  /** The cluster whose changes the sink holds; undefined for a new sink. */
  readonly clusterId?: string;
}

/**
 * Where exported changes go. A sink commits messages together with the
 * index they bring it to, atomically: after a crash, `position()` is the
 * last index whose messages are all delivered, and nothing after it is.
 */
export interface ExportSink {
  position(): Promise<SinkPosition>;
  /** Delivers `messages` and moves the position to `index`, all or nothing. */
  commit(messages: readonly ExportMessage[], index: number, clusterId: string): Promise<void>;
  close(): Promise<void>;
}

export type ExportFormat = "json" | "msgpack";

/** The shape of each row: flat columns, or Debezium's change-event envelope. */
export type ExportEnvelope = "flat" | "debezium";

/** The target is held by another exporter (a lock, or a Kafka producer that fenced this one). */
export class ExportTargetBusy extends Error {}
