import { type AddressInfo, createServer, type Server, type Socket } from "node:net";
import type { Duplex } from "node:stream";
import type { Logger } from "pino";
import { splitHostPort } from "../config.ts";
import { LISTEN_BACKLOG } from "../util/listen-backlog.ts";
import { serveRpcStream } from "./msgpack-rpc.ts";
import type { NodeSessions } from "./node-sessions.ts";
import type { RpcCaller, RpcDispatcher } from "./rpc-dispatcher.ts";
import type { RpcMetrics } from "./rpc-metrics.ts";
import { RPC_TYPE } from "./rpc-protocol.ts";
import { refuseStreamingRpc } from "./streaming-refusal.ts";
import { YamuxSession } from "./yamux/session.ts";

export interface RpcServerOptions {
  /** host:port to listen on (port 0: ephemeral). */
  readonly addr: string;
  /** Nomad's rpc_handshake_timeout: a connection must send its first byte within it. */
  readonly handshakeTimeoutMs: number;
  /** Nomad's rpc_max_conns_per_client; 0 for no limit. */
  readonly maxConnsPerClient: number;
}

export interface RpcServerDeps {
  readonly dispatcher: RpcDispatcher;
  readonly sessions: NodeSessions;
  readonly metrics: RpcMetrics;
  readonly logger: Logger;
}

/**
 * Nomad's RPC port (nomad/rpc.go handleConn): the first byte of each
 * connection picks the protocol. Nomad's client agents send 0x06 and run a
 * yamux session whose streams each start with their own byte (0x01 for a
 * net/rpc call stream, 0x05 for a streaming RPC); older tools send 0x01 and
 * speak net/rpc on the bare connection. TLS and Raft are refused, as a
 * Nomad server without TLS refuses the one, and chronomad's servers
 * replicate through the log instead of the other.
 */
export class RpcServer {
  private readonly sockets = new Set<Socket>();
  private readonly muxes = new Set<YamuxSession>();
  private readonly perClient = new Map<string, number>();
  private closing = false;

  private constructor(
    private readonly server: Server,
    private readonly options: RpcServerOptions,
    private readonly deps: RpcServerDeps,
  ) {}

  static async listen(options: RpcServerOptions, deps: RpcServerDeps): Promise<RpcServer> {
    // Half-open: a caller may end its side after its last request and still read the replies.
    const server = createServer({ noDelay: true, keepAlive: true, allowHalfOpen: true });
    const rpc = new RpcServer(server, options, deps);
    server.on("connection", (socket) => rpc.accept(socket));
    const { host, port } = splitHostPort(options.addr, "rpc_addr");
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen({ host, port, backlog: LISTEN_BACKLOG }, () => {
        server.off("error", reject);
        resolve();
      });
    });
    server.on("error", (err) => deps.logger.error({ err }, "RPC listener failed"));
    return rpc;
  }

  /** Where it listens (the real port when 0 was asked for). */
  bound(): AddressInfo | string | null {
    return this.server.address();
  }

  /** Multiplexed sessions open now (one per connected client agent, normally). */
  get sessionCount(): number {
    return this.muxes.size;
  }

  /** Stops accepting, says GoAway on every session and closes every connection. */
  async close(): Promise<void> {
    this.closing = true;
    const closed = new Promise<void>((resolve) => this.server.close(() => resolve()));
    for (const mux of this.muxes) mux.close();
    for (const socket of this.sockets) socket.destroy();
    await closed;
  }

  private accept(socket: Socket): void {
    const peer = socket.remoteAddress ?? "";
    if (this.closing || !this.admit(peer)) {
      socket.destroy();
      return;
    }
    this.sockets.add(socket);
    socket.once("close", () => {
      this.sockets.delete(socket);
      this.release(peer);
    });
    socket.on("error", (err) => this.deps.logger.debug({ err, peer }, "RPC connection error"));
    const timer = setTimeout(() => {
      this.deps.logger.warn({ peer }, "RPC connection sent no protocol byte within rpc_handshake_timeout");
      socket.destroy();
    }, this.options.handshakeTimeoutMs);
    firstByte(socket, (byte) => {
      clearTimeout(timer);
      if (byte === undefined) {
        socket.destroy();
        return;
      }
      this.handle(socket, byte, { remoteAddress: peer });
    });
  }

  private handle(socket: Socket, byte: number, caller: RpcCaller): void {
    const { logger, metrics } = this.deps;
    switch (byte) {
      case RPC_TYPE.nomad:
        metrics.connection("nomad");
        this.serveCalls(socket, caller);
        return;
      case RPC_TYPE.multiplexV2:
        metrics.connection("multiplex_v2");
        this.multiplex(socket, caller, true);
        return;
      case RPC_TYPE.multiplex:
        metrics.connection("multiplex");
        this.multiplex(socket, caller, false);
        return;
      case RPC_TYPE.streaming:
        metrics.connection("streaming");
        refuseStreamingRpc(socket, metrics);
        return;
      case RPC_TYPE.tls:
        logger.warn(
          { peer: caller.remoteAddress },
          "TLS connection attempted, server not configured for TLS",
        );
        break;
      case RPC_TYPE.raft:
        logger.warn(
          { peer: caller.remoteAddress },
          "Raft connection refused: chronomad servers replicate through the log",
        );
        break;
      default:
        logger.error({ peer: caller.remoteAddress, byte }, "unrecognized RPC byte");
    }
    socket.destroy();
  }

  /**
   * A yamux session: streams the client opens carry calls (v2: each starts
   * with its protocol byte; v1: every stream is net/rpc), and the server
   * may open streams back to the client over the same connection.
   */
  private multiplex(socket: Socket, peer: RpcCaller, v2: boolean): void {
    const { logger, sessions, metrics } = this.deps;
    const session = YamuxSession.server(socket, {
      logger,
      onStream: (stream) => {
        // A reset stream or an ended session errors its streams; that ends the calls on them, nothing more.
        stream.on("error", (err) => logger.debug({ err, peer: peer.remoteAddress }, "RPC stream ended"));
        const caller: RpcCaller = { remoteAddress: peer.remoteAddress, session };
        if (!v2) {
          this.serveCalls(stream, caller);
          return;
        }
        firstByte(stream, (byte) => {
          if (byte === RPC_TYPE.nomad) this.serveCalls(stream, caller);
          else if (byte === RPC_TYPE.streaming) refuseStreamingRpc(stream, metrics);
          else {
            if (byte !== undefined) logger.error({ byte }, "multiplex_v2 unrecognized first RPC byte");
            stream.destroy();
          }
        });
      },
    });
    this.muxes.add(session);
    void session.done.then(() => {
      this.muxes.delete(session);
      sessions.forget(session);
    });
  }

  private serveCalls(stream: Duplex, caller: RpcCaller): void {
    serveRpcStream(
      stream,
      (req) => this.deps.dispatcher.call(req.method, req.body, caller),
      (err) => this.deps.logger.debug({ err, peer: caller.remoteAddress }, "RPC stream error"),
    );
  }

  /** Nomad's rpc_max_conns_per_client: past it, a client's new connections are closed at once. */
  private admit(peer: string): boolean {
    const held = this.perClient.get(peer) ?? 0;
    const limit = this.options.maxConnsPerClient;
    if (limit > 0 && held >= limit) {
      this.deps.logger.error({ peer, limit }, "rejecting client for exceeding maximum RPC connections");
      return false;
    }
    this.perClient.set(peer, held + 1);
    return true;
  }

  private release(peer: string): void {
    const held = (this.perClient.get(peer) ?? 1) - 1;
    if (held <= 0) this.perClient.delete(peer);
    else this.perClient.set(peer, held);
  }
}

/** Reads one byte off `stream`, leaving the rest for whoever reads next; undefined if it ends first. */
function firstByte(stream: Duplex, then: (byte: number | undefined) => void): void {
  let done = false;
  const finish = (byte: number | undefined) => {
    if (done) return;
    done = true;
    stream.off("readable", onReadable);
    stream.off("end", onEnd);
    stream.off("close", onEnd);
    then(byte);
  };
  const onReadable = () => {
    const chunk = stream.read(1) as Buffer | null;
    if (chunk !== null) finish(chunk[0]);
  };
  const onEnd = () => finish(undefined);
  stream.on("readable", onReadable);
  stream.once("end", onEnd);
  stream.once("close", onEnd);
}
