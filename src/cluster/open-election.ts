import { hostname } from "node:os";
import type { Logger } from "pino";
import type { ServerConfig } from "../config.ts";
import { type Leadership, SoleLeadership } from "../leadership.ts";

/** A Leadership the server starts once it knows its address, and leaves at shutdown. */
export interface Election extends Leadership {
  /**
   * Enters the election advertising its HTTP `address` (and the RPC address
   * Nomad's client agents use); resolves once this server knows whether it leads.
   */
  join(address: string, rpcAddress?: string): Promise<void>;
  close(): Promise<void>;
  /** True when no other server can write to this server's log (file, memory). */
  readonly exclusive: boolean;
}

class SoleElection extends SoleLeadership implements Election {
  readonly exclusive = true;

  async join(address: string, rpcAddress = ""): Promise<void> {
    this.advertise(address, rpcAddress);
  }

  async close(): Promise<void> {}
}

/**
 * The election a log calls for: servers sharing a Kafka log elect a leader
 * through a consumer group beside it, servers sharing an EventStoreDB stream
 * through a lease stream beside it; a server alone on its log (file,
 * memory) leads itself. The Kafka and EventStoreDB clients are imported
 * only for their own URLs: a server on the file log never loads them (the
 * gRPC client alone costs tens of MiB of resident memory).
 */
export async function openElection(
  config: ServerConfig,
  logger: Logger,
  heldEpoch: () => number,
): Promise<Election> {
  const election = logger.child({ component: "election" });
  if (config.log.startsWith("esdb://")) {
    const { EsdbLeadership } = await import("./esdb-leadership.ts");
    return new EsdbLeadership({
      logUrl: config.log,
      serverName: config.serverName,
      sessionTimeoutMs: config.leaderSessionTimeout,
      logger: election,
    });
  }
  if (!config.log.startsWith("kafka://")) return new SoleElection(config.serverName);
  const { KafkaLeadership } = await import("./kafka-leadership.ts");
  return new KafkaLeadership({
    logUrl: config.log,
    serverName: config.serverName,
    sessionTimeoutMs: config.leaderSessionTimeout,
    logger: election,
    heldEpoch,
  });
}

/**
 * The address other servers and clients reach this one at: advertise_addr
 * if set, else the bound address, with the host name in place of an
 * unspecified one (0.0.0.0, ::) that nobody could connect to.
 */
export function advertisedAddress(
  config: ServerConfig,
  bound: string | { address: string; family: string; port: number } | null,
  configured = config.advertiseAddr,
  fallback = config.httpAddr,
): string {
  if (configured) return configured;
  if (!bound || typeof bound === "string") return fallback;
  if (bound.address === "0.0.0.0" || bound.address === "::") return `${hostname()}:${bound.port}`;
  return bound.family === "IPv6" ? `[${bound.address}]:${bound.port}` : `${bound.address}:${bound.port}`;
}
