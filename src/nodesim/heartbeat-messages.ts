/** What the simulator's main thread and its heartbeat thread tell each other (structured-clone data). */

export interface HeartbeatWorkerData {
  /** http://host:port of the server. */
  readonly server: string;
  readonly encoding: "msgpack" | "json";
}

/** A thread's event-loop delay since the last ask (perf_hooks, 1 ms resolution). */
export interface ThreadLoopDelay {
  readonly p50_ms: number;
  readonly p99_ms: number;
  readonly max_ms: number;
  readonly count: number;
}

export type ToHeartbeatThread =
  | {
      readonly t: "add";
      readonly i: number;
      readonly id: string;
      readonly secret: string;
      readonly seed: string;
    }
  | { readonly t: "ttl"; readonly i: number; readonly ms: number }
  | { readonly t: "start"; readonly i: number; readonly ms: number }
  | { readonly t: "retry"; readonly i: number }
  | { readonly t: "stop"; readonly i: number }
  | { readonly t: "beat"; readonly i: number; readonly req: number }
  | { readonly t: "loop"; readonly req: number }
  /** Answer once the heartbeats already sent are answered, or after `ms`. */
  | { readonly t: "settle"; readonly req: number; readonly ms: number };

export type FromHeartbeatThread =
  /** One call the thread made, for the simulator's counters. */
  | {
      readonly t: "call";
      readonly method: string;
      readonly ms: number;
      readonly out: number;
      readonly in: number;
      readonly status: number;
      readonly reason: string;
    }
  /** The answer to a "beat": no error when the server took it. */
  | { readonly t: "beat"; readonly req: number; readonly error?: { status: number; message: string } }
  /** A node's heartbeat was answered 404: its logic registers it again. */
  | { readonly t: "forgotten"; readonly i: number }
  | { readonly t: "loop"; readonly req: number; readonly delay: ThreadLoopDelay }
  /** The answer to a "settle", sent after the "call" of every heartbeat it waited for. */
  | { readonly t: "settled"; readonly req: number };
