import { Duplex } from "node:stream";
import { Flag, FrameType, STREAM_WINDOW, YamuxProtocolError } from "./frame.ts";

/** What a stream needs from its session; kept narrow so the stream can be reasoned about alone. */
export interface StreamHost {
  /** Writes one frame; false once the connection asks writers to wait for 'drain'. */
  sendFrame(type: FrameType, flags: number, streamId: number, length: number, payload?: Buffer): boolean;
  readonly needsDrain: boolean;
  /** Calls `resume` once the connection drained, or with an error if the session ended first. */
  onDrain(resume: (err?: Error) => void): void;
  /** The stream is done with the wire: forget its id. */
  release(stream: YamuxStream): void;
}

/** Bigger data frames would let one busy stream hold the connection while others wait. */
const MAX_DATA_FRAME = 64 * 1024;

export class YamuxStreamError extends Error {
  constructor(
    message: string,
    readonly code: "ERR_YAMUX_STREAM_RESET" | "ERR_YAMUX_SESSION_CLOSED",
  ) {
    super(message);
    this.name = "YamuxStreamError";
  }
}

/**
 * One yamux stream as a Node Duplex: `end()` sends FIN, `destroy()` sends RST unless
 * both sides already sent FIN, the remote's FIN ends the readable side and its RST
 * destroys the stream with ERR_YAMUX_STREAM_RESET.
 *
 * Flow control follows hashicorp/yamux: the remote may send at most `recvWindow`
 * more bytes, and the window is only re-opened for what the consumer has taken out
 * of the readable buffer, so a slow reader stalls the sender instead of growing
 * memory. Writes wait while our send window is zero or the connection needs 'drain'.
 * Consequence: `read(n)` with n above 256 KiB never completes; read what is there.
 * Consumers must listen for 'error' (remote RST, session end), as with sockets.
 */
export class YamuxStream extends Duplex {
  private sendWindow = STREAM_WINDOW;
  /** Bytes the remote may still send before we re-open the window. */
  private recvWindow = STREAM_WINDOW;
  private finSent = false;
  private finReceived = false;
  private resetReceived = false;
  private released = false;
  private waitingForDrain = false;
  private pendingWrite: { data: Buffer; callback: (err?: Error | null) => void } | undefined;

  constructor(
    readonly id: number,
    private readonly host: StreamHost,
  ) {
    super({ allowHalfOpen: true });
  }

  /** True while the session still routes frames for this id to us. */
  get live(): boolean {
    return !this.released;
  }

  handleWindowUpdate(delta: number): void {
    this.sendWindow += delta;
    if (this.sendWindow > 0xffffffff)
      throw new YamuxProtocolError(`send window overflow on stream ${this.id}`);
    this.flushWrite();
  }

  handleData(payload: Buffer[], length: number): void {
    if (length > this.recvWindow) {
      throw new YamuxProtocolError(
        `receive window exceeded on stream ${this.id} (remain ${this.recvWindow}, got ${length})`,
      );
    }
    this.recvWindow -= length;
    // Data after the remote's FIN, or for a stream the consumer destroyed, has nowhere to go.
    if (this.finReceived || this.destroyed) return;
    for (const slice of payload) this.push(slice);
    // In flowing mode the data may already have been handed to the consumer.
    this.maybeOpenWindow();
  }

  handleFin(): void {
    if (this.finReceived) return;
    this.finReceived = true;
    if (!this.destroyed) this.push(null);
    this.releaseIfBothClosed();
  }

  handleReset(): void {
    this.resetReceived = true;
    this.releaseNow();
    this.destroy(new YamuxStreamError(`yamux stream ${this.id} reset by remote`, "ERR_YAMUX_STREAM_RESET"));
  }

  /** The session is gone: nothing more will arrive or leave. */
  handleSessionEnd(err: Error): void {
    this.released = true;
    if (!(this.finSent && this.finReceived)) this.destroy(err);
  }

  override _read(): void {
    this.maybeOpenWindow();
  }

  /**
   * Readable calls _read before it takes the returned bytes out of its buffer, and not
   * again until we push, so the window is (also) re-checked after every read.
   */
  override read(size?: number): Buffer | null {
    const chunk = super.read(size) as Buffer | null;
    this.maybeOpenWindow();
    return chunk;
  }

  override _write(chunk: Buffer, _encoding: BufferEncoding, callback: (err?: Error | null) => void): void {
    if (this.released) {
      callback(new YamuxStreamError(`yamux stream ${this.id} is closed`, "ERR_YAMUX_SESSION_CLOSED"));
      return;
    }
    this.pendingWrite = { data: chunk, callback };
    this.flushWrite();
  }

  override _final(callback: (err?: Error | null) => void): void {
    if (!this.released && !this.finSent) {
      this.finSent = true;
      this.host.sendFrame(FrameType.WindowUpdate, Flag.FIN, this.id, 0);
      this.releaseIfBothClosed();
    }
    callback();
  }

  override _destroy(err: Error | null, callback: (err?: Error | null) => void): void {
    if (!this.released) {
      if (!this.resetReceived && !(this.finSent && this.finReceived)) {
        this.host.sendFrame(FrameType.WindowUpdate, Flag.RST, this.id, 0);
      }
      this.releaseNow();
    }
    // The pending write's callback is dropped on purpose: a destroyed Writable ignores it.
    this.pendingWrite = undefined;
    callback(err);
  }

  /** Mirrors hashicorp's sendWindowUpdate: top the window back up once half of it was consumed. */
  private maybeOpenWindow(): void {
    if (this.released || this.finReceived) return;
    const delta = STREAM_WINDOW - this.readableLength - this.recvWindow;
    if (delta < STREAM_WINDOW / 2) return;
    this.recvWindow += delta;
    this.host.sendFrame(FrameType.WindowUpdate, 0, this.id, delta);
  }

  private flushWrite(): void {
    const pending = this.pendingWrite;
    if (pending === undefined || this.waitingForDrain) return;
    while (pending.data.length > 0) {
      if (this.released) return;
      if (this.sendWindow === 0) return; // resumed by handleWindowUpdate
      if (this.host.needsDrain) {
        this.waitingForDrain = true;
        this.host.onDrain((err) => {
          this.waitingForDrain = false;
          if (err === undefined) this.flushWrite();
        });
        return;
      }
      const n = Math.min(this.sendWindow, pending.data.length, MAX_DATA_FRAME);
      this.host.sendFrame(FrameType.Data, 0, this.id, n, pending.data.subarray(0, n));
      this.sendWindow -= n;
      pending.data = pending.data.subarray(n);
    }
    this.pendingWrite = undefined;
    pending.callback();
  }

  private releaseIfBothClosed(): void {
    if (this.finSent && this.finReceived) this.releaseNow();
  }

  private releaseNow(): void {
    if (this.released) return;
    this.released = true;
    this.host.release(this);
  }
}
