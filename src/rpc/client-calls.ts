import type { Duplex } from "node:stream";
import type { FastifyReply, FastifyRequest } from "fastify";
import type { ApiContext } from "../api/context.ts";
import { forwardToPeers } from "../api/forward-to-peers.ts";
import { encodeGo } from "./go-msgpack.ts";
import { GoValueReader } from "./go-value-reader.ts";
import { RpcClient } from "./msgpack-rpc.ts";
import { RPC_TYPE } from "./rpc-protocol.ts";
import type { YamuxSession } from "./yamux/session.ts";

/**
 * Nomad's NodeRpc (nomad/client_rpc.go): one net/rpc call to a client agent
 * on a new stream of the session the agent opened to this server. The
 * stream is closed once the reply (or the client's error) is in.
 */
export async function nodeRpc(session: YamuxSession, method: string, args: unknown): Promise<unknown> {
  let stream: Duplex;
  try {
    stream = await session.open();
  } catch (err) {
    throw new Error(`session open: ${(err as Error).message}`);
  }
  stream.write(Buffer.from([RPC_TYPE.nomad]));
  const client = new RpcClient(stream);
  try {
    return await client.call(method, args);
  } finally {
    client.close();
  }
}

/**
 * Nomad's NodeStreamingRpc: a new stream, the streaming byte, the method's
 * header, then the client's ack. Resolves with the stream once the client
 * accepted the method (an ack error rejects with its text); the caller then
 * writes the method's arguments and reads its frames, and must end or
 * destroy the stream.
 */
export async function nodeStreamingRpc(session: YamuxSession, method: string): Promise<Duplex> {
  const stream = await session.open();
  // Failures surface where the stream is read (GoValueReader); an 'error' with no reader waiting must not go unheard.
  stream.on("error", () => {});
  try {
    stream.write(Buffer.concat([Buffer.from([RPC_TYPE.streaming]), encodeGo({ Method: method })]));
    // The client sends nothing after its ack until it has the arguments, so this reader drops nothing.
    const ack = await new GoValueReader(stream).next();
    if (ack === undefined) throw new Error("EOF");
    const error = isObject(ack) && typeof ack.Error === "string" ? ack.Error : "";
    if (error !== "") throw new Error(error);
    return stream;
  } catch (err) {
    stream.destroy();
    throw err;
  }
}

/**
 * Which session reaches `nodeID`, as Nomad's getNodeConn then
 * serverWithNodeConn find it: this server's own, else the request goes to
 * the other servers in turn and the first that holds one answers it
 * (undefined: the request was answered). A request another server
 * forwarded here is not passed on again: without a session this server
 * answers Nomad's 404 "No path to node", marked so that the forwarding
 * server tries the next one.
 */
export async function sessionOrForward(
  ctx: Pick<ApiContext, "nodeSessions" | "leadership" | "config">,
  request: FastifyRequest,
  reply: FastifyReply,
  nodeID: string,
): Promise<YamuxSession | undefined> {
  const session = ctx.nodeSessions.get(nodeID);
  if (session) return session;
  await forwardToPeers(ctx, request, reply);
  return undefined;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null;
}
