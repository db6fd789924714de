import type { Logger } from "pino";
import { AllocRunner, type RunnerHost } from "./alloc-runner.ts";
import type { NodeServices } from "./alloc-services.ts";
import { simAllocSpec } from "./alloc-spec.ts";
import { AllocSync } from "./alloc-sync.ts";
import { type JobTexts, parseAllocsReply } from "./allocs-reply.ts";
import type { Counters } from "./counters.ts";
import { NodeCSICalls } from "./csi-calls.ts";
import type { CSIDetachBehaviour } from "./csi-plugins.ts";
import type { DriverOptions } from "./driver-options.ts";
import { type NodeShape, nodeBody, nodeIP } from "./node-body.ts";
import {
  type HeartbeatFactory,
  type HeartbeatHandle,
  NodeHeartbeat,
  REGISTER_RETRY_MS,
  replyTtlMs,
} from "./node-heartbeat.ts";
import { Prng, stagger } from "./prng.ts";
import type { RpcCaller } from "./rpc-client.ts";
import { NodeServiceCalls } from "./service-calls.ts";
import type { SyncWheel } from "./sync-wheel.ts";
import { rfc3339 } from "./task-states.ts";
import type { TimerQueue } from "./timer-queue.ts";

/** What every simulated node shares: one RPC client, one timer queue, one sync wheel. */
export interface NodeHost {
  readonly rpc: RpcCaller;
  readonly timers: TimerQueue;
  readonly wheel: SyncWheel;
  readonly counters: Counters;
  readonly logger: Logger;
  readonly seed: string;
  readonly driver: DriverOptions;
  readonly shape: NodeShape;
  readonly prioritized: boolean;
  /** Nanoseconds asked for in Node.GetClientAllocs' MaxQueryTime. */
  readonly maxQueryTimeNs: number;
  /** Nomad's initialHeartbeatStagger: the first heartbeat after registering comes within this. */
  readonly initialHeartbeatStaggerMs: number;
  /** What its CSI plugins do with the server's detach calls (default: succeed). */
  readonly csiDetach?: CSIDetachBehaviour;
  /** Jobs parsed from Alloc.GetAllocs replies, shared by the nodes (allocs-reply.ts); default: none kept. */
  readonly jobTexts?: JobTexts;
  /** Where each node's heartbeat loop runs (the simulator's heartbeat thread); default: here, on `rpc` and `timers`. */
  readonly heartbeats?: HeartbeatFactory;
}

export type NodeState = "new" | "up" | "silent" | "stopped";

/** The three calls a node makes when it comes back from a partition, in an order it draws. */
export const RECONNECT_CALLS = ["Node.UpdateStatus", "Node.UpdateAlloc", "Node.Register"] as const;

interface ClientAllocsReply {
  Allocs?: Record<string, number> | null;
  Index?: number;
}
interface GetAllocsReply {
  Allocs?: Record<string, unknown>[] | null;
}

/** Nomad's client retry interval (client.go), in milliseconds. */
const GET_ALLOCS_RETRY_MS = 5_000;
/** Alloc.GetAllocs waits at most this for allocations it was told about. */
const GET_ALLOCS_WAIT_NS = 10e9;

/**
 * One simulated Nomad client: registers, heartbeats at the TTL the server
 * gives, long-polls Node.GetClientAllocs, pulls what changed with
 * Alloc.GetAllocs, runs allocations with the simulated driver, and reports
 * them through its AllocSync (the prioritized update buffer). It can
 * be silenced (a partition: no heartbeats, no updates, no polls) and brought
 * back, when it makes its three calls in an order drawn from its PRNG.
 */
export class SimNode implements RunnerHost {
  readonly id: string;
  readonly secret: string;
  readonly name: string;
  state: NodeState = "new";
  readonly runners = new Map<string, AllocRunner>();
  /** The order of the three calls at the last reconnect. */
  lastReconnectOrder: readonly string[] = [];
  /** Its runners register their native services through it. */
  readonly services: NodeServices;
  /** Its csi hook's calls and its plugins' answers to detach calls; undefined when it runs no CSI plugin. */
  readonly csi: NodeCSICalls | undefined;
  private readonly sync: AllocSync;
  private readonly heartbeats: HeartbeatHandle;
  /** Bumped whenever the node's loops must stop (silence, stop): a loop that sees another epoch ends. */
  private epoch = 0;
  private watch: AbortController | undefined;
  private detachWatch: AbortController | undefined;
  private minQueryIndex = 0;
  private readonly parseAllocs: ((json: Buffer) => unknown) | undefined;

  constructor(
    private readonly host: NodeHost,
    readonly index: number,
    private readonly prng: Prng,
  ) {
    this.id = prng.uuid();
    this.secret = prng.uuid();
    this.name = `${host.shape.namePrefix}-${String(index).padStart(5, "0")}`;
    this.sync = new AllocSync(host, this, prng);
    const jobs = host.jobTexts;
    this.parseAllocs = jobs && ((json) => parseAllocsReply(json, jobs));
    const heartbeatSeed = prng.forkSeed("heartbeat");
    const forgotten = () => this.forgotten();
    this.heartbeats = host.heartbeats
      ? host.heartbeats(this, heartbeatSeed, forgotten)
      : new NodeHeartbeat(host.rpc, host.timers, this, new Prng(heartbeatSeed), forgotten);
    this.services = {
      node: { ID: this.id, Name: this.name, Datacenter: host.shape.datacenter, IP: nodeIP(index) },
      calls: new NodeServiceCalls(host.rpc, host.timers, this, host.logger),
      failed: (allocID, err) =>
        host.logger.debug({ err, node: this.name, alloc: allocID }, "services not registered"),
    };
    const { csiNodePlugins, csiControllerPlugins } = host.shape;
    this.csi =
      csiNodePlugins.length + csiControllerPlugins.length > 0
        ? new NodeCSICalls(host.rpc, host.timers, this, host.logger, host.csiDetach ?? "ack")
        : undefined;
  }

  // RunnerHost: a node that runs a CSI node plugin claims its allocations' volumes.
  get volumes() {
    return this.host.shape.csiNodePlugins.length > 0 ? this.csi?.volumes : undefined;
  }

  get up(): boolean {
    return this.state === "up";
  }

  // RunnerHost
  get timers(): TimerQueue {
    return this.host.timers;
  }
  get driver(): DriverOptions {
    return this.host.driver;
  }
  get seed(): string {
    return this.host.seed;
  }

  changed(runner: AllocRunner): void {
    if (this.state !== "stopped") this.sync.changed(runner);
  }

  /** Registers (retrying until the server takes it) and starts the heartbeat and allocation loops. */
  async start(): Promise<void> {
    const epoch = ++this.epoch;
    for (;;) {
      try {
        await this.register();
        break;
      } catch (err) {
        if (epoch !== this.epoch) return;
        this.host.logger.debug({ err, node: this.name }, "register failed; retrying");
        await this.sleep(REGISTER_RETRY_MS / 15 + stagger(this.prng, REGISTER_RETRY_MS / 5));
        if (epoch !== this.epoch) return;
      }
    }
    this.state = "up";
    this.heartbeats.start(stagger(this.prng, this.host.initialHeartbeatStaggerMs));
    void this.watchAllocations(epoch);
    this.watchDetaches(epoch);
  }

  /** A partition: heartbeats, updates and polls stop; the allocations keep running and their updates wait. */
  silence(): void {
    if (this.state !== "up") return;
    this.state = "silent";
    this.epoch++;
    this.heartbeats.stop();
    this.watch?.abort();
    this.detachWatch?.abort();
  }

  /**
   * The partition ends: UpdateStatus, UpdateAlloc (every allocation's
   * current state) and Register, in an order drawn from the node's PRNG,
   * each answered before the next goes; a refusal is part of the scenario
   * (UpdateAlloc before the heartbeat is refused while disconnected). Then
   * the loops resume.
   */
  async reconnect(): Promise<void> {
    if (this.state !== "silent") return;
    this.state = "up";
    const epoch = ++this.epoch;
    const order = this.prng.shuffle([...RECONNECT_CALLS]);
    this.lastReconnectOrder = order;
    let heartbeated = false;
    // The sync loop holds its updates, so the drawn order is the order the server sees.
    this.sync.hold(true);
    try {
      for (const call of order) {
        try {
          if (call === "Node.Register") await this.register();
          else if (call === "Node.UpdateAlloc") await this.sync.fullSync();
          else {
            await this.heartbeats.beat();
            heartbeated = true;
          }
        } catch (err) {
          this.host.logger.debug({ err, node: this.name, call }, "reconnect call refused");
        }
        if (epoch !== this.epoch) return;
      }
    } finally {
      this.sync.hold(false);
    }
    if (!heartbeated) this.heartbeats.retry();
    void this.watchAllocations(epoch);
    this.watchDetaches(epoch);
  }

  /** Stops every loop and runner; with `deregister`, tells the server the node leaves. */
  async stop(options: { deregister?: boolean } = {}): Promise<void> {
    const wasUp = this.state === "up";
    this.state = "stopped";
    this.epoch++;
    this.heartbeats.stop();
    this.watch?.abort();
    this.detachWatch?.abort();
    for (const r of this.runners.values()) r.destroy();
    if (options.deregister && wasUp) {
      await this.host.rpc.call("Node.Deregister", { NodeID: this.id }, this.secret).catch(() => undefined);
    }
  }

  // ---- heartbeats (client.go registerAndHeartbeat) ----

  private async register(): Promise<void> {
    const reply = await this.host.rpc.call(
      "Node.Register",
      { Node: nodeBody(this, this.host.shape, rfc3339(this.host.timers.now())) },
      this.secret,
    );
    this.heartbeats.ttl(replyTtlMs(reply));
  }

  /** A heartbeat answered 404: the servers forgot the node (purged); it registers again, as Nomad's client does. */
  private forgotten(): void {
    if (this.state !== "up") return;
    const epoch = this.epoch;
    void this.register().then(
      () => {
        if (epoch === this.epoch)
          this.heartbeats.start(stagger(this.prng, this.host.initialHeartbeatStaggerMs));
      },
      () => {
        if (epoch === this.epoch) this.heartbeats.retry();
      },
    );
  }

  /** The CSI plugins' long poll of the server's detach calls. */
  private watchDetaches(epoch: number): void {
    if (!this.csi) return;
    const abort = new AbortController();
    this.detachWatch = abort;
    void this.csi.watch(
      () => epoch === this.epoch && this.state === "up",
      abort.signal,
      this.host.maxQueryTimeNs,
    );
  }

  // ---- allocations (client.go watchAllocations / runAllocs) ----

  private async watchAllocations(epoch: number): Promise<void> {
    // One for the loop, not one a poll: only silence() and stop() abort it, and both end the loop.
    const abort = new AbortController();
    this.watch = abort;
    while (epoch === this.epoch && this.state === "up") {
      let reply: ClientAllocsReply;
      try {
        reply = await this.host.rpc.call<ClientAllocsReply>(
          "Node.GetClientAllocs",
          {
            NodeID: this.id,
            SecretID: this.secret,
            MinQueryIndex: this.minQueryIndex,
            MaxQueryTime: this.host.maxQueryTimeNs,
            AllowStale: true,
          },
          this.secret,
          { blocking: true, signal: abort.signal },
        );
      } catch (err) {
        if (epoch !== this.epoch) return;
        this.host.logger.debug({ err, node: this.name }, "GetClientAllocs failed; retrying");
        await this.sleep(GET_ALLOCS_RETRY_MS / 5 + stagger(this.prng, GET_ALLOCS_RETRY_MS));
        continue;
      }
      if (epoch !== this.epoch) return;
      const allocs = reply.Allocs ?? {};
      const pull: string[] = [];
      let pullIndex = 0;
      for (const [id, modifyIndex] of Object.entries(allocs)) {
        const r = this.runners.get(id);
        if (!r || modifyIndex > r.allocModifyIndex) {
          pull.push(id);
          if (modifyIndex > pullIndex) pullIndex = modifyIndex;
        }
      }
      let pulled: Record<string, unknown>[] | undefined;
      if (pull.length > 0) {
        try {
          const got = await this.host.rpc.call<GetAllocsReply>(
            "Alloc.GetAllocs",
            {
              AllocIDs: pull,
              MinQueryIndex: pullIndex - 1,
              MaxQueryTime: GET_ALLOCS_WAIT_NS,
              AllowStale: true,
            },
            this.secret,
            { blocking: true, signal: abort.signal, parse: this.parseAllocs },
          );
          pulled = got.Allocs ?? [];
        } catch (err) {
          if (epoch !== this.epoch) return;
          this.host.logger.debug({ err, node: this.name }, "GetAllocs failed; retrying");
          await this.sleep(GET_ALLOCS_RETRY_MS / 5 + stagger(this.prng, GET_ALLOCS_RETRY_MS));
          continue;
        }
        if (epoch !== this.epoch) return;
        // Some were not there yet (a stale read): pull again on the next round, without moving the index.
        if (pulled.length < pull.length) continue;
      }
      this.runAllocs(allocs, pulled ?? []);
      if ((reply.Index ?? 0) > this.minQueryIndex) this.minQueryIndex = reply.Index ?? 0;
    }
  }

  /** Starts runners for new allocations, passes newer versions on, destroys what the server collected. */
  private runAllocs(current: Record<string, number>, pulled: readonly Record<string, unknown>[]): void {
    for (const [id, runner] of this.runners) {
      if (!(id in current)) {
        runner.destroy();
        this.runners.delete(id);
        this.sync.forget(id);
      }
    }
    for (const raw of pulled) {
      const spec = simAllocSpec(raw, 15_000);
      const existing = this.runners.get(spec.ID);
      if (existing) {
        existing.update(spec);
        continue;
      }
      const runner = new AllocRunner(spec, this);
      this.runners.set(spec.ID, runner);
      // Nomad's client creates a runner for a server-terminal allocation too; it has nothing to run.
      if (["complete", "failed", "lost"].includes(spec.ClientStatus)) {
        runner.destroy();
        continue;
      }
      // Stopped before this node ever pulled it: its tasks never start, and it is reported complete.
      if (spec.DesiredStatus !== "run") {
        runner.endUnstarted();
        continue;
      }
      runner.start();
    }
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => this.host.timers.after(ms, resolve));
  }
}
