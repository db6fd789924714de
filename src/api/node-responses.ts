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
  return {
    HeartbeatTTL: Math.round((f.heartbeatTtlMs ?? 0) * 1e6),
    EvalIDs: f.evalIDs && f.evalIDs.length > 0 ? f.evalIDs : null,
    EvalCreateIndex: f.evalCreateIndex ?? 0,
    NodeModifyIndex: f.nodeModifyIndex ?? 0,
    LeaderRPCAddr: leader,
    NumNodes: ctx.tables.nodes.size,
    Servers: ctx.leadership.peers().map((addr) => ({ RPCAdvertiseAddr: addr, Datacenter: "" })),
    SchedulingEligibility: f.schedulingEligibility ?? "",
    Features: 0,
    Index: f.index,
    LastContact: 0,
    KnownLeader: leader !== "",
    NextToken: "",
  };
}
