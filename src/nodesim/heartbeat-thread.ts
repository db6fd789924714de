import type { Worker } from "node:worker_threads";
import type { Logger } from "pino";
import { startTypeScriptWorker } from "../services/scheduler/threads/thread-loader.ts";
import type { CallCounter } from "./counters.ts";
import type {
  FromHeartbeatThread,
  HeartbeatWorkerData,
  ThreadLoopDelay,
  ToHeartbeatThread,
} from "./heartbeat-messages.ts";
import type { HeartbeatFactory, HeartbeatHandle } from "./node-heartbeat.ts";
import { type Encoding, RpcError } from "./rpc-client.ts";

const WORKER_ENTRY = new URL("./heartbeat-worker.ts", import.meta.url);

interface Waiter<T> {
  resolve(value: T): void;
  reject(err: Error): void;
}

/**
 * Runs every simulated node's heartbeat loop in a worker thread of its own
 * (heartbeat-worker.ts), so that a heartbeat's timer and its answer never
 * wait behind this thread's work (thousands of nodes parsing allocations and
 * driving tasks): its round trip is the server's, as a real client sees it.
 * Each node's logic holds a handle that drives its loop by message; the
 * thread counts its calls into `counters` and hands a 404 back to the node.
 */
export class HeartbeatThread {
  private readonly worker: Worker;
  private readonly forgotten = new Map<number, () => void>();
  private readonly beats = new Map<number, Waiter<void>>();
  private readonly loops = new Map<number, Waiter<ThreadLoopDelay>>();
  private readonly settles = new Map<number, Waiter<void>>();
  private seq = 0;
  /** Calls the thread made and counted, all of them heartbeats. */
  calls = 0;
  private failure: Error | undefined;

  constructor(
    server: string,
    encoding: Encoding,
    private readonly counters: CallCounter,
    private readonly logger: Logger,
  ) {
    const data: HeartbeatWorkerData = { server, encoding };
    this.worker = startTypeScriptWorker(WORKER_ENTRY, { ...data }, { name: "nodesim-heartbeats" });
    this.worker.on("message", (m: FromHeartbeatThread) => this.received(m));
    this.worker.on("error", (err) => this.failed(err));
    this.worker.on("exit", (code) => this.failed(new Error(`the heartbeat thread exited (${code})`)));
  }

  /** The handles SimNodes drive their loops through (NodeHost.heartbeats). */
  readonly factory: HeartbeatFactory = (node, seed, forgotten) => {
    const i = node.index;
    this.forgotten.set(i, forgotten);
    this.post({ t: "add", i, id: node.id, secret: node.secret, seed });
    return this.handle(i);
  };

  /** The heartbeat thread's event-loop delay since the last call: call once to start a phase, once to end it. */
  loopDelay(): Promise<ThreadLoopDelay> {
    const req = ++this.seq;
    return new Promise<ThreadLoopDelay>((resolve, reject) => {
      if (this.failure) return reject(this.failure);
      this.loops.set(req, { resolve, reject });
      this.post({ t: "loop", req });
    });
  }

  /** Resolves once the heartbeats the thread already sent are answered and counted, or after `ms` (RpcClient.settle). */
  settle(ms: number): Promise<void> {
    const req = ++this.seq;
    return new Promise<void>((resolve, reject) => {
      if (this.failure) return reject(this.failure);
      this.settles.set(req, { resolve, reject });
      this.post({ t: "settle", req, ms });
    });
  }

  async close(): Promise<void> {
    this.failure ??= new Error("the heartbeat thread was closed");
    await this.worker.terminate();
  }

  private handle(i: number): HeartbeatHandle {
    return {
      ttl: (ms) => {
        if (ms > 0) this.post({ t: "ttl", i, ms });
      },
      start: (ms) => this.post({ t: "start", i, ms }),
      retry: () => this.post({ t: "retry", i }),
      stop: () => this.post({ t: "stop", i }),
      beat: () => {
        const req = ++this.seq;
        return new Promise<void>((resolve, reject) => {
          if (this.failure) return reject(new RpcError("Node.UpdateStatus", 0, this.failure.message));
          this.beats.set(req, { resolve, reject });
          this.post({ t: "beat", i, req });
        });
      },
    };
  }

  private post(m: ToHeartbeatThread): void {
    if (!this.failure) this.worker.postMessage(m);
  }

  private received(m: FromHeartbeatThread): void {
    switch (m.t) {
      case "call":
        this.calls++;
        this.counters.call(m.method, m.ms, m.out, m.in, m.status, m.reason);
        return;
      case "beat": {
        const w = this.beats.get(m.req);
        this.beats.delete(m.req);
        if (m.error) w?.reject(new RpcError("Node.UpdateStatus", m.error.status, m.error.message));
        else w?.resolve();
        return;
      }
      case "forgotten":
        this.forgotten.get(m.i)?.();
        return;
      case "loop":
        this.loops.get(m.req)?.resolve(m.delay);
        this.loops.delete(m.req);
        return;
      case "settled":
        this.settles.get(m.req)?.resolve();
        this.settles.delete(m.req);
        return;
    }
  }

  /** The thread died: nothing more will be answered; callers waiting on it are told. */
  private failed(err: Error): void {
    if (!this.failure) this.logger.error({ err }, "the heartbeat thread failed");
    this.failure ??= err;
    for (const w of this.beats.values()) w.reject(new RpcError("Node.UpdateStatus", 0, err.message));
    for (const w of [...this.loops.values(), ...this.settles.values()]) w.reject(err);
    this.beats.clear();
    this.loops.clear();
    this.settles.clear();
  }
}
