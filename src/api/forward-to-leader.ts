import { Agent, request as httpRequest, type IncomingHttpHeaders, type IncomingMessage } from "node:http";
import { Readable } from "node:stream";
import type { FastifyReply, FastifyRequest, preParsingAsyncHookHandler } from "fastify";
import { splitHostPort } from "../config.ts";
import { ApiError } from "./api-error.ts";
import type { ApiContext } from "./context.ts";

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

// Hop-by-hop headers (RFC 9110 §7.6.1) describe one connection, not the
// request; host and content-length are set again for the new one.
const NOT_FORWARDED = new Set([
  "connection",
  "keep-alive",
  "proxy-authenticate",
  "proxy-authorization",
  "proxy-connection",
  "te",
  "trailer",
  "transfer-encoding",
  "upgrade",
  "host",
  "content-length",
]);

const CONNECT_TIMEOUT_MS = 5_000;
/** Nomad's rpc_hold_timeout: how long a request waits for a leader to forward it to. */
const RPC_HOLD_MS = 5_000;
const HOLD_RETRY_MS = 100;
// Heartbeats forwarded every few seconds per node reuse connections.
const agent = new Agent({ keepAlive: true, maxSockets: 256 });

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
  const body = bodyOf(request);
  const headers: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(request.headers)) {
    if (value !== undefined && !NOT_FORWARDED.has(name)) headers[name] = value;
  }
  headers[FORWARDED_HEADER] = ctx.config.serverName;
  if (body) headers["content-length"] = String(body.length);

  // Nomad's RPC hold: while leadership moves (a leader restarting, leaving
  // the election) there is briefly no leader, or one that no longer
  // listens; the request waits for the next one instead of failing. Only
  // where nothing was sent yet, so a write is never sent twice.
  const holdUntil = Date.now() + RPC_HOLD_MS;
  let abandon: (() => void) | undefined;
  reply.raw.once("close", () => abandon?.());
  for (;;) {
    const leader = ctx.leadership.leaderAddress();
    try {
      if (!leader) throw new ApiError(500, "No cluster leader");
      const { host, port } = splitHostPort(leader, "leader address");
      headers.host = leader;
      const response = await send(leader, {
        host,
        port,
        method: request.method,
        path: request.url,
        headers,
        body,
        clientGone: (abort) => {
          abandon = abort;
        },
      });
      return relay(reply, response);
    } catch (err) {
      const unsent = !leader || (err instanceof LeaderUnreachable && err.refused);
      if (!unsent || Date.now() >= holdUntil || request.socket.destroyed) throw err;
    }
    await new Promise((r) => setTimeout(r, HOLD_RETRY_MS + Math.random() * HOLD_RETRY_MS));
  }
}

function relay(reply: FastifyReply, response: IncomingMessage): FastifyReply {
  reply.status(response.statusCode ?? 502);
  for (const [name, value] of Object.entries(response.headers as IncomingHttpHeaders)) {
    if (value !== undefined && !NOT_FORWARDED.has(name)) reply.header(name, value);
  }
  if (response.headers["content-length"] !== undefined) {
    reply.header("content-length", response.headers["content-length"]);
  }
  return reply.send(response);
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

function bodyOf(request: FastifyRequest): Buffer | undefined {
  if (request.rawBody) return request.rawBody.length > 0 ? request.rawBody : undefined;
  const body: unknown = request.body;
  if (body === undefined || body === null) return undefined;
  if (Buffer.isBuffer(body)) return body;
  if (typeof body === "string") return Buffer.from(body);
  return Buffer.from(JSON.stringify(body));
}

interface Outgoing {
  readonly host: string;
  readonly port: number;
  readonly method: string;
  readonly path: string;
  readonly headers: Record<string, string | string[]>;
  readonly body: Buffer | undefined;
  /** Registers what to do when the caller hangs up: the leader's work is then abandoned too. */
  readonly clientGone: (abort: () => void) => void;
}

/** Resolves with the leader's response once its headers arrive. */
function send(leader: string, out: Outgoing): Promise<IncomingMessage> {
  return new Promise<IncomingMessage>((resolve, reject) => {
    const upstream = httpRequest({
      agent,
      host: out.host,
      port: out.port,
      method: out.method,
      path: out.path,
      headers: out.headers,
    });
    let connectTimer: NodeJS.Timeout | undefined;
    upstream.once("socket", (socket) => {
      if (!socket.connecting) return;
      // Only connecting is bounded: a blocking query may rightly stay
      // silent for minutes once the leader has it.
      connectTimer = setTimeout(
        () => upstream.destroy(new Error(`no connection within ${CONNECT_TIMEOUT_MS} ms`)),
        CONNECT_TIMEOUT_MS,
      );
      socket.once("connect", () => clearTimeout(connectTimer));
    });
    let answered: IncomingMessage | undefined;
    upstream.once("response", (response) => {
      clearTimeout(connectTimer);
      answered = response;
      resolve(response);
    });
    upstream.once("error", (err: NodeJS.ErrnoException) => {
      clearTimeout(connectTimer);
      reject(
        new LeaderUnreachable(
          `cannot reach the leader at ${leader}: ${err.message}`,
          err.code === "ECONNREFUSED",
        ),
      );
    });
    out.clientGone(() => {
      // A finished exchange leaves its socket to the keep-alive pool.
      if (!answered?.complete && !upstream.destroyed) upstream.destroy();
    });
    upstream.end(out.body);
  });
}
