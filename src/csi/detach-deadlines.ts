import type { Observable, Subscription } from "rxjs";
import type { CSIDetachRow, CSIDetachTable } from "../../projections/csi-detach-requests.ts";
import type { CSIDetachRequest } from "../../streams/csi-detach.ts";
import type { Change } from "../store/projection.ts";
import type { Draft } from "../store/writer.ts";
import type { Clock, Timer } from "../util/clock.ts";

export interface DetachDeadlineDeps {
  readonly change$: Observable<Change>;
  readonly detaches: CSIDetachTable;
  readonly clock: Clock;
  /** Appends as the server; rejects when apply refused the record (the client answered first). */
  write(drafts: readonly Draft[]): Promise<unknown>;
}

/**
 * The leader's timers on pending detach calls: at a request's deadline (set
 * by whoever asked, carried in the record) it appends CSIDetachTimedOut,
 * which is the answer the asking unpublish waits for. It arms a timer for
 * every pending request when it starts, so calls a previous leader made are
 * timed out too and no client is left asked forever. One timer per pending
 * call; none once answered.
 */
export class DetachDeadlines {
  private readonly timers = new Map<string, Timer>();
  private subscription: Subscription | undefined;

  constructor(private readonly deps: DetachDeadlineDeps) {}

  start(): void {
    this.subscription = this.deps.change$.subscribe({
      next: (c) => {
        if (c.table !== "csi_detach_requests") return;
        this.sync(c.before as CSIDetachRow | undefined, c.after as CSIDetachRow | undefined);
      },
      error: () => undefined,
    });
    for (const row of this.deps.detaches.all()) this.sync(undefined, row);
  }

  stop(): void {
    this.subscription?.unsubscribe();
    for (const t of this.timers.values()) this.deps.clock.clearTimeout(t);
    this.timers.clear();
  }

  /** Pending calls armed, for tests: zero once every call is answered. */
  get armed(): number {
    return this.timers.size;
  }

  private sync(before: CSIDetachRow | undefined, after: CSIDetachRow | undefined): void {
    for (const id of Object.keys(before?.Pending ?? {})) {
      if (after?.Pending[id]) continue;
      const t = this.timers.get(id);
      if (t) this.deps.clock.clearTimeout(t);
      this.timers.delete(id);
    }
    for (const request of Object.values(after?.Pending ?? {})) {
      if (!this.timers.has(request.RequestID)) this.arm(request);
    }
  }

  private arm(request: CSIDetachRequest): void {
    const wait = Math.max(0, request.Deadline - this.deps.clock.now());
    const timer = this.deps.clock.setTimeout(() => {
      this.timers.delete(request.RequestID);
      void this.deps
        .write([
          {
            type: "CSIDetachTimedOut",
            v: 1,
            data: { Namespace: request.Namespace, VolumeID: request.VolumeID, RequestID: request.RequestID },
          },
        ])
        // The client's answer was appended first: it stands.
        .catch(() => undefined);
    }, wait);
    this.timers.set(request.RequestID, timer);
  }
}
