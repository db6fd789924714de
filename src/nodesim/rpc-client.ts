import { packPlain, unpackPlain } from "../codec/envelope-codec.ts";
import type { CallCounter } from "./counters.ts";
import {
  Connection,
  ConnectionPerCall,
  type Connections,
  type Exchange,
  type HttpReply,
  origin,
  SharedConnections,
  type WireError,
} from "./http-connection.ts";

export type Encoding = "msgpack" | "json";

const HEARTBEAT = "Node.UpdateStatus";
const UPDATE_ALLOC = "Node.UpdateAlloc";
/** The node's CSI plugins' long poll, a loop of its own beside the allocations' watch. */
const PENDING_DETACHES = "ClientCSI.PendingDetaches";

/** Milliseconds since the epoch, fractional, when a heartbeat request was sent. */
export const SENT_AT_HEADER = "x-nodesim-sent-at";
const sentAt = () => (performance.timeOrigin + performance.now()).toFixed(3);

/** A client RPC the server answered with an error status, or a transport failure (status 0). */
export class RpcError extends Error {
  constructor(
    readonly method: string,
    readonly status: number,
    /** The server's answer, or the transport failure's reason. */
    readonly detail: string,
  ) {
    super(`${method}: ${status === 0 ? "" : `${status} `}${detail}`);
    this.name = "RpcError";
  }
}

/** How a simulated node makes its calls; RpcClient over HTTP, or a stand-in in tests. */
export interface RpcCaller {
  call<T>(method: string, body: unknown, token: string, options?: CallOptions): Promise<T>;
}

export interface CallOptions {
  /**
   * A long poll, or a call of the loop that makes them (Alloc.GetAllocs
   * after Node.GetClientAllocs): no deadline, on the connection of the
   * node's loop (its CSI plugins' ClientCSI.PendingDetaches on one of its
   * own).
   */
  readonly blocking?: boolean;
  /**
   * A call the server answers once work elsewhere is done (CSIVolume.Unpublish
   * waits for the detaches): any number may be in flight, so they get a pool
   * of their own, never the long polls' sockets those detaches are announced on.
   */
  readonly waits?: boolean;
  readonly signal?: AbortSignal;
  /** Parses a JSON reply's bytes in place of JSON.parse (same result). */
  readonly parse?: (json: Buffer) => unknown;
}

export interface RpcClientOptions {
  readonly encoding: Encoding;
  /** Sockets for registrations and the other short calls: their concurrency bound. */
  readonly shortSockets: number;
  /**
   * How long a short call (not a long poll, not one that waits on work
   * elsewhere) may go unanswered before it fails as `timeout`. A Nomad
   * client sets no read deadline on an RPC and waits; this only bounds a
   * call a server never answers, which must show in the report as an error
   * rather than hang the node's loop (and a wave's report) forever.
   */
  readonly callTimeoutMs?: number;
}

/**
 * Far past any answer seen under load: Node.UpdateAlloc answers wait for
 * their record to be durable and applied, and took up to 88 s in the
 * 5,000-node placement burst (a 30 s bound cut 1,885 of them, and the
 * updates they carried were sent again).
 */
const CALL_TIMEOUT_MS = 300_000;

/**
 * The client RPC over HTTP (`PUT /v1/rpc/<Service.Method>`), for thousands
 * of simulated nodes in one process, on undici's connections
 * (http-connection.ts), kept open: each of a node's loops has one of its own,
 * as a Nomad client's calls go over the one RPC session it opened: its
 * heartbeats, its allocations' watch (Node.GetClientAllocs then
 * Alloc.GetAllocs), its Node.UpdateAlloc (one in flight: its sync loop waits
 * for the answer) and its CSI plugins' detach poll. A shared heartbeat pool
 * would time a queue in this process, and one that opens sockets on demand
 * opens hundreds at once after the server stalls, past its listen backlog,
 * and TCP's retries then hold heartbeats for a minute. Registrations and
 * the other short calls share a small pool that bounds their concurrency
 * (calls beyond it queue); CSIVolume.Unpublish, which waits on the node's
 * detaches, gets a connection per call. Every call is counted by method.
 *
 * One connection per loop and no more: a loop's calls are sequential, so a
 * pool per node (undici's `Pool`, Node's Agent) only ever opened a second
 * socket when a call went out as the last one's was being freed, and at
 * 5,000 nodes the simulator ran out of file descriptors.
 */
export class RpcClient implements RpcCaller {
  private readonly url: string;
  private readonly short: Connections;
  private readonly waiting: Connections;
  private readonly nodes = new Map<string, NodeConnections>();
  /** Calls sent and not yet answered that a run's report counts: all but the long polls and the waits. */
  private readonly inFlight = new Set<Promise<unknown>>();
  private closed = false;

  constructor(
    baseUrl: string,
    private readonly counters: CallCounter,
    private readonly options: RpcClientOptions,
  ) {
    const url = new URL(baseUrl);
    if (url.protocol !== "http:") throw new Error(`nodesim speaks plain HTTP; ${baseUrl} is not http://`);
    this.url = origin(url.hostname.replace(/^\[(.*)\]$/, "$1"), Number(url.port || 80));
    this.short = new SharedConnections(this.url, options.shortSockets);
    // Unbounded: what bounds them is the allocations stopping at once; 64 idle kept, as the Agent did.
    this.waiting = new ConnectionPerCall(this.url, 64);
  }

  /**
   * Calls `method` as the node whose secret is `token`; resolves with the
   * decoded reply, rejects with an RpcError. A call whose connection the
   * server closed before any answer (its keep-alive timeout racing the
   * call) is sent once more.
   */
  call<T>(method: string, body: unknown, token: string, options: CallOptions = {}): Promise<T> {
    const answer = this.send<T>(method, body, token, options);
    if (options.blocking || options.waits) return answer;
    this.inFlight.add(answer);
    const done = () => this.inFlight.delete(answer);
    answer.then(done, done);
    return answer;
  }

  /**
   * Resolves once every short call already sent (heartbeats, allocation
   * updates, registrations) has its answer or its failure, or after `ms`:
   * a run stopped while a heartbeat is on its way reports the call it made,
   * rather than cutting the connection under it. Long polls are not waited for.
   */
  async settle(ms: number): Promise<void> {
    if (this.inFlight.size === 0) return;
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, ms);
    });
    const answered = Promise.allSettled([...this.inFlight]).then(() => undefined);
    await Promise.race([answered, late]);
    clearTimeout(timer);
  }

  private async send<T>(method: string, body: unknown, token: string, options: CallOptions): Promise<T> {
    const msgpack = this.options.encoding === "msgpack";
    // Bytes, as undici would make them of a string (Buffer.from), once for the call and its retry.
    const payload: Uint8Array = msgpack ? packPlain(body) : Buffer.from(JSON.stringify(body));
    const length = payload.length;
    const exchange: Exchange = {
      path: `/v1/rpc/${method}`,
      headers: this.headers(method, token, msgpack),
      body: payload,
      signal: options.signal,
      timeoutMs: options.blocking || options.waits ? 0 : (this.options.callTimeoutMs ?? CALL_TIMEOUT_MS),
    };
    const started = performance.now();
    const connections = this.connectionsFor(method, token, options);
    let attempt = 0;
    for (;;) {
      let reply: HttpReply;
      try {
        reply = await connections.request(exchange);
      } catch (err) {
        const e = err as WireError;
        if (e.retryable && attempt === 0 && !this.closed) {
          attempt++;
          continue;
        }
        // Calls cut off by close() are the simulator stopping, not failures to count.
        if (!this.closed) this.counters.call(method, performance.now() - started, length, 0, 0, e.reason);
        throw new RpcError(method, 0, e.reason);
      }
      const { status, body: bytes, type } = reply;
      this.counters.call(method, performance.now() - started, length, bytes.length, status);
      if (status < 200 || status >= 300) throw new RpcError(method, status, bytes.toString("utf8"));
      if (bytes.length === 0) return {} as T;
      return (
        type.startsWith("application/msgpack")
          ? unpackPlain(bytes)
          : options.parse
            ? options.parse(bytes)
            : JSON.parse(bytes.toString("utf8"))
      ) as T;
    }
  }

  /** Those http.request sent (undici adds host, connection: keep-alive and content-length). */
  private headers(method: string, token: string, msgpack: boolean): string[] {
    const headers = [
      "content-type",
      msgpack ? "application/msgpack" : "application/json",
      "x-nomad-token",
      token,
    ];
    // When the call went out, on a clock every process of this machine shares: the load
    // benchmark's server probe splits a heartbeat's round trip at it (a server ignores it).
    if (method === HEARTBEAT) headers.push(SENT_AT_HEADER, sentAt());
    return headers;
  }

  private connectionsFor(method: string, token: string, options: CallOptions): Connections {
    if (options.waits) return this.waiting;
    if (options.blocking) {
      const node = this.node(token);
      return method === PENDING_DETACHES ? node.detaches : node.watch;
    }
    if (method === HEARTBEAT) return this.node(token).heartbeat;
    return method === UPDATE_ALLOC ? this.node(token).update : this.short;
  }

  /** The node's own connections (a node is known by its secret here), each made on its first call. */
  private node(token: string): NodeConnections {
    let node = this.nodes.get(token);
    if (!node) {
      node = new NodeConnections(this.url);
      this.nodes.set(token, node);
    }
    return node;
  }

  close(): void {
    this.closed = true;
    this.short.destroy();
    for (const node of this.nodes.values()) node.destroy();
    this.waiting.destroy();
  }
}

/** One node's connections, one for each of its loops, opened on the loop's first call. */
class NodeConnections {
  private heartbeatConnection?: Connection;
  private updateConnection?: Connection;
  private watchConnection?: Connection;
  private detachesConnection?: Connection;

  constructor(private readonly url: string) {}

  get heartbeat(): Connection {
    this.heartbeatConnection ??= new Connection(this.url);
    return this.heartbeatConnection;
  }

  get update(): Connection {
    this.updateConnection ??= new Connection(this.url);
    return this.updateConnection;
  }

  get watch(): Connection {
    this.watchConnection ??= new Connection(this.url);
    return this.watchConnection;
  }

  get detaches(): Connection {
    this.detachesConnection ??= new Connection(this.url);
    return this.detachesConnection;
  }

  destroy(): void {
    this.heartbeatConnection?.destroy();
    this.updateConnection?.destroy();
    this.watchConnection?.destroy();
    this.detachesConnection?.destroy();
  }
}
