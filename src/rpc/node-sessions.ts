import type { YamuxSession } from "./yamux/session.ts";

/**
 * Which multiplexed session reaches each client node, as Nomad's server
 * keeps `nodeConns`: recorded when a node's Register or UpdateStatus
 * succeeds over a session (both authenticated by the node's secret), so a
 * call cannot claim another node's path. The newest session wins: a client
 * that reconnects replaces its old one. Server → client calls (logs, exec,
 * stats) open a stream on it.
 */
export class NodeSessions {
  private readonly byNode = new Map<string, YamuxSession>();

  record(nodeID: string, session: YamuxSession): void {
    if (session.closed) return;
    this.byNode.set(nodeID, session);
  }

  /** The live session to `nodeID`, if this server holds one. */
  get(nodeID: string): YamuxSession | undefined {
    const session = this.byNode.get(nodeID);
    if (session?.closed) {
      this.byNode.delete(nodeID);
      return undefined;
    }
    return session;
  }

  /** Forgets every node reached through `session` (it ended). */
  forget(session: YamuxSession): void {
    for (const [node, s] of this.byNode) if (s === session) this.byNode.delete(node);
  }

  get size(): number {
    return this.byNode.size;
  }
}
