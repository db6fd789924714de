import { buildConnector, Client, type Dispatcher, Pool } from "undici";

/** A reply as read off the wire. */
export interface HttpReply {
  readonly status: number;
  readonly type: string;
  readonly body: Buffer;
}

/** A call that got no reply: `reason` is what the report counts it as (an error code, "timeout", "aborted"). */
export class WireError extends Error {
  constructor(
    readonly reason: string,
    /** Nothing of an answer came before the connection closed under it: it may be sent once more. */
    readonly retryable: boolean,
  ) {
    super(reason);
    this.name = "WireError";
  }
}

/** One call to make. */
export interface Exchange {
  readonly path: string;
  /** Names and values, flat, as undici takes them. */
  readonly headers: string[];
  readonly body: string | Uint8Array;
  readonly signal: AbortSignal | undefined;
  /** Fails as "timeout" if the whole reply has not come this long after the call was handed over; 0: never. */
  readonly timeoutMs: number;
}

/** Where calls go: one connection (undici's Client), or a bounded pool of them. */
export interface Connections {
  request(exchange: Exchange): Promise<HttpReply>;
  destroy(): void;
}

/**
 * How long an idle connection is kept. The server (fastify) closes its side
 * after 72 s; ours go first, so a call rarely goes out on a connection the
 * server is closing.
 */
const KEEP_ALIVE_MS = 30_000;

const OPTIONS = {
  keepAliveTimeout: KEEP_ALIVE_MS,
  keepAliveMaxTimeout: KEEP_ALIVE_MS,
  pipelining: 1,
  // Deadlines are the caller's (Exchange.timeoutMs), over the whole call as AbortSignal.timeout was.
  headersTimeout: 0,
  bodyTimeout: 0,
} as const;

/**
 * How undici's Client and Pool open a socket, one for every connection of
 * this process: undici builds one per Client otherwise (each with a TLS
 * session cache and its FinalizationRegistry, of no use on plain HTTP),
 * 20,000 of them at 5,000 nodes.
 */
const CONNECTOR = buildConnector({});

/** Socket errors after which the server had sent nothing back: it closed the connection as the call went out. */
const CLOSED_UNDER = new Set(["ECONNRESET", "EPIPE", "UND_ERR_SOCKET"]);

export function origin(host: string, port: number): string {
  return `http://${host.includes(":") ? `[${host}]` : host}:${port}`;
}

/**
 * One keep-alive connection (undici's `Client`, pipelining 1) for one loop
 * of one node: its calls are sequential, and should two ever overlap (a
 * loop restarted while its last call is still out) the second waits in the
 * Client's queue for the first, it never opens a second socket. Node's
 * `http.request` with an Agent cost the simulator about 600 µs of CPU per
 * node round of three calls (test/nodesim/rpc-client-figures.test.ts);
 * undici's `dispatch` with a handler collecting the bytes about half that.
 */
export class Connection implements Connections {
  private readonly client: Client;
  private destroyed = false;

  constructor(url: string) {
    this.client = new Client(url, { ...OPTIONS, connect: CONNECTOR });
  }

  request(exchange: Exchange): Promise<HttpReply> {
    return dispatch(this.client, this.destroyed, exchange);
  }

  destroy(): void {
    this.destroyed = true;
    this.client.destroy().catch(() => {});
  }
}

/**
 * Up to `connections` keep-alive connections shared by calls of any node
 * (undici's `Pool`): the bound on their concurrency, calls beyond it wait
 * in the pool's queue.
 */
export class SharedConnections implements Connections {
  private readonly pool: Pool;
  private destroyed = false;

  constructor(url: string, connections: number) {
    this.pool = new Pool(url, { ...OPTIONS, connections, connect: CONNECTOR });
  }

  request(exchange: Exchange): Promise<HttpReply> {
    return dispatch(this.pool, this.destroyed, exchange);
  }

  destroy(): void {
    this.destroyed = true;
    this.pool.destroy().catch(() => {});
  }
}

function dispatch(to: Dispatcher, destroyed: boolean, exchange: Exchange): Promise<HttpReply> {
  return new Promise<HttpReply>((resolve, reject) => {
    if (destroyed || exchange.signal?.aborted) {
      reject(new WireError(destroyed ? "ECONNRESET" : "aborted", false));
      return;
    }
    to.dispatch(
      { method: "PUT", path: exchange.path, headers: exchange.headers, body: exchange.body },
      new ReplyHandler(exchange.signal, exchange.timeoutMs, resolve, reject),
    );
  });
}

/**
 * Connections for calls any number of which may be in flight at once (they
 * wait on work elsewhere): one each, taken from the idle ones or opened, and
 * kept for the next only up to `keptIdle`, as Node's Agent kept at most
 * `maxFreeSockets` (undici's Pool keeps every connection it ever opened).
 */
export class ConnectionPerCall implements Connections {
  private readonly idle: Connection[] = [];
  private readonly busy = new Set<Connection>();
  private destroyed = false;

  constructor(
    private readonly url: string,
    private readonly keptIdle: number,
  ) {}

  async request(exchange: Exchange): Promise<HttpReply> {
    if (this.destroyed) throw new WireError("ECONNRESET", false);
    const c = this.idle.pop() ?? new Connection(this.url);
    this.busy.add(c);
    try {
      return await c.request(exchange);
    } finally {
      this.busy.delete(c);
      if (!this.destroyed && this.idle.length < this.keptIdle) this.idle.push(c);
      else c.destroy();
    }
  }

  destroy(): void {
    this.destroyed = true;
    for (const c of this.idle.splice(0)) c.destroy();
    for (const c of this.busy) c.destroy();
  }
}

const timedOut = (handler: ReplyHandler): void => handler.stop("timeout");

/** Collects one reply; fails the call on its signal's abort or at its deadline. */
class ReplyHandler implements Dispatcher.DispatchHandlers {
  private status = 0;
  private type = "";
  private readonly chunks: Buffer[] = [];
  private abort: ((err?: Error) => void) | undefined;
  private cut: string | undefined;
  private settled = false;
  private readonly timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly signal: AbortSignal | undefined,
    timeoutMs: number,
    private readonly resolve: (reply: HttpReply) => void,
    private readonly reject: (err: WireError) => void,
  ) {
    // The handler itself is the listener (handleEvent) and the timer's argument: no closures a call.
    signal?.addEventListener("abort", this, { once: true });
    if (timeoutMs > 0) {
      this.timer = setTimeout(timedOut, timeoutMs, this);
      // As AbortSignal.timeout's: a deadline never keeps the process alive.
      this.timer.unref();
    }
  }

  onConnect(abort: (err?: Error) => void): void {
    this.abort = abort;
    // Cut off while it waited for the connection: it never goes out.
    if (this.cut !== undefined) abort();
  }

  onHeaders(status: number, headers: Buffer[] | null): boolean {
    this.status = status;
    if (headers) {
      for (let i = 0; i + 1 < headers.length; i += 2) {
        const name = headers[i]!;
        if (name.length === 12 && name.toString("latin1").toLowerCase() === "content-type") {
          this.type = headers[i + 1]!.toString("latin1");
        }
      }
    }
    return true;
  }

  onData(chunk: Buffer): boolean {
    this.chunks.push(chunk);
    return true;
  }

  onComplete(): void {
    if (!this.settle()) return;
    const body = this.chunks.length === 1 ? this.chunks[0]! : Buffer.concat(this.chunks);
    this.resolve({ status: this.status, type: this.type, body });
  }

  onError(err: Error): void {
    // The error of our own abort: the abort settled the call.
    if (this.cut !== undefined || !this.settle()) return;
    const code = (err as NodeJS.ErrnoException).code ?? err.name;
    // undici's "other side closed" is what Node's client reported as ECONNRESET (socket hang up).
    const reason = code === "UND_ERR_SOCKET" ? "ECONNRESET" : code;
    this.reject(new WireError(reason, this.status === 0 && CLOSED_UNDER.has(code)));
  }

  /** Its signal's abort. */
  handleEvent(): void {
    this.stop("aborted");
  }

  /**
   * Fails the call on the next tick, as Node's request did (the simulator's
   * stop aborts every node's poll and then closes the client, and calls cut
   * off by that are not counted); a call still queued for its connection is
   * cut off when it gets it.
   */
  stop(reason: string): void {
    if (this.settled || this.cut !== undefined) return;
    this.cut = reason;
    this.abort?.();
    process.nextTick(() => {
      if (this.settle()) this.reject(new WireError(reason, false));
    });
  }

  /** True the first time: a reply, a failure and an abort settle the call once. */
  private settle(): boolean {
    if (this.settled) return false;
    this.settled = true;
    this.signal?.removeEventListener("abort", this);
    if (this.timer) clearTimeout(this.timer);
    return true;
  }
}
