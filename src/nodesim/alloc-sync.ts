import type { Logger } from "pino";
import type { AllocRunner } from "./alloc-runner.ts";
import type { Counters } from "./counters.ts";
import { type Prng, stagger } from "./prng.ts";
import type { RpcCaller } from "./rpc-client.ts";
import type { SyncParticipant, SyncWheel } from "./sync-wheel.ts";
import type { TimerQueue } from "./timer-queue.ts";
import { AllocUpdateBuffer, Priority } from "./update-buffer.ts";

/** Nomad's allocSyncRetryIntv: after a refused Node.UpdateAlloc, the next try comes this much later (plus stagger). */
const ALLOC_SYNC_RETRY_MS = 5_000;

export interface AllocSyncHost {
  readonly rpc: RpcCaller;
  readonly timers: TimerQueue;
  readonly wheel: SyncWheel;
  readonly counters: Counters;
  readonly logger: Logger;
  readonly prioritized: boolean;
}

/** The node an AllocSync reports for. */
export interface SyncingNode {
  readonly id: string;
  readonly secret: string;
  readonly name: string;
  readonly runners: ReadonlyMap<string, AllocRunner>;
  /** Whether the node may talk to the servers now (not partitioned, not stopped). */
  readonly up: boolean;
}

/**
 * A node's allocation sync loop (Nomad's client.go allocSync with PR
 * 17354): runners' changes go into the update buffer with their priority,
 * and on the node's tick of the shared wheel the buffer's batch, if any, goes
 * out as one Node.UpdateAlloc. One call at a time; a refused batch goes back
 * into the buffer and the loop waits the retry interval.
 */
export class AllocSync implements SyncParticipant {
  private readonly buffer = new AllocUpdateBuffer<AllocRunner>();
  private readonly slot: number;
  /** The slot's tick count at the last successful send: ticks since then decide "every 5th". */
  private tickBase = 0;
  private syncing = false;
  private held = false;
  private retryAt = 0;

  constructor(
    private readonly host: AllocSyncHost,
    private readonly node: SyncingNode,
    private readonly prng: Prng,
  ) {
    this.slot = host.wheel.join();
  }

  /** A runner's state changed: buffer its update with Nomad's GetUpdatePriority (against what the server acknowledged). */
  changed(runner: AllocRunner): void {
    const last = runner.ackedStatus;
    let priority: Priority = Priority.Typical;
    if (last === undefined ? runner.clientStatus === "failed" : last !== runner.clientStatus)
      priority = Priority.Urgent;
    this.buffer.add(runner, priority);
    this.wake();
  }

  /** While held (a reconnect's ordered calls go out), ticks send nothing. */
  hold(held: boolean): void {
    this.held = held;
    if (!held) this.wake();
  }

  forget(allocID: string): void {
    this.buffer.drop(allocID);
  }

  wake(): void {
    if (this.buffer.size > 0) this.host.wheel.wake(this.slot, this);
  }

  syncTick(tick: number): boolean {
    if (!this.node.up) return false;
    if (this.syncing || this.held || this.host.timers.now() < this.retryAt) return true;
    const batch = this.buffer.nextBatch(tick - this.tickBase, this.host.prioritized);
    if (!batch) return this.buffer.size > 0;
    void this.send(batch.updates, batch.priority).then(
      () => this.wake(),
      (err: unknown) => {
        this.host.logger.debug({ err, node: this.node.name }, "alloc update refused; retrying later");
        this.retryAt = this.host.timers.now() + ALLOC_SYNC_RETRY_MS + stagger(this.prng, ALLOC_SYNC_RETRY_MS);
        this.wake();
      },
    );
    return false;
  }

  /** Every live allocation's current state in one Node.UpdateAlloc (a reconnecting client's report); rejects if refused. */
  fullSync(): Promise<void> {
    const live = [...this.node.runners.values()].filter((r) => !r.destroyed);
    for (const r of live) this.buffer.drop(r.ID);
    return this.send(live, Priority.Urgent);
  }

  private async send(updates: readonly AllocRunner[], priority: Priority): Promise<void> {
    const live = updates.filter((r) => this.node.runners.get(r.ID) === r);
    if (live.length === 0) return;
    // The state is read now: whatever changed since it was buffered goes too (latest wins).
    const sent = live.map((r) => ({ runner: r, status: r.clientStatus, update: r.toUpdate(this.node.id) }));
    this.syncing = true;
    try {
      await this.host.rpc.call("Node.UpdateAlloc", { Alloc: sent.map((s) => s.update) }, this.node.secret);
    } catch (err) {
      this.buffer.restore({ updates: live, priority });
      throw err;
    } finally {
      this.syncing = false;
    }
    this.host.counters.updateAllocCalls++;
    this.host.counters.allocUpdatesSent += sent.length;
    for (const s of sent) s.runner.ackedStatus = s.status;
    this.tickBase = this.host.wheel.tickOf(this.slot);
  }
}
