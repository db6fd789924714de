import type { EventEmitter } from "node:events";
import { Agent, request as httpRequest, type IncomingMessage } from "node:http";
import type { FastifyReply, FastifyRequest } from "fastify";
import { splitHostPort } from "../config.ts";

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
// Heartbeats forwarded every few seconds per node reuse connections.
const agent = new Agent({ keepAlive: true, maxSockets: 256 });

/** A request as one server passes it on to another: its body as received, its end-to-end headers. */
export interface ProxiedRequest {
  readonly method: string;
  readonly path: string;
  readonly headers: Record<string, string | string[]>;
  readonly body: Buffer | undefined;
}

/** `request` as sent on by this server (`forwardedBy` in `forwardedHeader`), for any address. */
export function proxiedRequest(
  request: FastifyRequest,
  forwardedHeader: string,
  forwardedBy: string,
): ProxiedRequest {
  const body = bodyOf(request);
  const headers: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(request.headers)) {
    if (value !== undefined && !NOT_FORWARDED.has(name)) headers[name] = value;
  }
  headers[forwardedHeader] = forwardedBy;
  if (body) headers["content-length"] = String(body.length);
  return { method: request.method, path: request.url, headers, body };
}

/**
 * Sends `out` to the server at `address`; resolves with its response once
 * the headers arrive. Only connecting is bounded: a blocking query or a
 * followed log may rightly stay silent for minutes. When the original
 * caller hangs up (`caller` closes), the other server's work is abandoned
 * too; a finished exchange leaves its socket to the pool.
 */
export function sendToServer(
  address: string,
  out: ProxiedRequest,
  caller: EventEmitter,
): Promise<IncomingMessage> {
  const { host, port } = splitHostPort(address, "server address");
  return new Promise<IncomingMessage>((resolve, reject) => {
    const upstream = httpRequest({
      agent,
      host,
      port,
      method: out.method,
      path: out.path,
      headers: { ...out.headers, host: address },
    });
    let connectTimer: NodeJS.Timeout | undefined;
    upstream.once("socket", (socket) => {
      if (!socket.connecting) return;
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
    upstream.once("error", (err) => {
      clearTimeout(connectTimer);
      reject(err);
    });
    const abandon = () => {
      if (!answered?.complete && !upstream.destroyed) upstream.destroy();
    };
    caller.once("close", abandon);
    upstream.once("close", () => caller.off("close", abandon));
    upstream.end(out.body);
  });
}

/** Answers the caller with the other server's response: status, end-to-end headers, and the body as it streams. */
export function relay(reply: FastifyReply, response: IncomingMessage): FastifyReply {
  reply.status(response.statusCode ?? 502);
  for (const [name, value] of Object.entries(response.headers)) {
    if (value !== undefined && !NOT_FORWARDED.has(name)) reply.header(name, value);
  }
  if (response.headers["content-length"] !== undefined) {
    reply.header("content-length", response.headers["content-length"]);
  }
  return reply.send(response);
}

function bodyOf(request: FastifyRequest): Buffer | undefined {
  if (request.rawBody) return request.rawBody.length > 0 ? request.rawBody : undefined;
  const body: unknown = request.body;
  if (body === undefined || body === null) return undefined;
  if (Buffer.isBuffer(body)) return body;
  if (typeof body === "string") return Buffer.from(body);
  return Buffer.from(JSON.stringify(body));
}
