import { type Logger, pino } from "pino";
import { type Clock, systemClock } from "../util/clock.ts";
import type { AllocRunner } from "./alloc-runner.ts";
import { JobTexts } from "./allocs-reply.ts";
import { Counters, type SimCounters } from "./counters.ts";
import type { CSIDetachBehaviour } from "./csi-plugins.ts";
import { DEFAULT_DRIVER, type DriverOptions } from "./driver-options.ts";
import { HeartbeatThread } from "./heartbeat-thread.ts";
import { DEFAULT_SHAPE, type NodeShape } from "./node-body.ts";
import { Prng } from "./prng.ts";
import { type Encoding, RpcClient } from "./rpc-client.ts";
import { type NodeHost, SimNode } from "./sim-node.ts";
import { SyncWheel } from "./sync-wheel.ts";
import { TimerQueue } from "./timer-queue.ts";
import { SYNC_INTERVAL_MS } from "./update-buffer.ts";

/**
 * How long stop() waits for calls already sent to be answered: a heartbeat
 * or an update on its way when a run ends is counted in its report rather
 * than cut off (a server under load may take longer; those are given up).
 */
const STOP_SETTLE_MS = 5_000;

export interface NodeSimOptions {
  /** http://host:port of a chronomad (or Nomad-compatible) server. */
  readonly server: string;
  readonly nodes: number;
  readonly seed?: string;
  /** Nomad PR 17354's prioritized updates; false sends on every tick with anything waiting (Nomad before it). */
  readonly prioritizedUpdates?: boolean;
  readonly encoding?: Encoding;
  /** Sockets (and so concurrency) for registrations; long polls and updates get one socket per node. */
  readonly shortSockets?: number;
  /** Node.GetClientAllocs' MaxQueryTime, milliseconds (Nomad's default: 5 minutes). */
  readonly maxQueryTimeMs?: number;
  /** Nomad's initialHeartbeatStagger (10 s). */
  readonly initialHeartbeatStaggerMs?: number;
  readonly syncIntervalMs?: number;
  readonly shape?: Partial<NodeShape>;
  readonly driver?: Partial<DriverOptions>;
  /** What the nodes' CSI plugins do with the server's detach calls (default: succeed). */
  readonly csiDetach?: CSIDetachBehaviour;
  readonly clock?: Clock;
  readonly logger?: Logger;
  /**
   * Every node's heartbeat loop in a worker thread of its own, so that a
   * heartbeat's round trip measures the server and not this process's loop
   * (a Nomad client is a process of its own). Needs the system clock.
   */
  readonly heartbeatThread?: boolean;
}

export interface WaveOptions {
  /** Share of the nodes that are up, 0..1. */
  readonly share: number;
  readonly durationMs: number;
}

export interface WaveReport {
  readonly nodes: readonly string[];
  readonly silencedAt: number;
  readonly returnedAt: number;
  /** When the last node finished its three calls. */
  readonly reconnectedAt: number;
  /** How many nodes used each order of the three calls. */
  readonly orders: Readonly<Record<string, number>>;
}

export interface AllocTally {
  pending: number;
  running: number;
  complete: number;
  failed: number;
}

export interface SimReport extends SimCounters {
  readonly nodes: {
    readonly total: number;
    readonly up: number;
    readonly silent: number;
    readonly new: number;
  };
  /** Allocations with a live runner, by client status (the clients' view). */
  readonly allocs: AllocTally;
  readonly prioritized_updates: boolean;
  readonly process: {
    readonly cpu_user_s: number;
    readonly cpu_system_s: number;
    readonly rss_bytes: number;
    readonly heap_bytes: number;
  };
  readonly uptime_s: number;
}

/**
 * Thousands of simulated Nomad clients in one process (as nomad-nodesim
 * does), sharing one timer queue, one sync wheel and two keep-alive socket
 * pools. Deterministic from the seed where the network allows: node IDs,
 * secrets, jitter, task durations and failures, fault waves.
 */
export class NodeSimulator {
  readonly nodes: SimNode[] = [];
  readonly counters = new Counters();
  private readonly rpc: RpcClient;
  /** Where the heartbeats go out from, when NodeSimOptions.heartbeatThread. */
  readonly heartbeatThread: HeartbeatThread | undefined;
  private readonly timers: TimerQueue;
  private readonly wheel: SyncWheel;
  private readonly prng: Prng;
  private readonly waveRng: Prng;
  private readonly prioritized: boolean;
  private readonly logger: Logger;
  private readonly startedAt = performance.now();
  private readonly cpuAtStart = process.cpuUsage();

  constructor(options: NodeSimOptions) {
    const seed = options.seed ?? "chronomad";
    this.prng = new Prng(seed);
    this.waveRng = this.prng.fork("waves");
    this.prioritized = options.prioritizedUpdates ?? true;
    this.logger = options.logger ?? pino({ level: "silent" });
    this.timers = new TimerQueue(options.clock, (err) =>
      this.logger.error({ err }, "simulated node timer failed"),
    );
    this.wheel = new SyncWheel(this.timers, options.syncIntervalMs ?? SYNC_INTERVAL_MS);
    if (options.heartbeatThread && options.clock && options.clock !== systemClock)
      throw new Error(
        "the heartbeat thread runs on the system clock; a simulation on another clock runs its heartbeats here",
      );
    const encoding = options.encoding ?? "json";
    this.heartbeatThread = options.heartbeatThread
      ? new HeartbeatThread(options.server, encoding, this.counters, this.logger)
      : undefined;
    this.rpc = new RpcClient(options.server, this.counters, {
      // JSON by default: the server's msgpack route reads the body through a
      // preParsing hook that leaves the raw request destroyed, and a blocking
      // Node.GetClientAllocs then answers at once instead of waiting.
      encoding,
      shortSockets: options.shortSockets ?? 128,
    });
    const host: NodeHost = {
      rpc: this.rpc,
      timers: this.timers,
      wheel: this.wheel,
      counters: this.counters,
      logger: this.logger,
      seed,
      driver: { ...DEFAULT_DRIVER, ...options.driver },
      shape: { ...DEFAULT_SHAPE, ...options.shape },
      prioritized: this.prioritized,
      maxQueryTimeNs: (options.maxQueryTimeMs ?? 300_000) * 1e6,
      initialHeartbeatStaggerMs: options.initialHeartbeatStaggerMs ?? 10_000,
      csiDetach: options.csiDetach ?? "ack",
      heartbeats: this.heartbeatThread?.factory,
      jobTexts: new JobTexts(),
    };
    for (let i = 0; i < options.nodes; i++)
      this.nodes.push(new SimNode(host, i, this.prng.fork(`node/${i}`)));
  }

  /** Registers every node (the short socket pool bounds how many at once) and starts their loops. */
  async start(): Promise<void> {
    this.wheel.start();
    await Promise.all(this.nodes.map((n) => n.start()));
  }

  /**
   * A fault wave: `share` of the nodes that are up go silent for
   * `durationMs`, then come back, each making its three calls in its own
   * drawn order. Resolves when every one of them has made them.
   */
  async disconnectWave(wave: WaveOptions): Promise<WaveReport> {
    const up = this.nodes.filter((n) => n.state === "up");
    const count = Math.min(up.length, Math.round(up.length * Math.max(0, Math.min(1, wave.share))));
    const chosen = this.waveRng.shuffle(up).slice(0, count);
    const silencedAt = Date.now();
    for (const n of chosen) n.silence();
    await new Promise<void>((resolve) => this.timers.after(wave.durationMs, resolve));
    const returnedAt = Date.now();
    await Promise.all(chosen.map((n) => n.reconnect()));
    const orders: Record<string, number> = {};
    for (const n of chosen) {
      const key = n.lastReconnectOrder.join(" > ");
      orders[key] = (orders[key] ?? 0) + 1;
    }
    return { nodes: chosen.map((n) => n.id), silencedAt, returnedAt, reconnectedAt: Date.now(), orders };
  }

  /** The clients' view of their allocations: live runners by client status. */
  allocTally(filter?: (jobID: string) => boolean): AllocTally {
    const t: AllocTally = { pending: 0, running: 0, complete: 0, failed: 0 };
    for (const n of this.nodes) {
      for (const r of n.runners.values()) {
        if (r.destroyed || (filter && !filter(r.spec.JobID))) continue;
        t[r.clientStatus]++;
      }
    }
    return t;
  }

  /** Every allocation runner of every node, with the node it runs on. */
  *runners(): Iterable<{ readonly nodeID: string; readonly runner: AllocRunner }> {
    for (const n of this.nodes) for (const runner of n.runners.values()) yield { nodeID: n.id, runner };
  }

  report(): SimReport {
    const nodes = { total: this.nodes.length, up: 0, silent: 0, new: 0, stopped: 0 };
    for (const n of this.nodes) nodes[n.state]++;
    const cpu = process.cpuUsage(this.cpuAtStart);
    const mem = process.memoryUsage();
    return {
      ...this.counters.snapshot(),
      nodes,
      allocs: this.allocTally(),
      prioritized_updates: this.prioritized,
      process: {
        cpu_user_s: cpu.user / 1e6,
        cpu_system_s: cpu.system / 1e6,
        rss_bytes: mem.rss,
        heap_bytes: mem.heapUsed,
      },
      uptime_s: (performance.now() - this.startedAt) / 1000,
    };
  }

  async stop(options: { deregister?: boolean } = {}): Promise<void> {
    this.wheel.stop();
    await Promise.all(this.nodes.map((n) => n.stop(options)));
    // The nodes send nothing more; what they sent is answered before the connections close, so the report counts it.
    await Promise.all([
      this.rpc.settle(STOP_SETTLE_MS),
      this.heartbeatThread?.settle(STOP_SETTLE_MS).catch(() => undefined),
    ]);
    this.timers.stop();
    this.rpc.close();
    await this.heartbeatThread?.close();
  }
}
