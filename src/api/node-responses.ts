import { clusterServers, DATACENTER, rpcAddressOf } from "../cluster/server-members.ts";
import type { Leadership, ServerMember } from "../leadership.ts";
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
  const servers = serversReply(ctx.leadership, clusterServers(ctx.leadership, ctx.config.serverName));
  return {
    HeartbeatTTL: Math.round((f.heartbeatTtlMs ?? 0) * 1e6),
    EvalIDs: f.evalIDs && f.evalIDs.length > 0 ? f.evalIDs : null,
    EvalCreateIndex: f.evalCreateIndex ?? 0,
    NodeModifyIndex: f.nodeModifyIndex ?? 0,
    LeaderRPCAddr: servers.leaderRpcAddr,
    NumNodes: ctx.tables.nodes.size,
    Servers: servers.servers,
    SchedulingEligibility: f.schedulingEligibility ?? "",
    Features: 0,
    Index: f.index,
    LastContact: 0,
    KnownLeader: leader !== "",
    NextToken: "",
  };
}

/** The reply's view of the servers, made from `members`. */
interface ServersReply {
  readonly members: readonly ServerMember[];
  readonly leaderRpcAddr: string;
  /** Frozen, as its entries: every reply until the members change shares them. */
  readonly servers: readonly object[];
}

/**
 * The servers as the last reply listed them, per leadership: every
 * heartbeat answers with them, and they change only when a server joins,
 * leaves or takes the lead.
 */
const lastServers = new WeakMap<Leadership, ServersReply>();

function serversReply(leadership: Leadership, members: readonly ServerMember[]): ServersReply {
  const last = lastServers.get(leadership);
  if (last !== undefined && sameServers(last.members, members)) return last;
  const leaderMember = members.find((s) => s.leader);
  const made: ServersReply = {
    members,
    leaderRpcAddr: leaderMember ? rpcAddressOf(leaderMember) : "",
    // Clients dial these: the RPC addresses (HTTP for a server without an RPC listener).
    servers: Object.freeze(
      members
        .filter((s) => s.address !== "")
        // Nomad's server leaves the RPC version fields unset too.
        .map((s) =>
          Object.freeze({
            RPCAdvertiseAddr: rpcAddressOf(s),
            RPCMajorVersion: 0,
            RPCMinorVersion: 0,
            Datacenter: DATACENTER,
          }),
        ),
    ),
  };
  lastServers.set(leadership, made);
  return made;
}

/** Whether two member lists give the same reply fields (addresses and the leader). */
function sameServers(a: readonly ServerMember[], b: readonly ServerMember[]): boolean {
  if (a === b) return true;
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) {
    const x = a[i]!;
    const y = b[i]!;
    if (x.address !== y.address || x.rpcAddress !== y.rpcAddress || x.leader !== y.leader) return false;
  }
  return true;
}
