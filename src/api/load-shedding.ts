import { type IntervalHistogram, monitorEventLoopDelay } from "node:perf_hooks";
import type { FastifyInstance } from "fastify";
import type { Metrics } from "../metrics/metrics.ts";

/**
 * Reads whose cost grows with the cluster (lists, filters, counts, new event
 * streams). While the event loop lags, these are turned away with 429 so that
 * what keeps the cluster alive — heartbeats and the other client RPCs, point
 * reads, writes — still gets the loop. A client told to retry loses a few
 * seconds; a node whose heartbeat is not answered is marked down.
 */
const EXPENSIVE_READS = new Set([
  "/v1/jobs",
  "/v1/nodes",
  "/v1/allocations",
  "/v1/evaluations",
  "/v1/evaluations/count",
  "/v1/deployments",
  "/v1/event/stream",
]);

/** How long a 429 asks the client to wait, in seconds. */
const RETRY_AFTER_S = 1;

/**
 * The event loop's recent lag: the longest delay seen in the last window,
 * sampled by libuv's timer (perf_hooks.monitorEventLoopDelay). The longest,
 * not a percentile, because one 300 ms stall among a hundred quick turns is
 * exactly what delays a heartbeat.
 */
export class EventLoopLag {
  private readonly histogram: IntervalHistogram;
  private readonly timer: NodeJS.Timeout;
  private lastMaxMs = 0;

  constructor(windowMs = 1000) {
    this.histogram = monitorEventLoopDelay({ resolution: 10 });
    this.histogram.enable();
    this.timer = setInterval(() => this.roll(), windowMs);
    this.timer.unref();
  }

  /** The longest delay of the last full window, or of the current one if longer. */
  get lagMs(): number {
    return Math.max(this.lastMaxMs, this.histogram.max / 1e6);
  }

  close(): void {
    clearInterval(this.timer);
    this.histogram.disable();
  }

  private roll(): void {
    this.lastMaxMs = this.histogram.max / 1e6;
    this.histogram.reset();
  }
}

/**
 * Sheds expensive reads with 429 and `Retry-After` while the loop's lag is
 * over `thresholdMs` (0 turns shedding off). Registered before the routes, so
 * it marks them as they are added.
 */
export function shedLoadWhenLagging(
  app: FastifyInstance,
  lag: { readonly lagMs: number },
  thresholdMs: number,
  metrics: Metrics,
): void {
  if (thresholdMs <= 0) return;
  app.addHook("onRoute", (route) => {
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    if (!methods.includes("GET") || !EXPENSIVE_READS.has(route.url)) return;
    const shed = async (_request: unknown, reply: import("fastify").FastifyReply) => {
      const lagMs = lag.lagMs;
      if (lagMs <= thresholdMs) return;
      metrics.incr("chronomad.http.shed", 1, { route: route.url });
      reply.header("Retry-After", String(RETRY_AFTER_S));
      return reply
        .status(429)
        .type("text/plain; charset=utf-8")
        .send(`server overloaded (event loop lag ${Math.round(lagMs)} ms): retry later`);
    };
    const existing = route.onRequest;
    route.onRequest =
      existing === undefined ? [shed] : [shed, ...(Array.isArray(existing) ? existing : [existing])];
  });
}
