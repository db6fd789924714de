import type { QueuedTimer, TimerQueue } from "./timer-queue.ts";
import { SYNC_INTERVAL_MS } from "./update-buffer.ts";

/** A node in the sync wheel: called on its tick; answers whether it wants the next one too. */
export interface SyncParticipant {
  syncTick(tick: number): boolean;
}

/**
 * The allocation sync ticker of every simulated node on one timer. Nodes are
 * spread over `slots` phases of the interval (node k ticks at
 * k mod slots × interval/slots into each interval), so their sends do not all
 * leave at the same instant; each slot counts its ticks, and only nodes that
 * have something waiting are visited. A node's tick count is the slot's
 * count, so "every 5th tick" keeps its meaning for a node that sat idle.
 */
export class SyncWheel {
  private readonly active: Set<SyncParticipant>[];
  private readonly ticks: number[];
  private next = 0;
  private slot = 0;
  private joined = 0;
  private timer: QueuedTimer | undefined;

  constructor(
    private readonly timers: TimerQueue,
    private readonly intervalMs = SYNC_INTERVAL_MS,
    readonly slots = 10,
  ) {
    this.active = Array.from({ length: slots }, () => new Set());
    this.ticks = Array.from({ length: slots }, () => 0);
  }

  /** The slot of the next node to join, round-robin. */
  join(): number {
    return this.joined++ % this.slots;
  }

  /** Ticks counted so far by `slot`. */
  tickOf(slot: number): number {
    return this.ticks[slot]!;
  }

  /** Visits `p` on its slot's ticks until it says it is done. */
  wake(slot: number, p: SyncParticipant): void {
    this.active[slot]!.add(p);
  }

  start(): void {
    if (this.timer) return;
    this.next = this.timers.now() + this.intervalMs / this.slots;
    this.arm();
  }

  stop(): void {
    this.timers.cancel(this.timer);
    this.timer = undefined;
  }

  private arm(): void {
    this.timer = this.timers.at(this.next, () => {
      const slot = this.slot;
      this.slot = (slot + 1) % this.slots;
      this.next += this.intervalMs / this.slots;
      // After a stall (a long GC, a busy loop) skip the missed ticks instead of bursting through them.
      const now = this.timers.now();
      if (this.next < now) this.next = now + this.intervalMs / this.slots;
      const tick = ++this.ticks[slot]!;
      const set = this.active[slot]!;
      for (const p of set) if (!p.syncTick(tick)) set.delete(p);
      this.arm();
    });
  }
}
