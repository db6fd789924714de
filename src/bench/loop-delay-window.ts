import { monitorEventLoopDelay } from "node:perf_hooks";
import type { LoopDelay } from "./load-server.ts";

const ms = (ns: number) => Math.round(ns / 1e3) / 1e3;

/**
 * This process's event-loop delay from now until `end()` (perf_hooks, sampled
 * every millisecond), as the server's probe measures the server's: in the
 * load benchmark, the simulator's own loop, which every simulated node's
 * heartbeat timer and reply wait behind.
 */
export function loopDelayWindow(): { end(): LoopDelay } {
  const h = monitorEventLoopDelay({ resolution: 1 });
  h.enable();
  return {
    end: () => {
      h.disable();
      return {
        p50_ms: ms(h.percentile(50)),
        p99_ms: ms(h.percentile(99)),
        max_ms: ms(h.max),
        count: h.count,
      };
    },
  };
}
