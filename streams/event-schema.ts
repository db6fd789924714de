/**
 * Who caused a change. Part of every envelope that a person, a client node or
 * a workload asked for; the server itself is the actor of what it decides
 * alone (heartbeat expiry, scheduling, garbage collection).
 */
export interface Actor {
  readonly kind: "token" | "node" | "workload" | "server" | "anonymous";
  /** Token accessor ID, node ID, workload identity subject, or server name. Never a secret. */
  readonly id: string;
  readonly name?: string;
  /**
   * On writes of the leader-only services: the leadership epoch they were
   * made under (see streams/leadership.ts). Apply refuses such a write once a
   * later epoch is established.
   */
  readonly epoch?: number;
}

/** The unit stored in the log: plain data, encoded as plain msgpack. */
export interface Envelope<T extends string = string, D = unknown> {
  readonly type: T;
  /** The schema version of `data`. Old versions are upcast when read. */
  readonly v: number;
  /** Unix milliseconds, taken by the writer: apply never reads the clock. */
  readonly at: number;
  readonly by?: Actor;
  readonly data: D;
}

/**
 * A versioned event type. `upcast[n]` lifts the data of version n to version
 * n+1; reading an envelope of version v applies upcast[v], upcast[v+1], ... up
 * to `version`. Entries are never removed once a version has been written.
 */
export interface EventSchema {
  readonly type: string;
  readonly version: number;
  readonly upcast?: Readonly<Record<number, (data: unknown) => unknown>>;
}

/** Declares a stream's event types in one place; see streams/index.ts. */
export function schemas(...list: EventSchema[]): readonly EventSchema[] {
  return list;
}
