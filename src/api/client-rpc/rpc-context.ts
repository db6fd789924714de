import type { FastifyRequest } from "fastify";
import { goTime } from "../../../projections/go-time.ts";
import type { NodeEventSpec } from "../../../streams/nodes.ts";
import { ApiError } from "../api-error.ts";
import type { ApiContext } from "../context.ts";
import type { AllocUpdateBatcher } from "./alloc-update-batcher.ts";
import type { NodeEventBody } from "./schemas.ts";

export interface RpcContext {
  readonly api: ApiContext;
  readonly batcher: AllocUpdateBatcher;
}

/** One client RPC method: validated body in, Nomad's reply struct out. */
export type RpcHandler = (rc: RpcContext, request: FastifyRequest) => Promise<Record<string, unknown>>;

/**
 * Heartbeat timers live on the leader; a server that does not lead would
 * lose the heartbeat, so the call fails before anything is written.
 */
export function notLeader(): ApiError {
  return new ApiError(500, "failed to reset heartbeat since server is not leader");
}

/** The reply meta of Nomad's read RPCs (QueryMeta), flattened as Go encodes it. */
export function queryMeta(ctx: ApiContext, index: number): Record<string, unknown> {
  const leader = ctx.leadership.leaderAddress();
  return { Index: Math.max(1, index), LastContact: 0, KnownLeader: leader !== "", NextToken: "" };
}

/** A client's NodeEvent as stored: its timestamp in RFC 3339, the server's time when it sent none. */
export function nodeEventFrom(body: NodeEventBody, nowMs: number): NodeEventSpec {
  let timestamp = goTime(nowMs);
  const t = body.Timestamp;
  if (t instanceof Date && !Number.isNaN(t.getTime())) timestamp = goTime(t.getTime());
  else if (typeof t === "string" && t !== "" && t !== "0001-01-01T00:00:00Z") {
    if (Number.isNaN(Date.parse(t)))
      throw ApiError.badRequest(`NodeEvent.Timestamp ${JSON.stringify(t)} is not an RFC 3339 time`);
    timestamp = t;
  } else if (t !== undefined && t !== null && typeof t !== "string") {
    throw ApiError.badRequest("NodeEvent.Timestamp must be an RFC 3339 time");
  }
  return {
    Message: body.Message ?? "",
    Subsystem: body.Subsystem ?? "",
    Details: body.Details ?? null,
    Timestamp: timestamp,
  };
}

/** Nomad's blocking RPCs: MaxQueryTime (ns) clamped to 5 minutes, 5 minutes when unset. */
export function blockingParams(body: { MinQueryIndex?: number; MaxQueryTime?: number }, maxWaitMs: number) {
  const waitNs = body.MaxQueryTime ?? 0;
  const waitMs = waitNs > 0 ? Math.min(waitNs / 1e6, maxWaitMs) : maxWaitMs;
  return { minIndex: body.MinQueryIndex ?? 0, waitMs };
}
