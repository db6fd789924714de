import { clusterServers, DATACENTER, rpcAddressOf } from "../cluster/server-members.ts";
import type { ApiContext } from "./context.ts";

export interface NodeUpdateFields {
  /** Milliseconds; 0 when the node has no timer (down, or an operator call). */
  readonly heartbeatTtlMs?: number;
  readonly evalIDs?: readonly string[];
  readonly evalCreateIndex?: number;
  readonly nodeModifyIndex?: number;
  readonly schedulingEligibility?: string;
  readonly index: number;
}

/**
 * Nomad's NodeUpdateResponse, the answer of Node.Register, Node.UpdateStatus,
 * Node.Evaluate and Node.Deregister. Durations are nanoseconds, as Go encodes
 * time.Duration.
 */
export function nodeUpdateResponse(ctx: ApiContext, f: NodeUpdateFields): Record<string, unknown> {
  const leader = ctx.leadership.leaderAddress();
  // Clients dial these: the RPC addresses (HTTP for a server without an RPC listener).
  const servers = clusterServers(ctx.leadership, ctx.config.serverName);
  const leaderMember = servers.find((s) => s.leader);
  return {
    HeartbeatTTL: Math.round((f.heartbeatTtlMs ?? 0) * 1e6),
    EvalIDs: f.evalIDs && f.evalIDs.length > 0 ? f.evalIDs : null,
    EvalCreateIndex: f.evalCreateIndex ?? 0,
    NodeModifyIndex: f.nodeModifyIndex ?? 0,
    LeaderRPCAddr: leaderMember ? rpcAddressOf(leaderMember) : "",
    NumNodes: ctx.tables.nodes.size,
    Servers: servers
      .filter((s) => s.address !== "")
      // Nomad's server leaves the RPC version fields unset too.
      .map((s) => ({
        RPCAdvertiseAddr: rpcAddressOf(s),
        RPCMajorVersion: 0,
        RPCMinorVersion: 0,
        Datacenter: DATACENTER,
      })),
    SchedulingEligibility: f.schedulingEligibility ?? "",
    Features: 0,
    Index: f.index,
    LastContact: 0,
    KnownLeader: leader !== "",
    NextToken: "",
  };
}
