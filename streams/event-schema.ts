/**
 * Who caused a change. Part of every envelope that a person, a client node or
 * a workload asked for; the server itself is the actor of what it decides
 * alone (heartbeat expiry, scheduling, garbage collection).
 */
export interface Actor {
  /**
   * `remote`: an API caller of a cluster without ACLs, known only by its
   * address; `anonymous`: a caller without a token when ACLs are on.
   */
  readonly kind: "token" | "node" | "workload" | "server" | "anonymous" | "remote";
  /**
   * Token accessor ID, node ID, workload identity subject, server name, or
   * (`remote`) the caller's address. Never a secret.
   */
  readonly id: string;
  readonly name?: string;
  /**
   * On API calls (tokens, anonymous, remote): the caller's address as the
   * server saw it; a proxy's X-Forwarded-For only when the server is told
   * to trust it.
   */
  readonly addr?: string;
  /** On API calls: the caller's User-Agent, at most MAX_USER_AGENT characters. */
  readonly userAgent?: string;
  /**
   * On writes of the leader-only services: the leadership epoch they were
   * made under (see streams/leadership.ts). Apply refuses such a write once a
   * later epoch is established.
   */
  readonly epoch?: number;
}

/** User agents are the caller's to choose: the log keeps no more of one than this. */
export const MAX_USER_AGENT = 256;

/**
 * Why a change was made, when it follows from an earlier one: the record it
 * came from (its log index and type) and the object that links them, e.g.
 * the drain that made the drainer mark a node's allocations for migration.
 * Written by the leader's services; absent on direct requests.
 */
export interface Cause {
  /** The log index of the record this one follows from, when known. */
  readonly index?: number;
  /** That record's event type, e.g. "NodeDrainUpdated". */
  readonly type: string;
  /** The object of that record that led here. */
  readonly nodeId?: string;
  readonly evalId?: string;
}

/** The unit stored in the log: plain data, encoded as plain msgpack. */
export interface Envelope<T extends string = string, D = unknown> {
  readonly type: T;
  /** The schema version of `data`. Old versions are upcast when read. */
  readonly v: number;
  /** Unix milliseconds, taken by the writer: apply never reads the clock. */
  readonly at: number;
  readonly by?: Actor;
  readonly cause?: Cause;
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
