/**
 * A yamux session that interoperates with github.com/hashicorp/yamux v0.1.1, the
 * multiplexer Nomad 1.6.1 runs over its RPC connections.
 *
 * Written here rather than taken from npm because no package speaks HashiCorp's
 * dialect correctly: `yamux-js` loses bytes when a header or payload is split across
 * TCP chunks, tests FIN as SYN, never processes flags on data frames and re-opens the
 * window on receipt (no back-pressure); `@chainsafe/libp2p-yamux` needs the libp2p
 * stream/connection abstractions (~40 packages), never closes a session on a missing
 * pong, tears down every stream on a normal GoAway (hashicorp only stops new streams)
 * and ACKs an accepted stream only once it reads or writes, which lets hashicorp's
 * StreamOpenTimeout close the whole session.
 */
import type { Duplex } from "node:stream";
import type { Logger } from "pino";
import {
  encodeHeader,
  Flag,
  FrameDecoder,
  type FrameHeader,
  FrameType,
  GoAwayCode,
  STREAM_WINDOW,
  YamuxProtocolError,
} from "./frame.ts";
import { type StreamHost, YamuxStream, YamuxStreamError } from "./stream.ts";

export { YamuxStream, YamuxStreamError } from "./stream.ts";

export interface YamuxOptions {
  /** Called for each stream the remote opens. */
  onStream(stream: Duplex): void;
  keepAliveIntervalMs?: number; // default 30_000 as hashicorp/yamux
  /** How long a keep-alive ping may wait for its pong (as hashicorp/yamux), and a closing GoAway for its flush. */
  connectionWriteTimeoutMs?: number; // default 10_000
  /** How long open() waits for the remote's ACK; default 75_000 as hashicorp/yamux. */
  streamOpenTimeoutMs?: number;
  /** Streams the remote may have open at once; further SYNs are answered with RST. Default 4096. */
  maxInboundStreams?: number;
  logger?: Logger;
}

const MAX_STREAM_ID = 0xffffffff;

interface PendingOpen {
  resolve(stream: Duplex): void;
  reject(err: Error): void;
  timer: NodeJS.Timeout;
}

export class YamuxSession {
  /** Server side of a session over `socket` (a connection whose first byte was already consumed). Data already read past that byte is passed as `head`. */
  static server(socket: Duplex, options: YamuxOptions, head?: Uint8Array): YamuxSession {
    return new YamuxSession(socket, options, false, head);
  }

  /** Client side (odd stream ids), for tests and server-to-server connections. */
  static client(socket: Duplex, options: YamuxOptions, head?: Uint8Array): YamuxSession {
    return new YamuxSession(socket, options, true, head);
  }

  /** Resolves when the session ends for any reason. */
  readonly done: Promise<void>;

  private readonly streams = new Map<number, YamuxStream>();
  private readonly pendingOpens = new Map<number, PendingOpen>();
  private readonly decoder = new FrameDecoder(STREAM_WINDOW);
  private readonly drainWaiters: Array<(err?: Error) => void> = [];
  private readonly host: StreamHost;
  private readonly keepAliveIntervalMs: number;
  private readonly pongTimeoutMs: number;
  private readonly openTimeoutMs: number;
  private readonly maxInboundStreams: number;
  private readonly log: Logger | undefined;
  private nextStreamId: number;
  private inboundCount = 0;
  private remoteGoAway = false;
  private isClosed = false;
  private needsDrain = false;
  private keepAliveTimer: NodeJS.Timeout | undefined;
  private pongTimer: NodeJS.Timeout | undefined;
  private nextPingId = 0;
  private awaitedPingId: number | undefined;
  private resolveDone!: () => void;

  private constructor(
    private readonly socket: Duplex,
    private readonly options: YamuxOptions,
    private readonly isClient: boolean,
    head: Uint8Array | undefined,
  ) {
    this.nextStreamId = isClient ? 1 : 2;
    this.keepAliveIntervalMs = options.keepAliveIntervalMs ?? 30_000;
    this.pongTimeoutMs = options.connectionWriteTimeoutMs ?? 10_000;
    this.openTimeoutMs = options.streamOpenTimeoutMs ?? 75_000;
    this.maxInboundStreams = options.maxInboundStreams ?? 4096;
    this.log = options.logger;
    this.done = new Promise((resolve) => {
      this.resolveDone = resolve;
    });
    const session = this;
    this.host = {
      sendFrame: (type, flags, id, length, payload) => this.sendFrame(type, flags, id, length, payload),
      get needsDrain() {
        return session.needsDrain;
      },
      onDrain: (resume) => {
        if (this.isClosed) resume(this.closedError());
        else this.drainWaiters.push(resume);
      },
      release: (stream) => this.release(stream),
    };

    if (head !== undefined) this.decoder.append(head);
    socket.on("data", (chunk: Buffer) => {
      this.decoder.append(chunk);
      this.processFrames();
    });
    socket.on("drain", () => this.onSocketDrain());
    socket.on("error", (err: Error) => this.terminate(err));
    socket.on("end", () => this.terminate(new Error("yamux connection closed by remote")));
    socket.on("close", () => this.terminate(new Error("yamux connection closed")));
    // Deferred so that onStream never runs before the caller holds the session.
    process.nextTick(() => this.processFrames());
    this.scheduleKeepAlive();
  }

  get closed(): boolean {
    return this.isClosed;
  }

  /** Number of open streams (for metrics). */
  get streamCount(): number {
    return this.streams.size;
  }

  /** Opens a stream towards the remote; resolves once the remote ACKs it (rejects on RST/timeout/session end). */
  open(): Promise<Duplex> {
    if (this.isClosed) return Promise.reject(this.closedError());
    if (this.remoteGoAway)
      return Promise.reject(new Error("yamux remote end is not accepting streams (GoAway)"));
    const id = this.nextStreamId;
    if (id >= MAX_STREAM_ID - 1) return Promise.reject(new Error("yamux stream ids exhausted"));
    this.nextStreamId += 2;
    const stream = new YamuxStream(id, this.host);
    this.streams.set(id, stream);
    return new Promise<Duplex>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pendingOpens.delete(id);
        this.log?.warn({ streamId: id }, "yamux: remote did not acknowledge stream open in time");
        stream.destroy();
        reject(new Error(`yamux stream ${id} open timed out`));
      }, this.openTimeoutMs);
      timer.unref();
      this.pendingOpens.set(id, { resolve, reject, timer });
      this.sendFrame(FrameType.WindowUpdate, Flag.SYN, id, 0);
    });
  }

  /** Sends GoAway and closes every stream and the socket. */
  close(): void {
    this.terminate(
      new YamuxStreamError("yamux session closed", "ERR_YAMUX_SESSION_CLOSED"),
      GoAwayCode.Normal,
    );
  }

  private closedError(): Error {
    return new YamuxStreamError("yamux session closed", "ERR_YAMUX_SESSION_CLOSED");
  }

  private sendFrame(type: FrameType, flags: number, id: number, length: number, payload?: Buffer): boolean {
    if (this.isClosed || this.socket.destroyed || this.socket.writableEnded) return false;
    const header = encodeHeader(type, flags, id, length);
    // Streams stop adding data while the socket asks for 'drain', so what waits here is
    // bounded by one frame per stream; a peer that stops reading fails the keep-alive.
    const ok = this.socket.write(payload === undefined ? header : Buffer.concat([header, payload]));
    if (!ok) this.needsDrain = true;
    return ok;
  }

  private onSocketDrain(): void {
    this.needsDrain = false;
    const waiters = this.drainWaiters.splice(0);
    for (const resume of waiters) {
      if (this.needsDrain) this.drainWaiters.push(resume);
      else resume();
    }
  }

  private processFrames(): void {
    try {
      while (!this.isClosed) {
        const frame = this.decoder.next();
        if (frame === undefined) return;
        this.handleFrame(frame.header, frame.payload);
      }
    } catch (err) {
      if (err instanceof YamuxProtocolError) {
        this.log?.warn({ err }, "yamux: protocol error, closing session");
        this.terminate(err, GoAwayCode.ProtocolError);
      } else {
        // Most likely thrown by onStream; the session's state can no longer be trusted.
        this.log?.error({ err }, "yamux: internal error, closing session");
        this.terminate(err instanceof Error ? err : new Error(String(err)), GoAwayCode.InternalError);
      }
    }
  }

  private handleFrame(header: FrameHeader, payload: Buffer[]): void {
    switch (header.type) {
      case FrameType.Ping:
        this.handlePing(header);
        return;
      case FrameType.GoAway:
        this.handleGoAway(header.length);
        return;
      default:
        this.handleStreamFrame(header, payload);
    }
  }

  private handleStreamFrame(header: FrameHeader, payload: Buffer[]): void {
    const { streamId: id, flags } = header;
    if ((flags & Flag.SYN) !== 0 && !this.acceptStream(id)) return;
    const stream = this.streams.get(id);
    if (stream === undefined) {
      // Normal after we sent RST or both sides sent FIN; hashicorp drops these too.
      this.log?.debug({ streamId: id, type: header.type }, "yamux: frame for unknown stream dropped");
      return;
    }
    if ((flags & Flag.ACK) !== 0) this.handleAck(id, stream);
    if (header.type === FrameType.WindowUpdate) stream.handleWindowUpdate(header.length);
    else if (header.length > 0) stream.handleData(payload, header.length);
    if ((flags & Flag.FIN) !== 0) stream.handleFin();
    if ((flags & Flag.RST) !== 0) this.handleReset(id, stream);
  }

  /** Registers and ACKs a remote-opened stream at once: hashicorp closes the session if the ACK is late. */
  private acceptStream(id: number): boolean {
    if (this.streams.has(id)) throw new YamuxProtocolError(`duplicate stream ${id}`);
    if (id === 0 || id % 2 === (this.isClient ? 1 : 0)) {
      throw new YamuxProtocolError(`remote opened stream ${id} with our parity`);
    }
    if (this.inboundCount >= this.maxInboundStreams) {
      this.log?.warn({ streamId: id }, "yamux: too many inbound streams, resetting new stream");
      this.sendFrame(FrameType.WindowUpdate, Flag.RST, id, 0);
      return false;
    }
    const stream = new YamuxStream(id, this.host);
    this.streams.set(id, stream);
    this.inboundCount++;
    this.sendFrame(FrameType.WindowUpdate, Flag.ACK, id, 0);
    this.options.onStream(stream);
    return true;
  }

  private handleAck(id: number, stream: YamuxStream): void {
    const pending = this.pendingOpens.get(id);
    if (pending === undefined) return;
    this.pendingOpens.delete(id);
    clearTimeout(pending.timer);
    pending.resolve(stream);
  }

  private handleReset(id: number, stream: YamuxStream): void {
    const pending = this.pendingOpens.get(id);
    if (pending !== undefined) {
      this.pendingOpens.delete(id);
      clearTimeout(pending.timer);
      pending.reject(new YamuxStreamError(`yamux stream ${id} refused by remote`, "ERR_YAMUX_STREAM_RESET"));
      // Nobody holds the stream yet, so an 'error' event would have no listener.
      stream.on("error", () => {});
    }
    stream.handleReset();
  }

  private handlePing(header: FrameHeader): void {
    if ((header.flags & Flag.SYN) !== 0) {
      this.sendFrame(FrameType.Ping, Flag.ACK, 0, header.length);
      return;
    }
    if (header.length !== this.awaitedPingId) return;
    this.awaitedPingId = undefined;
    clearTimeout(this.pongTimer);
    this.scheduleKeepAlive();
  }

  private handleGoAway(code: number): void {
    if (code === GoAwayCode.Normal) {
      this.remoteGoAway = true;
      this.log?.debug("yamux: remote sent GoAway, no new streams");
      return;
    }
    const reason =
      code === GoAwayCode.ProtocolError
        ? "protocol error"
        : code === GoAwayCode.InternalError
          ? "internal error"
          : `code ${code}`;
    this.log?.warn({ code }, "yamux: remote closed the session with an error GoAway");
    this.terminate(new Error(`yamux remote sent GoAway (${reason})`));
  }

  /** hashicorp pings every interval and gives up on the session if the pong takes longer than the write timeout. */
  private scheduleKeepAlive(): void {
    if (this.isClosed) return;
    this.keepAliveTimer = setTimeout(() => {
      const id = this.nextPingId;
      this.nextPingId = (this.nextPingId + 1) >>> 0;
      this.awaitedPingId = id;
      this.pongTimer = setTimeout(() => {
        this.log?.warn("yamux: keepalive timeout");
        this.terminate(new Error("yamux keepalive timeout"));
      }, this.pongTimeoutMs);
      this.pongTimer.unref();
      this.sendFrame(FrameType.Ping, Flag.SYN, 0, id);
    }, this.keepAliveIntervalMs);
    this.keepAliveTimer.unref();
  }

  private release(stream: YamuxStream): void {
    if (this.streams.get(stream.id) !== stream) return;
    this.streams.delete(stream.id);
    if (stream.id % 2 === (this.isClient ? 0 : 1)) this.inboundCount--;
  }

  private terminate(cause: Error, goAway?: number): void {
    if (this.isClosed) return;
    this.isClosed = true;
    clearTimeout(this.keepAliveTimer);
    clearTimeout(this.pongTimer);
    const socket = this.socket;
    if (goAway !== undefined && !socket.destroyed && !socket.writableEnded) {
      socket.write(encodeHeader(FrameType.GoAway, 0, 0, goAway));
    }

    const streamError =
      cause instanceof YamuxStreamError
        ? cause
        : new YamuxStreamError(`yamux session closed: ${cause.message}`, "ERR_YAMUX_SESSION_CLOSED");
    for (const [id, pending] of this.pendingOpens) {
      clearTimeout(pending.timer);
      pending.reject(streamError);
      this.streams.get(id)?.on("error", () => {});
    }
    this.pendingOpens.clear();
    const streams = [...this.streams.values()];
    this.streams.clear();
    this.inboundCount = 0;
    for (const stream of streams) stream.handleSessionEnd(streamError);
    for (const resume of this.drainWaiters.splice(0)) resume(streamError);

    if (goAway !== undefined && !socket.destroyed) {
      // Let the GoAway reach the peer, but do not wait forever for a peer that stopped reading.
      const force = setTimeout(() => socket.destroy(), this.pongTimeoutMs);
      force.unref();
      socket.end(() => {
        clearTimeout(force);
        socket.destroy();
      });
    } else {
      socket.destroy();
    }
    this.resolveDone();
  }
}
