import { Agent, type IncomingMessage, request } from "node:http";
import { packPlain, unpackPlain } from "../codec/envelope-codec.ts";
import type { CallCounter } from "./counters.ts";

export type Encoding = "msgpack" | "json";

const HEARTBEAT = "Node.UpdateStatus";
const UPDATE_ALLOC = "Node.UpdateAlloc";

// The server closes idle sockets after its keep-alive timeout (72 s in fastify); ours go first.
const KEEP_ALIVE = { keepAlive: true, keepAliveMsecs: 30_000, timeout: 0, scheduling: "lifo" as const };

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
  /** A long poll: on the pool of one socket per node that holds one. */
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
   * Long polls one node may hold at once (Node.GetClientAllocs, and
   * ClientCSI.PendingDetaches for a node with CSI plugins): the sockets its
   * pool keeps open between polls.
   */
  readonly blockingPerNode: number;
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
 * of simulated nodes in one process: keep-alive sockets in pools, so that
 * long polls, updates and registrations never hold heartbeats back. Each
 * node's long polls, updates and heartbeats go out on connections of its
 * own, kept open, as a Nomad client's calls go over its own RPC session: a
 * shared heartbeat pool would time a queue in this process, and one that
 * opens sockets on demand opens hundreds at once after the server stalls,
 * past its listen backlog, and TCP's retries then hold heartbeats for a
 * minute. Registrations and the other short calls share a small pool that
 * bounds their concurrency (requests beyond it queue in the agent). Every
 * call is counted by method.
 *
 * Pools by node, not one of thousands of sockets: Node's Agent finds a
 * socket it frees in its list of busy ones by a linear search, so a pool
 * holding every node's long poll spent microseconds per answer searching
 * 5,000 sockets (3% of the simulator's CPU in a placement burst).
 */
export class RpcClient implements RpcCaller {
  private readonly host: string;
  private readonly port: number;
  private readonly short: Agent;
  private readonly waiting: Agent;
  private readonly nodes = new Map<string, NodePools>();
  private closed = false;

  constructor(
    baseUrl: string,
    private readonly counters: CallCounter,
    private readonly options: RpcClientOptions,
  ) {
    const url = new URL(baseUrl);
    if (url.protocol !== "http:") throw new Error(`nodesim speaks plain HTTP; ${baseUrl} is not http://`);
    this.host = url.hostname;
    this.port = Number(url.port || 80);
    this.short = new Agent({
      ...KEEP_ALIVE,
      maxSockets: options.shortSockets,
      maxFreeSockets: options.shortSockets,
    });
    // Unbounded: what bounds them is the allocations stopping at once.
    this.waiting = new Agent({ ...KEEP_ALIVE, maxFreeSockets: 64 });
  }

  /**
   * Calls `method` as the node whose secret is `token`; resolves with the
   * decoded reply, rejects with an RpcError. A request that went out on a
   * reused keep-alive socket the server had just closed is sent once more.
   */
  async call<T>(method: string, body: unknown, token: string, options: CallOptions = {}): Promise<T> {
    const msgpack = this.options.encoding === "msgpack";
    const payload = msgpack ? Buffer.from(packPlain(body)) : Buffer.from(JSON.stringify(body));
    const started = performance.now();
    let attempt = 0;
    for (;;) {
      try {
        const { status, bytes, type } = await this.send(method, payload, token, options, msgpack);
        this.counters.call(method, performance.now() - started, payload.length, bytes.length, status);
        if (status < 200 || status >= 300) throw new RpcError(method, status, bytes.toString("utf8"));
        if (bytes.length === 0) return {} as T;
        return (
          type.startsWith("application/msgpack")
            ? unpackPlain(bytes)
            : options.parse
              ? options.parse(bytes)
              : JSON.parse(bytes.toString("utf8"))
        ) as T;
      } catch (err) {
        if (err instanceof RpcError) throw err;
        const e = err as NodeJS.ErrnoException & { reused?: boolean };
        if (e.reused && attempt === 0 && (e.code === "ECONNRESET" || e.code === "EPIPE")) {
          attempt++;
          continue;
        }
        const reason =
          e.name !== "AbortError"
            ? (e.code ?? e.message)
            : (e.cause as Error | undefined)?.name === "TimeoutError"
              ? "timeout"
              : "aborted";
        // Calls cut off by close() are the simulator stopping, not failures to count.
        if (!this.closed)
          this.counters.call(method, performance.now() - started, payload.length, 0, 0, reason);
        throw new RpcError(method, 0, reason);
      }
    }
  }

  private send(
    method: string,
    payload: Buffer,
    token: string,
    options: CallOptions,
    msgpack: boolean,
  ): Promise<{ status: number; bytes: Buffer; type: string }> {
    return new Promise((resolve, reject) => {
      const req = request(
        {
          agent: this.agentFor(method, token, options),
          host: this.host,
          port: this.port,
          method: "PUT",
          path: `/v1/rpc/${method}`,
          signal: this.deadline(options),
          headers: {
            "content-type": msgpack ? "application/msgpack" : "application/json",
            "content-length": payload.length,
            "x-nomad-token": token,
            // When the call went out, on a clock every process of this machine shares: the load
            // benchmark's server probe splits a heartbeat's round trip at it (a server ignores it).
            ...(method === HEARTBEAT ? { [SENT_AT_HEADER]: sentAt() } : {}),
          },
        },
        (res: IncomingMessage) => {
          const chunks: Buffer[] = [];
          res.on("data", (c: Buffer) => chunks.push(c));
          res.on("end", () =>
            resolve({
              status: res.statusCode ?? 0,
              bytes: chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks),
              type: String(res.headers["content-type"] ?? ""),
            }),
          );
          res.on("error", reject);
        },
      );
      req.on("error", (err: Error & { reused?: boolean }) => {
        err.reused = req.reusedSocket;
        reject(err);
      });
      req.end(payload);
    });
  }

  /** The call's own signal, with the short calls' deadline added. */
  private deadline(options: CallOptions): AbortSignal | undefined {
    if (options.blocking || options.waits) return options.signal;
    const timeout = AbortSignal.timeout(this.options.callTimeoutMs ?? CALL_TIMEOUT_MS);
    return options.signal ? AbortSignal.any([options.signal, timeout]) : timeout;
  }

  private agentFor(method: string, token: string, options: CallOptions): Agent {
    if (options.waits) return this.waiting;
    if (options.blocking) return this.pools(token).blocking;
    if (method === HEARTBEAT) return this.pools(token).heartbeat;
    return method === UPDATE_ALLOC ? this.pools(token).update : this.short;
  }

  /** The node's own pools (a node is known by its secret here), made on its first call of each kind. */
  private pools(token: string): NodePools {
    let pools = this.nodes.get(token);
    if (!pools) {
      pools = new NodePools(this.options.blockingPerNode);
      this.nodes.set(token, pools);
    }
    return pools;
  }

  close(): void {
    this.closed = true;
    this.short.destroy();
    for (const pools of this.nodes.values()) pools.destroy();
    this.waiting.destroy();
  }
}

/**
 * One node's connections: its heartbeats', its one Node.UpdateAlloc in
 * flight (its sync loop waits for the answer), and its long polls. A node
 * bounds how many of each it has in flight; these keep them open between
 * calls.
 */
class NodePools {
  private heartbeatAgent?: Agent;
  private updateAgent?: Agent;
  private blockingAgent?: Agent;

  constructor(private readonly blockingKept: number) {}

  get heartbeat(): Agent {
    this.heartbeatAgent ??= new Agent({ ...KEEP_ALIVE, maxSockets: 1, maxFreeSockets: 1 });
    return this.heartbeatAgent;
  }

  get update(): Agent {
    this.updateAgent ??= new Agent({ ...KEEP_ALIVE, maxFreeSockets: 1 });
    return this.updateAgent;
  }

  get blocking(): Agent {
    this.blockingAgent ??= new Agent({ ...KEEP_ALIVE, maxFreeSockets: this.blockingKept });
    return this.blockingAgent;
  }

  destroy(): void {
    this.heartbeatAgent?.destroy();
    this.updateAgent?.destroy();
    this.blockingAgent?.destroy();
  }
}
