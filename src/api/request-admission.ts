import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { FastifyServerFactory } from "fastify";
import { type TurnBudget, TurnPacer } from "../store/turn-pacer.ts";

/**
 * How long the requests the HTTP server starts in one turn of the event loop
 * may hold it, once more are waiting than fit. A placement burst's client
 * RPCs cost the main thread 150–400 µs each from routing to the reply's
 * write (an Alloc.GetAllocs with its jobs and identities, a
 * Node.UpdateAlloc's body); 8 ms is a little more than an apply slice
 * (APPLY_SLICE_MS) or the watches' paced wakes (CALLS_PER_TURN), so the
 * clients' calls keep pace with the plans applied for them. It is a cap:
 * in a busy iteration the requests get their share of what the apply
 * slice leaves of the loop's allowance (LoopTurn), and at least the
 * budget's `minPerTurn`.
 */
export const REQUEST_BUDGET_MS = 8;

/** The quota's bounds: some requests run in every turn, however dear; not thousands in one. */
const REQUEST_BUDGET: TurnBudget = { ms: REQUEST_BUDGET_MS, minPerTurn: 4, maxPerTurn: 1024 };

/** The quota before any turn was measured. */
const FIRST_PER_TURN = 32;

/**
 * The path of the one call that must never wait behind others: a node's
 * heartbeat. A node whose heartbeat is not answered within its TTL and
 * grace is marked down and its allocations lost or rescheduled, so it is
 * worth more than any other request's latency.
 */
const HEARTBEAT_METHOD = "Node.UpdateStatus";
const HEARTBEAT_PATH = `/v1/rpc/${HEARTBEAT_METHOD}`;
const ADMITTED = Promise.resolve();

/** The admission of each server made by admittingServerFactory, for the RPC port's calls. */
const admissions = new WeakMap<Server, RequestAdmission>();

/** The admission `server`'s requests pass through, if it has one. */
export function admissionOf(server: Server): RequestAdmission | undefined {
  return admissions.get(server);
}

function isHeartbeat(url: string | undefined): boolean {
  return (
    url?.startsWith(HEARTBEAT_PATH) === true &&
    (url.length === HEARTBEAT_PATH.length || url[HEARTBEAT_PATH.length] === "?")
  );
}

/**
 * Admission of HTTP requests to the main loop: a heartbeat is handled as
 * soon as node's parser hands it over; every other request runs in arrival
 * order, as many per turn of the event loop as fit its time budget
 * (TurnBudget: measured after the fact, so the quota is the last busy
 * turn's), the rest on later turns.
 *
 * Why: the event loop reads every ready socket in one poll phase and, left
 * alone, runs each request there in full (routing, body, handler, reply,
 * `writev`). In a placement burst a thousand nodes' calls become ready
 * together, the poll phase holds the loop for hundreds of milliseconds, and
 * a heartbeat that arrives meanwhile waits in its socket for the next poll.
 * Admitted this way, a poll phase only parses (node's C++ parser) and
 * queues, so the loop comes back to its sockets after a bounded turn and a
 * heartbeat waits about one turn, while the work itself is the same and in
 * the same order: the backlog moves from the kernel's socket buffers to
 * this queue. A quiet server answers at once, as before.
 *
 * The queue holds each request's response (`res.req` is its request), so
 * queuing allocates nothing once the pacer's ring has grown. A request
 * whose client went away while it waited is still handed over: fastify
 * sees the closed socket and answers nothing, as it would have.
 */
export class RequestAdmission {
  private readonly pacer: TurnPacer<ServerResponse | (() => void)>;

  constructor(
    private readonly handler: (req: IncomingMessage, res: ServerResponse) => void,
    budget: TurnBudget = REQUEST_BUDGET,
  ) {
    this.pacer = new TurnPacer<ServerResponse | (() => void)>(
      Math.min(FIRST_PER_TURN, budget.maxPerTurn),
      (item) => (typeof item === "function" ? item() : this.handler(item.req, item)),
      budget,
    );
  }

  /**
   * Resolves when a call that came by another transport (the RPC port's
   * client calls, which reach the same routes in process) is admitted, in
   * the same queue as the HTTP requests; a heartbeat is admitted at once.
   */
  admitCall(method: string): Promise<void> {
    if (method === HEARTBEAT_METHOD) return ADMITTED;
    return new Promise((resolve) => this.pacer.run(resolve));
  }

  /** Requests waiting for a later turn. */
  get waiting(): number {
    return this.pacer.waiting;
  }

  readonly admit = (req: IncomingMessage, res: ServerResponse): void => {
    if (isHeartbeat(req.url)) {
      this.handler(req, res);
      return;
    }
    this.pacer.run(res);
  };
}

/** What fastify's checked options hold (typed loosely in its declarations). */
interface ServerTimeouts {
  readonly keepAliveTimeout: number;
  readonly requestTimeout: number;
  readonly connectionTimeout: number;
  readonly maxRequestsPerSocket: number;
}

/**
 * Fastify's server factory for an HTTP/1 server whose requests pass through
 * a RequestAdmission; the server's timeouts are set from fastify's options
 * as fastify sets them on a server of its own (checked, with its defaults:
 * keep-alive 72 s, no request or connection timeout).
 */
export function admittingServerFactory(): FastifyServerFactory {
  return (handler, options): Server => {
    const admission = new RequestAdmission(handler);
    const server = createServer(admission.admit);
    admissions.set(server, admission);
    const timeouts = options as unknown as ServerTimeouts;
    server.keepAliveTimeout = timeouts.keepAliveTimeout;
    server.requestTimeout = timeouts.requestTimeout;
    server.setTimeout(timeouts.connectionTimeout);
    if (timeouts.maxRequestsPerSocket > 0) server.maxRequestsPerSocket = timeouts.maxRequestsPerSocket;
    return server;
  };
}
