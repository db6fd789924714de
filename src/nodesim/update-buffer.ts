/**
 * How much an allocation update matters to the servers (Nomad's
 * AllocUpdatePriority): urgent when the client status changed since the
 * server last acknowledged it, since that is what moves deployments and
 * rescheduling along; typical for anything else a client reports (task
 * events, deployment health, network status).
 */
export const Priority = { None: 0, Typical: 1, Urgent: 2 } as const;
export type Priority = (typeof Priority)[keyof typeof Priority];

/** Nomad's allocSyncIntv: the client's sync tick. */
export const SYNC_INTERVAL_MS = 200;
/** Without an urgent update waiting, a prioritized client sends on every 5th tick (Nomad PR 17354). */
export const TYPICAL_EVERY_TICKS = 5;

/**
 * The per-node buffer between allocation runners and the sync loop (Nomad's
 * pendingClientUpdates, PR 17354): runners drop their latest state in, the
 * latest update of an allocation replaces an earlier one that was not sent
 * yet, and the sync tick takes everything at once. Taking is decoupled from
 * adding, so a slow Node.UpdateAlloc never holds a runner back.
 */
export class AllocUpdateBuffer<U extends { readonly ID: string }> {
  private updates = new Map<string, U>();
  private priority: Priority = Priority.None;

  get size(): number {
    return this.updates.size;
  }

  /** The highest priority among the updates waiting. */
  get waitingPriority(): Priority {
    return this.priority;
  }

  add(update: U, priority: Priority): void {
    this.updates.set(update.ID, update);
    if (priority > this.priority) this.priority = priority;
  }

  /**
   * What the sync tick sends, given the ticks since the last successful send:
   * nothing when nothing waits; with `prioritized`, nothing on a tick that is
   * not a 5th one unless an urgent update waits; otherwise every update
   * waiting, and the buffer starts empty again.
   */
  nextBatch(ticks: number, prioritized: boolean): { updates: U[]; priority: Priority } | undefined {
    if (this.updates.size === 0) return undefined;
    if (prioritized && ticks % TYPICAL_EVERY_TICKS !== 0 && this.priority < Priority.Urgent) return undefined;
    const batch = { updates: [...this.updates.values()], priority: this.priority };
    this.updates = new Map();
    this.priority = Priority.None;
    return batch;
  }

  /** Puts back a batch the server did not take, except where a newer update came in meanwhile. */
  restore(batch: { updates: readonly U[]; priority: Priority }): void {
    for (const u of batch.updates) if (!this.updates.has(u.ID)) this.updates.set(u.ID, u);
    if (batch.priority > this.priority) this.priority = batch.priority;
  }

  /** Forgets an allocation (its runner was destroyed). */
  drop(id: string): void {
    this.updates.delete(id);
  }
}
