import type { Duplex } from "node:stream";
import type { FastifyBaseLogger } from "fastify";
import type { WebSocket } from "ws";
import { encodeGo } from "../../rpc/go-msgpack.ts";
import { GoValueReader } from "../../rpc/go-value-reader.ts";
import { finishStream, isClosedError, streamFrameOf } from "../../rpc/stream-frames.ts";
import { websocketCloseCode } from "../websocket-refusal.ts";
import { ExecInputError, parseExecInput } from "./exec-input.ts";
import type { InboundMessages } from "./inbound-messages.ts";
import { closeWebSocket } from "./websocket-upgrade.ts";

/** Websocket close code for a stream that ended normally. */
const NORMAL_CLOSURE = 1000;

/**
 * Nomad's execStreamImpl, between a user's websocket and the client agent's
 * Allocations.Exec stream: the request goes first; each websocket message
 * (JSON stdin / terminal size) becomes one msgpack message to the agent;
 * each frame from the agent is sent as one text message (its payload, the
 * driver's JSON output). The session ends as Nomad ends it: the agent's
 * stream ending is a normal close (1000); an error frame closes with its
 * code (1008, or 1011 for a 500) and text; the user hanging up ends the
 * agent's stream. Input that is not a valid message stops the input (Nomad's
 * input loop gives up on it) while output goes on. Both directions wait for
 * the other side to take what they send.
 */
export function bridgeExec(
  ws: WebSocket,
  socket: Duplex,
  messages: InboundMessages,
  stream: Duplex,
  request: Record<string, unknown>,
  log: FastifyBaseLogger,
): Promise<void> {
  return new Promise<void>((resolve) => {
    let done = false;
    let inputStopped = false;
    const finish = (code?: number, reason?: string) => {
      if (done) return;
      done = true;
      finishStream(stream);
      closeWebSocket(ws, socket, code, reason);
      resolve();
    };
    ws.once("close", () => finish());
    ws.on("error", () => finish());
    stream.on("error", () => {});

    stream.write(encodeGo(request));
    messages.consume(({ data }) => {
      if (done || inputStopped) return;
      let input: ReturnType<typeof parseExecInput>;
      try {
        input = parseExecInput(data.toString("utf8"));
      } catch (err) {
        if (!(err instanceof ExecInputError)) throw err;
        inputStopped = true;
        log.debug({ err }, "alloc exec: input stopped on a message that is not an exec request");
        return;
      }
      if (!stream.write(encodeGo(input))) {
        ws.pause();
        stream.once("drain", () => ws.resume());
      }
    });

    void relayOutput(ws, stream).then(
      (end) => finish(end.code, end.reason),
      (err: Error) =>
        isClosedError(err.message)
          ? finish(NORMAL_CLOSURE, "")
          : finish(websocketCloseCode(500), err.message),
    );
  });
}

/** Sends the agent's frames to the websocket until the stream ends; how the websocket is to be closed. */
async function relayOutput(ws: WebSocket, stream: Duplex): Promise<{ code?: number; reason?: string }> {
  const reader = new GoValueReader(stream);
  for (;;) {
    const value = await reader.next();
    if (value === undefined) return { code: NORMAL_CLOSURE, reason: "" };
    const frame = streamFrameOf(value);
    if (frame.error) {
      // Nomad writes no close message for an error that says the connection closed.
      if (isClosedError(frame.error.message)) return {};
      return { code: websocketCloseCode(frame.error.code ?? 500), reason: frame.error.message };
    }
    if (frame.payload.length === 0) continue;
    await new Promise<void>((resolve, reject) =>
      ws.send(frame.payload, { binary: false }, (err) => (err ? reject(err) : resolve())),
    );
  }
}
