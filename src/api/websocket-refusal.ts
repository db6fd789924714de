import { createHash } from "node:crypto";
import type { IncomingMessage } from "node:http";
import type { Duplex } from "node:stream";

/** RFC 6455's GUID, hashed with the client's key to prove the handshake was read. */
const WEBSOCKET_GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";

/** Close frame payloads hold at most 125 bytes: the 2-byte code and the reason. */
const MAX_CLOSE_REASON_BYTES = 123;

/** Whether `request` asks to become a websocket (with the key a handshake needs). */
export function isWebSocketRequest(request: IncomingMessage): boolean {
  const upgrade = request.headers.upgrade;
  return (
    typeof upgrade === "string" &&
    upgrade.toLowerCase() === "websocket" &&
    typeof request.headers["sec-websocket-key"] === "string"
  );
}

/**
 * The websocket close code Nomad gives an HTTP status (command/agent
 * alloc_endpoint.go toWsCode): 1011 for a 500, 1008 ("policy violation")
 * for anything else.
 */
export function websocketCloseCode(httpStatus: number): number {
  return httpStatus === 500 ? 1011 : 1008;
}

/**
 * Completes the websocket handshake and closes the socket at once with
 * `code` and `reason`, as Nomad ends an exec stream whose RPC failed: its
 * clients read the reason of the close frame as the error.
 */
export function acceptAndClose(request: IncomingMessage, socket: Duplex, code: number, reason: string): void {
  const key = String(request.headers["sec-websocket-key"]);
  const accept = createHash("sha1")
    .update(key + WEBSOCKET_GUID)
    .digest("base64");
  socket.write(
    "HTTP/1.1 101 Switching Protocols\r\n" +
      "Upgrade: websocket\r\n" +
      "Connection: Upgrade\r\n" +
      `Sec-WebSocket-Accept: ${accept}\r\n\r\n`,
  );
  let text = Buffer.from(reason, "utf8");
  if (text.length > MAX_CLOSE_REASON_BYTES) text = text.subarray(0, MAX_CLOSE_REASON_BYTES);
  const payload = Buffer.alloc(2 + text.length);
  payload.writeUInt16BE(code, 0);
  text.copy(payload, 2);
  // FIN + opcode 8 (close); a server's frames are not masked.
  socket.end(Buffer.concat([Buffer.from([0x88, payload.length]), payload]));
}
