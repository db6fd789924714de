import type { IncomingMessage } from "node:http";
import type { Duplex } from "node:stream";
import { WebSocket } from "ws";
import { clusterServers } from "../../cluster/server-members.ts";
import type { ApiContext } from "../context.ts";
import { FORWARDED_HEADER } from "../forward-to-leader.ts";
import { multiError, NO_NODE_PATH, NO_NODE_PATH_HEADER } from "../forward-to-peers.ts";
import { websocketCloseCode } from "../websocket-refusal.ts";
import type { InboundMessages } from "./inbound-messages.ts";
import { closeWebSocket } from "./websocket-upgrade.ts";

const HANDSHAKE_TIMEOUT_MS = 5_000;
/** Past this many bytes sent but not yet written, the sending side stops being read. */
const IN_FLIGHT_LIMIT = 256 * 1024;
/** Codes that only describe what happened locally and may not be sent in a close frame. */
const LOCAL_CODES = new Set([1005, 1006, 1015]);
const MAX_ERROR_BODY = 4096;

type Dialled =
  | { readonly kind: "open"; readonly upstream: WebSocket }
  | { readonly kind: "no-path" }
  | { readonly kind: "answered"; readonly status: number; readonly body: string }
  | { readonly kind: "unreachable"; readonly error: string };

/**
 * An exec for a client agent connected to another server: the servers are
 * asked in turn, as websocket clients, with the request's path and the
 * caller's token (the handshake's, if it came that way) and marked as
 * forwarded; the first whose session reaches the node takes it, and the two
 * websockets are joined, close frames relayed. A server without the node
 * answers a marked 404 before upgrading; any other refusal closes the
 * user's websocket with that status's code and text. No server: Nomad's
 * 1008 "No path to node" (1011 with each failure when some could not be
 * asked).
 */
export async function forwardExec(
  ctx: Pick<ApiContext, "leadership" | "config">,
  path: string,
  token: string,
  ws: WebSocket,
  socket: Duplex,
  messages: InboundMessages,
): Promise<void> {
  const self = ctx.config.serverName;
  const peers = clusterServers(ctx.leadership, self).filter(
    (m) => !m.self && m.name !== self && m.address !== "",
  );
  const failures: string[] = [];
  for (const peer of peers) {
    if (ws.readyState !== ws.OPEN) return;
    const dialled = await dial(`ws://${peer.address}${path}`, {
      [FORWARDED_HEADER]: self,
      "x-nomad-token": token,
    });
    switch (dialled.kind) {
      case "no-path":
        continue;
      case "unreachable":
        failures.push(`failed querying server "${peer.address}": ${dialled.error}`);
        continue;
      case "answered":
        closeWebSocket(ws, socket, websocketCloseCode(dialled.status), dialled.body);
        return;
      case "open":
        return join(ws, socket, messages, dialled.upstream);
    }
  }
  if (failures.length > 0) closeWebSocket(ws, socket, websocketCloseCode(500), multiError(failures));
  else closeWebSocket(ws, socket, websocketCloseCode(404), NO_NODE_PATH);
}

function dial(url: string, headers: Record<string, string>): Promise<Dialled> {
  return new Promise((resolve) => {
    const upstream = new WebSocket(url, {
      headers,
      handshakeTimeout: HANDSHAKE_TIMEOUT_MS,
      perMessageDeflate: false,
      followRedirects: false,
    });
    let settled = false;
    const settle = (d: Dialled) => {
      if (settled) return;
      settled = true;
      resolve(d);
    };
    upstream.once("open", () => settle({ kind: "open", upstream }));
    upstream.once("unexpected-response", (_req, res: IncomingMessage) => {
      if (res.headers[NO_NODE_PATH_HEADER] !== undefined) {
        res.resume();
        upstream.terminate();
        return settle({ kind: "no-path" });
      }
      void readSome(res).then((body) => {
        upstream.terminate();
        settle({ kind: "answered", status: res.statusCode ?? 500, body });
      });
    });
    upstream.on("error", (err) => settle({ kind: "unreachable", error: err.message }));
  });
}

/** The start of an error answer's body (error texts are short; a long body is cut). */
function readSome(res: IncomingMessage): Promise<string> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const done = () => resolve(Buffer.concat(chunks).toString("utf8").slice(0, MAX_ERROR_BODY));
    res.on("data", (chunk: Buffer) => {
      if (size >= MAX_ERROR_BODY) return;
      chunks.push(chunk);
      size += chunk.length;
    });
    res.once("end", done);
    res.once("error", done);
    res.once("close", done);
  });
}

/** Joins the user's websocket and the other server's, each direction waiting on the other's writes. */
function join(ws: WebSocket, socket: Duplex, messages: InboundMessages, upstream: WebSocket): Promise<void> {
  return new Promise<void>((resolve) => {
    let done = false;
    upstream.on("error", () => {});
    upstream.once("close", (code: number, reason: Buffer) => {
      if (done) return;
      done = true;
      closeWebSocket(ws, socket, LOCAL_CODES.has(code) ? undefined : code, reason.toString("utf8"));
      resolve();
    });
    ws.once("close", () => {
      if (done) return;
      done = true;
      upstream.terminate();
      resolve();
    });
    messages.consume(relayTo(upstream, ws));
    const down = relayTo(ws, upstream);
    // binaryType is "nodebuffer": each message is one Buffer.
    upstream.on("message", (data, binary) => down({ data: data as Buffer, binary }));
  });
}

/** Sends each message to `to`; stops reading `from` while too much is waiting to be written. */
function relayTo(to: WebSocket, from: WebSocket): (message: { data: Buffer; binary: boolean }) => void {
  let inFlight = 0;
  return ({ data, binary }) => {
    if (to.readyState !== to.OPEN) return;
    inFlight += data.length;
    if (inFlight > IN_FLIGHT_LIMIT) from.pause();
    to.send(data, { binary }, () => {
      inFlight -= data.length;
      if (inFlight <= IN_FLIGHT_LIMIT && from.isPaused) from.resume();
    });
  };
}
