import type { RawData, WebSocket } from "ws";

export interface InboundMessage {
  readonly data: Buffer;
  readonly binary: boolean;
}

/** Past this many bytes waiting, the socket stops being read until a consumer takes them. */
const HOLD_LIMIT = 256 * 1024;

/**
 * The messages a websocket client sends, held from the moment the socket
 * is accepted until something consumes them: the exec handshake, then the
 * bridge (to the client agent or to another server). `ws` emits whatever it
 * already parsed even while paused, so nothing may arrive unheard while a
 * session is still being set up.
 */
export class InboundMessages {
  private readonly held: InboundMessage[] = [];
  private heldBytes = 0;
  private consumer: ((message: InboundMessage) => void) | undefined;
  private waiter: ((message: InboundMessage | undefined) => void) | undefined;
  private closed = false;

  constructor(private readonly ws: WebSocket) {
    ws.on("message", (data: RawData, binary: boolean) => this.arrive({ data: toBuffer(data), binary }));
    ws.once("close", () => {
      this.closed = true;
      this.waiter?.(undefined);
      this.waiter = undefined;
    });
  }

  /** The next message, or undefined once the websocket closed. */
  next(): Promise<InboundMessage | undefined> {
    const first = this.held.shift();
    if (first) {
      this.heldBytes -= first.data.length;
      return Promise.resolve(first);
    }
    if (this.closed) return Promise.resolve(undefined);
    return new Promise((resolve) => {
      this.waiter = resolve;
    });
  }

  /** From now on every message goes to `consumer`, the held ones first. */
  consume(consumer: (message: InboundMessage) => void): void {
    this.consumer = consumer;
    for (const message of this.held.splice(0)) consumer(message);
    this.heldBytes = 0;
    this.ws.resume();
  }

  private arrive(message: InboundMessage): void {
    if (this.consumer) {
      this.consumer(message);
      return;
    }
    if (this.waiter) {
      const waiter = this.waiter;
      this.waiter = undefined;
      waiter(message);
      return;
    }
    this.held.push(message);
    this.heldBytes += message.data.length;
    if (this.heldBytes > HOLD_LIMIT) this.ws.pause();
  }
}

function toBuffer(data: RawData): Buffer {
  if (Buffer.isBuffer(data)) return data;
  if (Array.isArray(data)) return Buffer.concat(data);
  return Buffer.from(data);
}
