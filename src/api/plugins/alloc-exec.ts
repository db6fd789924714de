import type { Duplex } from "node:stream";
import type { FastifyPluginAsync, FastifyRequest } from "fastify";
import { type WebSocket, WebSocketServer } from "ws";
import type { AuthenticatedIdentity } from "../../auth/authenticate.ts";
import { presentedToken } from "../../auth/authenticate.ts";
import { parseGoBool } from "../../query/filter/go-strconv.ts";
import { queryBool } from "../../query/query-bool.ts";
import { nodeStreamingRpc } from "../../rpc/client-calls.ts";
import { ApiError } from "../api-error.ts";
import { queryOptions, StreamFailure, streamTarget } from "../client-call-checks.ts";
import type { ApiContext } from "../context.ts";
import { bridgeExec } from "../exec/exec-bridge.ts";
import { forwardExec } from "../exec/exec-forward.ts";
import { InboundMessages } from "../exec/inbound-messages.ts";
import { acceptWebSocket, closeWebSocket, routeUpgrades } from "../exec/websocket-upgrade.ts";
import { FORWARDED_HEADER } from "../forward-to-leader.ts";
import { answerNoNodePath, NO_NODE_PATH } from "../forward-to-peers.ts";
import { idParam, textQuery } from "../request-schemas.ts";
import { isWebSocketRequest, websocketCloseCode } from "../websocket-refusal.ts";

const execQuery = textQuery("task", "command", "tty", "ws_handshake", "namespace", "region");

/** What gorilla/websocket answers Nomad's exec when the request is not a websocket. */
const NOT_A_WEBSOCKET =
  "failed to upgrade connection: websocket: the client is not using the websocket protocol: " +
  "'upgrade' token not found in 'Connection' header";

/** Exec input is keystrokes and terminal sizes; a larger message is refused by `ws`. */
const MAX_MESSAGE_BYTES = 4 * 1024 * 1024;

/**
 * `/v1/client/allocation/:id/exec`: a command in a running task, over a
 * websocket bridged to the client agent's Allocations.Exec stream (Nomad's
 * allocExec and execStreamImpl in command/agent/alloc_endpoint.go,
 * ClientAllocations.exec in nomad/client_alloc_endpoint.go).
 *
 * The checks, in order: the command (a JSON array of strings), `tty`; over
 * a websocket, the websocket is accepted first and the `ws_handshake`
 * message read (its token then authenticates the call); then an unknown
 * allocation (404 `Unknown allocation "<id>"`), the alloc-exec capability
 * in its namespace, the node (known, a Nomad agent that takes RPCs), and
 * the session that reaches it (this server's, else another server's, else
 * 404 "No path to node"). Over a websocket a failure is the close frame
 * Nomad sends (1008 for a status it codes, 1011 for a 500, which is what a
 * missing capability is there); over plain HTTP it is the status.
 */
export const allocExecPlugin: FastifyPluginAsync<ApiContext> = async (app, ctx) => {
  const server = new WebSocketServer({
    noServer: true,
    maxPayload: MAX_MESSAGE_BYTES,
    perMessageDeflate: false,
  });
  const live = new Set<Duplex>();
  // This is the API's one websocket route; upgrades of any path go through the router.
  routeUpgrades(app);
  app.addHook("onClose", async () => {
    for (const socket of live) socket.destroy();
    server.close();
  });

  app.get(
    "/v1/client/allocation/:id/exec",
    { schema: { params: idParam, querystring: execQuery } },
    async (request, reply) => {
      const q = request.query as Record<string, string | undefined>;
      const command = checkCommand(q.command);
      const tty = queryBool(q, "tty") ?? false;
      const { id } = request.params as { id: string };
      if (!isWebSocketRequest(request.raw)) {
        const alloc = checked(request, id, request.identity);
        if (alloc instanceof StreamFailure) throw plainError(alloc);
        throw ctx.nodeSessions.get(alloc.NodeID)
          ? ApiError.badRequest(NOT_A_WEBSOCKET)
          : ApiError.notFound(NO_NODE_PATH);
      }
      if (request.headers[FORWARDED_HEADER] !== undefined) {
        // Asked by another server: without the node, say so before upgrading, so it asks the next one.
        const alloc = checked(request, id, request.identity);
        if (!(alloc instanceof StreamFailure) && !ctx.nodeSessions.get(alloc.NodeID))
          return answerNoNodePath(reply);
      }
      reply.hijack();
      const socket = request.raw.socket;
      let ws: WebSocket;
      try {
        ws = await acceptWebSocket(server, request.raw, socket);
      } catch {
        return; // ws answered the client itself
      }
      live.add(socket);
      socket.once("close", () => live.delete(socket));
      const messages = new InboundMessages(ws);
      const close = (code: number, reason: string) => closeWebSocket(ws, socket, code, reason);
      const exec = { id, command, tty, task: q.task ?? "", handshake: q.ws_handshake ?? "" };
      void runExec(ctx, request, ws, socket, messages, exec).catch((err: unknown) => {
        request.log.error({ err }, "alloc exec failed");
        close(websocketCloseCode(500), "internal error");
      });
    },
  );
};

interface Exec {
  readonly id: string;
  readonly command: string[] | null;
  readonly tty: boolean;
  readonly task: string;
  readonly handshake: string;
}

async function runExec(
  ctx: ApiContext,
  request: FastifyRequest,
  ws: WebSocket,
  socket: Duplex,
  messages: InboundMessages,
  exec: Exec,
): Promise<void> {
  const close = (code: number, reason: string) => closeWebSocket(ws, socket, code, reason);
  let identity = request.identity;
  let token = presentedToken(request) ?? "";
  if (exec.handshake !== "") {
    const wanted = parseGoBool(exec.handshake);
    if (!wanted.ok) return close(1008, `ws_handshake value is not a boolean: ${wanted.error}`);
    if (wanted.value) {
      const message = await messages.next();
      if (!message) return;
      const read = readHandshake(message.data);
      if (read instanceof Error) return close(1008, read.message);
      token = read;
      // The handshake's token stands in for the header's (Nomad's readWsHandshake).
      request.raw.headers["x-nomad-token"] = token;
      delete request.raw.headers.authorization;
      identity = ctx.authenticator.authenticate(request);
      // Nomad's server refuses a credential it cannot authenticate with "Permission denied" (a 500).
      if (identity.failure !== undefined) return close(websocketCloseCode(500), "Permission denied");
    }
  }
  const alloc = checked(request, exec.id, identity);
  if (alloc instanceof StreamFailure) return close(websocketCloseCode(alloc.code ?? 500), alloc.message);
  const session = ctx.nodeSessions.get(alloc.NodeID);
  if (!session) {
    if (request.headers[FORWARDED_HEADER] !== undefined) return close(websocketCloseCode(404), NO_NODE_PATH);
    return forwardExec(ctx, withoutHandshake(request.url), token, ws, socket, messages);
  }
  let stream: Duplex;
  try {
    stream = await nodeStreamingRpc(session, "Allocations.Exec");
  } catch (err) {
    return close(websocketCloseCode(500), (err as Error).message);
  }
  const args = {
    AllocID: exec.id,
    Task: exec.task,
    Tty: exec.tty,
    Cmd: exec.command,
    ...queryOptions(request, token),
  };
  await bridgeExec(ws, socket, messages, stream, args, request.log);
}

/** The server's checks for an exec (the allocation, alloc-exec in its namespace, the node): the allocation, or the failure. */
function checked(request: FastifyRequest, id: string, identity: AuthenticatedIdentity) {
  try {
    return streamTarget(request, id, (ns) => identity.allows(ns, "alloc-exec"));
  } catch (err) {
    if (err instanceof StreamFailure) return err;
    throw err;
  }
}

/** Over plain HTTP a missing capability is chronomad's 403, as for every other route. */
function plainError(failure: StreamFailure): ApiError {
  return failure.code === undefined ? ApiError.forbidden() : new ApiError(failure.code, failure.message);
}

/** `command` is a JSON array of strings, as Nomad's handler decodes it before anything else. */
function checkCommand(text: string | undefined): string[] | null {
  let command: unknown;
  try {
    command = JSON.parse(text ?? "");
  } catch (err) {
    throw ApiError.badRequest(`failed to marshal command into json: ${(err as Error).message}`);
  }
  if (command !== null && !(Array.isArray(command) && command.every((c) => typeof c === "string"))) {
    throw ApiError.badRequest("failed to marshal command into json: command must be an array of strings");
  }
  return command as string[] | null;
}

/** Nomad's wsHandshakeMessage `{"version": 1, "auth_token": "..."}`: the token, or why it is refused. */
function readHandshake(data: Buffer): string | Error {
  let message: unknown;
  try {
    message = JSON.parse(data.toString("utf8"));
  } catch (err) {
    return err as Error;
  }
  // encoding/json matches keys in any case.
  const fields = new Map<string, unknown>();
  if (typeof message === "object" && message !== null) {
    for (const [key, value] of Object.entries(message)) fields.set(key.toLowerCase(), value);
  }
  const version = fields.get("version") ?? 0;
  if (version !== 1) return new Error(`unexpected handshake value: ${String(version)}`);
  const token = fields.get("auth_token");
  return typeof token === "string" ? token : "";
}

/** The request's path for another server: the token goes in a header there, so no handshake. */
function withoutHandshake(url: string): string {
  const parsed = new URL(url, "http://server");
  parsed.searchParams.delete("ws_handshake");
  return parsed.pathname + parsed.search;
}
