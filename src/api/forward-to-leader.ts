import { Readable } from "node:stream";
import type { FastifyReply, FastifyRequest, preParsingAsyncHookHandler } from "fastify";
import { ApiError } from "./api-error.ts";
import type { ApiContext } from "./context.ts";
import { proxiedRequest, relay, sendToServer } from "./proxy-to-server.ts";

/**
 * Set on a request one server forwards to another (its value: the
 * forwarding server's name). A server that receives a forwarded request and
 * does not lead answers "No cluster leader" instead of forwarding again, so
 * two servers that disagree about the leader cannot bounce a request
 * between them.
 */
export const FORWARDED_HEADER = "x-nomad-forwarded";

declare module "fastify" {
  interface FastifyRequest {
    /** The request body as received, when the route captures it with `captureRawBody`. */
    rawBody?: Buffer;
  }
}

/** Nomad's rpc_hold_timeout: how long a request waits for a leader to forward it to. */
const RPC_HOLD_MS = 5_000;
const HOLD_RETRY_MS = 100;

/**
 * A route `preParsing` hook that keeps the body's bytes as received in
 * `request.rawBody` (parsers still see them), so `forwardToLeader` sends
 * exactly what the client sent, whatever its encoding (JSON, msgpack).
 */
export const captureRawBody: preParsingAsyncHookHandler = async (request, _reply, payload) => {
  const limit = request.routeOptions.bodyLimit ?? Number.POSITIVE_INFINITY;
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of payload) {
    const buffer = typeof chunk === "string" ? Buffer.from(chunk) : (chunk as Buffer);
    size += buffer.length;
    if (size > limit) throw new ApiError(413, "Request body is too large");
    chunks.push(buffer);
  }
  request.rawBody = Buffer.concat(chunks);
  return Readable.from([request.rawBody], { objectMode: false });
};

/**
 * Sends this request on to the leader and answers with the leader's
 * response: method, path, query, headers and body go as they came (plus
 * X-Nomad-Forwarded); status, headers and body come back as the leader sent
 * them, streamed, so a blocking query answers when the leader's does. For
 * what only the leader can do: client heartbeats (its timers) and the
 * client RPCs that wait on them.
 *
 * ```ts
 * app.post("/v1/rpc/Node.UpdateStatus", { preParsing: captureRawBody }, async (request, reply) => {
 *   if (!ctx.leadership.isLeader()) return forwardToLeader(ctx, request, reply);
 *   // ... handle it here, on the leader
 * });
 * ```
 *
 * Without `captureRawBody` on the route, a parsed body is sent again as
 * JSON. With no known leader, or one that refuses connections, it waits
 * for one up to RPC_HOLD_MS; then, or for a leader that cannot be reached
 * otherwise, or a request that was already forwarded once, it throws a 500
 * "No cluster leader" (Nomad's message; its clients retry on it).
 */
export async function forwardToLeader(
  ctx: Pick<ApiContext, "leadership" | "config">,
  request: FastifyRequest,
  reply: FastifyReply,
): Promise<FastifyReply> {
  const from = request.headers[FORWARDED_HEADER];
  if (from !== undefined) {
    throw new ApiError(
      500,
      `No cluster leader: ${String(from)} forwarded this request, but this server does not lead`,
    );
  }
  const out = proxiedRequest(request, FORWARDED_HEADER, ctx.config.serverName);

  // Nomad's RPC hold: while leadership moves (a leader restarting, leaving
  // the election) there is briefly no leader, or one that no longer
  // listens; the request waits for the next one instead of failing. Only
  // where nothing was sent yet, so a write is never sent twice.
  const holdUntil = Date.now() + RPC_HOLD_MS;
  for (;;) {
    const leader = ctx.leadership.leaderAddress();
    try {
      if (!leader) throw new ApiError(500, "No cluster leader");
      const response = await sendToServer(leader, out, reply.raw).catch((err: NodeJS.ErrnoException) => {
        throw new LeaderUnreachable(
          `cannot reach the leader at ${leader}: ${err.message}`,
          err.code === "ECONNREFUSED",
        );
      });
      return relay(reply, response);
    } catch (err) {
      const unsent = !leader || (err instanceof LeaderUnreachable && err.refused);
      if (!unsent || Date.now() >= holdUntil || request.socket.destroyed) throw err;
    }
    await new Promise((r) => setTimeout(r, HOLD_RETRY_MS + Math.random() * HOLD_RETRY_MS));
  }
}

/** The leader could not be reached; `refused` when the request certainly never got there. */
class LeaderUnreachable extends ApiError {
  constructor(
    why: string,
    readonly refused: boolean,
  ) {
    super(500, `No cluster leader: ${why}`);
  }
}
