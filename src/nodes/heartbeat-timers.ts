/**
 * The leader's heartbeat timers, as the client RPC handlers see them. The
 * heartbeat watcher implements it; a server that does not lead has no timers.
 */
export interface HeartbeatTimers {
  /** Whether this server runs the timers (it leads): a heartbeat elsewhere would be lost. */
  readonly active: boolean;
  /**
   * Restarts the node's timer and returns the TTL to tell the client, in
   * milliseconds, or undefined when this server does not lead (Nomad:
   * "failed to reset heartbeat since server is not leader").
   */
  reset(nodeID: string): number | undefined;
  /** Forgets the node's timer (the node went down or was purged). */
  clear(nodeID: string): void;
}
