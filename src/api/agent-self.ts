import { arch, availableParallelism, cpus, platform } from "node:os";
import { currentLeadership } from "../../projections/leadership.ts";
import {
  clusterServers,
  DATACENTER,
  hostPort,
  NOMAD_API_VERSION,
  RAFT_PROTOCOL,
  REGION,
  serfMember,
} from "../cluster/server-members.ts";
import type { ServerMember } from "../leadership.ts";
import { formatDuration } from "../util/duration.ts";
import type { ApiContext } from "./context.ts";

/**
 * `GET /v1/agent/self`: Nomad's agentSelf (`config`, `member`, `stats`) for
 * this server. The stats sections are the ones a Nomad server reports and
 * `nomad agent-info` prints, each filled with what chronomad measures under
 * Nomad's key names: `raft` describes the log (its index plays Raft's; the
 * leadership epoch plays the term), `serf` the servers in the election,
 * `runtime` the Node.js process. `chronomad` keeps chronomad's own figures.
 */
export function agentSelf(ctx: ApiContext): Record<string, unknown> {
  const servers = clusterServers(ctx.leadership, ctx.config.serverName);
  const self = servers.find((s) => s.self) ?? servers[0]!;
  return {
    config: agentConfig(ctx, self),
    member: serfMember(self, servers.length),
    stats: {
      nomad: {
        server: "true",
        leader: String(ctx.leadership.isLeader()),
        leader_addr: ctx.leadership.leaderAddress(),
        bootstrap: String(servers.length === 1),
        known_regions: "1",
      },
      raft: raftStats(ctx, servers),
      serf: {
        members: String(servers.length),
        // Members that stop leave the election and the list; none lingers as failed or left.
        failed: "0",
        left: "0",
        health_score: "0",
        encrypted: "false",
        intent_queue: "0",
        event_queue: "0",
        query_queue: "0",
      },
      runtime: runtimeStats(),
      chronomad: {
        applied_index: String(ctx.store.appliedIndex),
        log_last_index: String(ctx.store.log.lastIndex()),
        leader: String(ctx.leadership.isLeader()),
      },
    },
  };
}

/** hashicorp/raft's Stats() keys, answered from the log and the election. */
function raftStats(ctx: ApiContext, servers: readonly ServerMember[]): Record<string, string> {
  const leading = ctx.leadership.isLeader();
  const term = String(currentLeadership(ctx.tables.leadership)?.Epoch ?? 0);
  const last = ctx.store.log.lastIndex();
  const applied = ctx.store.appliedIndex;
  const known = ctx.leadership.leaderAddress() !== "";
  return {
    state: leading ? "Leader" : known ? "Follower" : "Candidate",
    term,
    last_log_index: String(last),
    last_log_term: term,
    // Appended records are durable in the log: committed.
    commit_index: String(last),
    applied_index: String(applied),
    // Records the log holds that this server has not applied yet.
    fsm_pending: String(Math.max(0, last - applied)),
    protocol_version: RAFT_PROTOCOL,
    protocol_version_min: "0",
    protocol_version_max: RAFT_PROTOCOL,
    latest_configuration: `[${servers
      .map((s) => `{Suffrage:Voter ID:${s.name} Address:${s.address}}`)
      .join(" ")}]`,
    num_peers: String(Math.max(0, servers.length - 1)),
    last_contact: leading
      ? "0"
      : known
        ? formatDuration(Math.round(ctx.leadership.lastContactMs()))
        : "never",
  };
}

/** Nomad's helper/stats RuntimeStats keys, with Node's values. */
function runtimeStats(): Record<string, string> {
  return {
    "kernel.name": platform(),
    arch: arch(),
    version: process.version,
    max_procs: String(availableParallelism()),
    // Node has no goroutines; the closest count of concurrent work is its
    // live async resources (sockets, timers, pending I/O).
    goroutines: String(process.getActiveResourcesInfo().length),
    cpu_count: String(cpus().length),
  };
}

/** The fields of Nomad's agent Config that have a meaning for a chronomad server. */
function agentConfig(ctx: ApiContext, self: ServerMember): Record<string, unknown> {
  const { config } = ctx;
  const bind = hostPort(config.httpAddr);
  const advertised = self.address || config.advertiseAddr || config.httpAddr;
  const pool = ctx.schedulers.workerConfig();
  return {
    Region: REGION,
    Datacenter: DATACENTER,
    NodeName: config.serverName,
    DataDir: config.dataDir,
    LogLevel: config.logLevel.toUpperCase(),
    // pino writes JSON lines.
    LogJson: true,
    BindAddr: bind.host,
    EnableDebug: ctx.config.enableDebug,
    // One port serves the HTTP API and the client RPCs (/v1/rpc); there is no serf port.
    Ports: { HTTP: bind.port, RPC: bind.port, Serf: 0 },
    Addresses: { HTTP: bind.host, RPC: bind.host, Serf: "" },
    AdvertiseAddrs: { HTTP: advertised, RPC: advertised, Serf: "" },
    Server: {
      Enabled: true,
      BootstrapExpect: 0,
      NumSchedulers: pool.NumSchedulers,
      EnabledSchedulers: pool.EnabledSchedulers,
    },
    Client: { Enabled: false },
    ACL: { Enabled: ctx.config.aclEnabled },
    Telemetry: { PrometheusMetrics: true, DisableHostname: true },
    Version: {
      Version: NOMAD_API_VERSION,
      VersionPrerelease: "",
      VersionMetadata: "",
      Revision: "",
    },
    // chronomad's own: the log this server consumes.
    Log: ctx.store.log.url,
  };
}
