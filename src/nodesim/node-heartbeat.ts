import { type Prng, stagger } from "./prng.ts";
import { type RpcCaller, RpcError } from "./rpc-client.ts";
import type { QueuedTimer, TimerQueue } from "./timer-queue.ts";

/** Nomad's client retry interval for registrations (client.go), in milliseconds. */
export const REGISTER_RETRY_MS = 15_000;

interface HeartbeatReply {
  HeartbeatTTL?: number;
}

/** The TTL a Node.Register or Node.UpdateStatus answer carries, in milliseconds (0 when none). */
export function replyTtlMs(reply: unknown): number {
  return ((reply as HeartbeatReply | undefined)?.HeartbeatTTL ?? 0) / 1e6;
}

/**
 * One node's heartbeat loop, as the node's logic drives it: in this thread
 * (NodeHeartbeat) or in the simulator's heartbeat thread (heartbeat-thread.ts).
 */
export interface HeartbeatHandle {
  /** The TTL the server gave in a Node.Register answer. */
  ttl(ms: number): void;
  /** Heartbeats after `ms`, then at the TTL each answer gives. */
  start(ms: number): void;
  /** Heartbeats after Nomad's retry interval (within what is left of the TTL), then at the TTL. */
  retry(): void;
  /** Stops the loop (a partition, the node stopping); an answer still on its way changes nothing. */
  stop(): void;
  /** Heartbeats now and, once answered, at the TTL; rejects with the call's RpcError. */
  beat(): Promise<void>;
}

/** Makes a node's heartbeat loop; `forgotten` runs when the server answers 404 (it purged the node). */
export type HeartbeatFactory = (
  node: { readonly index: number; readonly id: string; readonly secret: string },
  prngSeed: string,
  forgotten: () => void,
) => HeartbeatHandle;

/**
 * client.go's registerAndHeartbeat for one node: Node.UpdateStatus at the
 * TTL the last answer gave; after a failure, again within what is left of
 * the TTL (getHeartbeatRetryIntv); a 404 hands the node back to its logic,
 * which registers again and restarts the loop. Its retry jitter comes from a
 * stream of its own, so the loop draws the same in whichever thread it runs.
 */
export class NodeHeartbeat implements HeartbeatHandle {
  private ttlMs = 0;
  private lastOk = 0;
  private timer: QueuedTimer | undefined;
  /** Bumped by stop(): a timer or answer of an older epoch does nothing. */
  private epoch = 0;
  private running = false;

  constructor(
    private readonly rpc: RpcCaller,
    private readonly timers: TimerQueue,
    private readonly node: { readonly id: string; readonly secret: string },
    private readonly prng: Prng,
    private readonly forgotten: () => void,
  ) {}

  ttl(ms: number): void {
    if (ms > 0) this.ttlMs = ms;
  }

  start(ms: number): void {
    this.running = true;
    this.schedule(ms);
  }

  retry(): void {
    this.running = true;
    this.schedule(this.retryMs());
  }

  stop(): void {
    this.running = false;
    this.epoch++;
    this.timers.cancel(this.timer);
  }

  async beat(): Promise<void> {
    this.running = true;
    const epoch = this.epoch;
    const reply = await this.rpc.call<HeartbeatReply>(
      "Node.UpdateStatus",
      { NodeID: this.node.id, Status: "ready" },
      this.node.secret,
    );
    this.lastOk = this.timers.now();
    this.ttl(replyTtlMs(reply));
    if (epoch === this.epoch && this.running) this.schedule(this.ttlMs > 0 ? this.ttlMs : 1_000);
  }

  private schedule(ms: number): void {
    this.timers.cancel(this.timer);
    const epoch = this.epoch;
    this.timer = this.timers.after(ms, () => {
      if (epoch !== this.epoch || !this.running) return;
      void this.beat().then(
        () => undefined,
        (err: unknown) => this.failed(err, epoch),
      );
    });
  }

  private failed(err: unknown, epoch: number): void {
    if (epoch !== this.epoch || !this.running) return;
    if (err instanceof RpcError && err.status === 404) {
      // The node's logic registers again and restarts the loop, as Nomad's client does.
      this.running = false;
      this.forgotten();
      return;
    }
    this.schedule(this.retryMs());
  }

  /** Nomad's getHeartbeatRetryIntv: within what is left of the TTL, at least 1 s, at most ~30 s. */
  private retryMs(): number {
    if (this.lastOk === 0) return REGISTER_RETRY_MS + stagger(this.prng, REGISTER_RETRY_MS);
    let left = this.lastOk + this.ttlMs - this.timers.now();
    if (left < -30_000) left = -left;
    else if (left < 0) return 1_000 + stagger(this.prng, 1_000);
    const s = stagger(this.prng, left);
    if (s < 1_000) return 1_000 + stagger(this.prng, 1_000);
    if (s > 30_000) return 25_000 + stagger(this.prng, 5_000);
    return s;
  }
}
