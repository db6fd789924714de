import { type IncomingMessage, ServerResponse } from "node:http";
import type { Socket } from "node:net";
import type { Duplex } from "node:stream";
import type { FastifyInstance } from "fastify";
import type { WebSocket, WebSocketServer } from "ws";

const HEAD = Symbol("websocket upgrade head");
type UpgradeRequest = IncomingMessage & { [HEAD]?: Buffer };

/** Close frame payloads hold at most 125 bytes: the 2-byte code and the reason. */
const MAX_CLOSE_REASON_BYTES = 123;

/**
 * Hands HTTP upgrade requests to fastify's router like any other request
 * (authentication, the ACL gate, schemas, then the route), so a websocket
 * route is an ordinary route that hijacks its reply. Node only detaches its
 * HTTP parser from a socket it emitted as 'upgrade'; a websocket taken over
 * from a normal request would have its frames parsed as HTTP. An answer
 * that is not an upgrade (an error) closes the connection after it.
 */
export function routeUpgrades(app: FastifyInstance): void {
  app.server.on("upgrade", (request: UpgradeRequest, socket: Duplex, head: Buffer) => {
    // Node took its own listeners off the socket; an error must not go unheard.
    socket.on("error", () => socket.destroy());
    request[HEAD] = head;
    const response = new ServerResponse(request);
    response.shouldKeepAlive = false;
    response.assignSocket(socket as Socket);
    response.once("finish", () => socket.end());
    app.routing(request, response);
  });
}

/** The bytes that came after an upgrade request's headers (usually none). */
export function upgradeHead(request: IncomingMessage): Buffer {
  return (request as UpgradeRequest)[HEAD] ?? Buffer.alloc(0);
}

/** Completes the websocket handshake; rejects if `ws` refused it (it answered the client itself). */
export function acceptWebSocket(
  server: WebSocketServer,
  request: IncomingMessage,
  socket: Duplex,
): Promise<WebSocket> {
  return new Promise((resolve, reject) => {
    const refused = () => reject(new Error("websocket handshake refused"));
    socket.once("close", refused);
    server.handleUpgrade(request, socket, upgradeHead(request), (ws) => {
      socket.off("close", refused);
      resolve(ws);
    });
  });
}

/**
 * Sends a close frame and ends the connection at once, as Nomad's exec
 * endpoint does (it writes the close message, then closes the connection
 * without waiting for the peer's close). The reason is cut to fit a frame.
 */
export function closeWebSocket(ws: WebSocket, socket: Duplex, code?: number, reason = ""): void {
  if (ws.readyState === ws.OPEN && code !== undefined) ws.close(code, fitReason(reason));
  socket.end();
}

function fitReason(reason: string): string {
  let text = Buffer.from(reason, "utf8");
  if (text.length <= MAX_CLOSE_REASON_BYTES) return reason;
  text = text.subarray(0, MAX_CLOSE_REASON_BYTES);
  // Never half a character: a last character cut short is dropped whole.
  let start = text.length - 1;
  while (start > 0 && (text[start]! & 0xc0) === 0x80) start--;
  const lead = text[start]!;
  const size = lead < 0x80 ? 1 : lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : 2;
  return text.subarray(0, start + size > text.length ? start : text.length).toString("utf8");
}
