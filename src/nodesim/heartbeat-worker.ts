import { monitorEventLoopDelay } from "node:perf_hooks";
import { parentPort, workerData } from "node:worker_threads";
import { systemClock } from "../util/clock.ts";
import type { FromHeartbeatThread, HeartbeatWorkerData, ToHeartbeatThread } from "./heartbeat-messages.ts";
import { NodeHeartbeat } from "./node-heartbeat.ts";
import { Prng } from "./prng.ts";
import { RpcClient, RpcError } from "./rpc-client.ts";
import { TimerQueue } from "./timer-queue.ts";

/**
 * The simulator's heartbeat thread: every node's heartbeat loop and its
 * connection, on an event loop that does nothing else, as a Nomad client's
 * heartbeat does not wait behind other clients' work. The nodes' logic
 * (registrations, allocations, partitions) stays on the main thread and
 * drives the loops by message (heartbeat-thread.ts).
 */
const port = parentPort;
if (!port) throw new Error("heartbeat-worker.ts runs as a worker thread");
const data = workerData as HeartbeatWorkerData;
const post = (m: FromHeartbeatThread) => port.postMessage(m);

const timers = new TimerQueue(systemClock, (err) => {
  throw err;
});
const rpc = new RpcClient(
  data.server,
  {
    call: (method, ms, out, bytesIn, status, reason = "") =>
      post({ t: "call", method, ms, out, in: bytesIn, status, reason }),
  },
  // Only heartbeats go out from here, each node on a connection of its own; the shared pool is unused.
  { encoding: data.encoding, shortSockets: 1 },
);
const nodes = new Map<number, NodeHeartbeat>();
const delay = monitorEventLoopDelay({ resolution: 1 });
delay.enable();
const ms = (ns: number) => Math.round(ns / 1e3) / 1e3;

function node(i: number): NodeHeartbeat {
  const n = nodes.get(i);
  if (!n) throw new Error(`heartbeat thread: no node ${i}`);
  return n;
}

port.on("message", (m: ToHeartbeatThread) => {
  switch (m.t) {
    case "add":
      nodes.set(
        m.i,
        new NodeHeartbeat(rpc, timers, { id: m.id, secret: m.secret }, new Prng(m.seed), () =>
          post({ t: "forgotten", i: m.i }),
        ),
      );
      return;
    case "ttl":
      node(m.i).ttl(m.ms);
      return;
    case "start":
      node(m.i).start(m.ms);
      return;
    case "retry":
      node(m.i).retry();
      return;
    case "stop":
      node(m.i).stop();
      return;
    case "beat":
      node(m.i)
        .beat()
        .then(
          () => post({ t: "beat", req: m.req }),
          (err: unknown) =>
            post({
              t: "beat",
              req: m.req,
              error:
                err instanceof RpcError
                  ? { status: err.status, message: err.detail }
                  : { status: 0, message: String(err) },
            }),
        );
      return;
    case "settle":
      void rpc.settle(m.ms).then(() => post({ t: "settled", req: m.req }));
      return;
    case "loop": {
      const figures = {
        p50_ms: ms(delay.percentile(50)),
        p99_ms: ms(delay.percentile(99)),
        max_ms: ms(delay.max),
        count: delay.count,
      };
      delay.reset();
      post({ t: "loop", req: m.req, delay: figures });
      return;
    }
  }
});
