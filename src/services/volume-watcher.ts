import type { Subscription } from "rxjs";
import { type CSIVolumeRow, claimAlloc, csiVolumeKey } from "../../projections/csi-volumes.ts";
import type { CSIDetachRequest } from "../../streams/csi-detach.ts";
import { withPastClaims } from "../csi/claim-volume.ts";
import { DEFAULT_DETACH_POLICY, DetachCalls, type DetachPolicy } from "../csi/detach-calls.ts";
import { DetachDeadlines } from "../csi/detach-deadlines.ts";
import { type CheckpointWrite, Unpublisher } from "../csi/unpublish.ts";
import { inSlices, SLICE_MS } from "../query/sliced-walk.ts";
import { walkByKey } from "../query/walk-by-key.ts";
import type { Draft } from "../store/writer.ts";
import type { Timer } from "../util/clock.ts";
import type { LeaderService, ServiceContext } from "./service.ts";

/** Nomad's defaultQuiescentTimeout: a volume's watcher outlives its last change by this. */
export const DEFAULT_QUIESCENT_MS = 5 * 60_000;

export interface VolumeWatcherOptions {
  readonly quiescentMs?: number;
  readonly detach?: Partial<DetachPolicy>;
  /** Server → client calls over a Nomad agent's RPC session, when it has one (see DetachCallDeps.nomadCall). */
  readonly nomadCall?: (request: CSIDetachRequest) => Promise<string> | undefined;
  /** How long one slice of its walks over volumes may hold the event loop (0: a turn after every volume). */
  readonly sliceMs?: number;
}

/** What the watcher has done since this server started: `/v1/metrics` shows them. */
export interface VolumeWatcherCounters {
  /** Passes over one volume (its past claims resolved and released): none for a volume that does not change. */
  passes: number;
  /** Claims it started to release (a claim whose release is already under way is not counted again). */
  claimsReleased: number;
}

interface Watch {
  /** The end of its quiescent window. */
  timer: Timer | undefined;
}

/**
 * Nomad's volumewatcher (nomad/volumewatcher), as a leader service fed by
 * the csi_volumes table's changes: a volume that changed and has claims to
 * free (past claims, including those of allocations that ended or were
 * collected, resolved on read) gets a lightweight watcher, which releases
 * them through the unpublish state machine (every checkpoint batched, at
 * most 100 claims a record) and stays for a quiescent window after the
 * volume's last change, then goes (seed 004: the window keeps the stop away
 * from the moment updates matter). At start it reaps every volume once, so
 * a release a previous leader left half done is finished (#11776). A volume
 * without a change costs nothing: no watcher, no pass, no timer. The reap
 * and every look at changed volumes run in slices that give the event loop
 * back (a reap of a million volumes, or a record that changes thousands,
 * would hold it for seconds).
 *
 * It also owns the leader's side of the server → client detach calls (the
 * calls and their deadlines), which the client RPC CSIVolume.Unpublish uses
 * too, through `unpublisher()`.
 */
export class VolumeWatcher implements LeaderService {
  readonly name = "volume-watcher";
  readonly counters: VolumeWatcherCounters = { passes: 0, claimsReleased: 0 };
  private ctx: ServiceContext | undefined;
  private subscription: Subscription | undefined;
  private calls: DetachCalls | undefined;
  private deadlines: DetachDeadlines | undefined;
  private unpub: Unpublisher | undefined;
  private readonly watches = new Map<string, Watch>();
  private queued = new Set<string>();
  /** The leadership whose queued volumes are being looked at now, if any. */
  private draining: ServiceContext | undefined;
  private readonly inFlight = new Set<Promise<unknown>>();

  constructor(private readonly options: VolumeWatcherOptions = {}) {}

  start(ctx: ServiceContext): void {
    this.ctx = ctx;
    const serverWrite = this.serverWrite(ctx);
    this.calls = new DetachCalls({
      change$: ctx.store.change$,
      clock: ctx.clock,
      write: serverWrite,
      policy: { ...DEFAULT_DETACH_POLICY, ...this.options.detach },
      nomadCall: this.options.nomadCall,
    });
    this.deadlines = new DetachDeadlines({
      change$: ctx.store.change$,
      detaches: ctx.tables.csiDetachRequests,
      clock: ctx.clock,
      write: serverWrite,
    });
    this.deadlines.start();
    this.unpub = new Unpublisher(ctx.tables, this.calls);
    this.subscription = ctx.store.change$.subscribe({
      next: (c) => {
        if (c.table !== "csi_volumes") return;
        if (!c.after) {
          this.forget(c.key);
          return;
        }
        this.queued.add(c.key);
      },
      error: () => undefined,
    });
    this.subscription.add(ctx.store.applied$.subscribe({ next: () => this.flush(), error: () => undefined }));
    // The reap at start: whatever a previous leader left to free.
    this.track(ctx, this.reap(ctx));
  }

  async stop(): Promise<void> {
    this.subscription?.unsubscribe();
    this.subscription = undefined;
    this.calls?.stop();
    this.deadlines?.stop();
    for (const w of this.watches.values()) if (w.timer) this.ctx?.clock.clearTimeout(w.timer);
    this.watches.clear();
    this.queued.clear();
    this.ctx = undefined;
    this.draining = undefined;
    this.unpub = undefined;
    await Promise.allSettled([...this.inFlight]);
  }

  /** This leader's unpublish workflow; undefined while it does not lead. */
  unpublisher(): Unpublisher | undefined {
    return this.unpub;
  }

  /** Volumes with a live watcher. */
  get watching(): number {
    return this.watches.size;
  }

  /** Unpublishes under way. */
  get releasing(): number {
    return this.unpub?.active ?? 0;
  }

  /** Queues every volume once, walking the table in slices; a walk a newer leadership outlives stops. */
  private async reap(ctx: ServiceContext): Promise<void> {
    await walkByKey(
      ctx.tables.csiVolumes,
      "",
      (v) => {
        if (this.ctx !== ctx) return false;
        this.queued.add(csiVolumeKey(v.Namespace, v.ID));
        return true;
      },
      this.sliceMs,
    );
    this.flush();
  }

  /** Looks at the queued volumes, unless a look is under way (it takes what is queued meanwhile too). */
  private flush(): void {
    const ctx = this.ctx;
    if (!ctx || this.draining === ctx || this.queued.size === 0) return;
    this.draining = ctx;
    this.track(
      ctx,
      this.drain(ctx).finally(() => {
        if (this.draining === ctx) this.draining = undefined;
      }),
    );
  }

  private async drain(ctx: ServiceContext): Promise<void> {
    while (this.ctx === ctx && this.queued.size > 0) {
      const keys = this.queued;
      this.queued = new Set();
      await inSlices(
        keys,
        (key) => {
          if (this.ctx === ctx) this.look(ctx, key);
        },
        this.sliceMs,
      );
    }
  }

  /** One volume that changed (or the reap's): a pass if it has claims to free or a live watcher. */
  private look(ctx: ServiceContext, key: string): void {
    const v = ctx.tables.csiVolumes.get(key);
    if (!v) {
      this.forget(key);
      return;
    }
    const resolved = withPastClaims(v, (id) => claimAlloc(ctx.tables.allocs.get(id)));
    // An idle volume (nothing to free, no watcher) costs this lookup only.
    if (!this.watches.has(key) && isEmpty(resolved.PastClaims)) return;
    this.pass(ctx, key, resolved);
  }

  private get sliceMs(): number {
    return this.options.sliceMs ?? SLICE_MS;
  }

  /** Work `stop` waits for; a failure is logged, never unhandled. */
  private track(ctx: ServiceContext, work: Promise<unknown>): void {
    const done = work.catch((err: Error) => ctx.logger.error({ err }, "volume watcher walk failed"));
    this.inFlight.add(done);
    void done.finally(() => this.inFlight.delete(done));
  }

  /** One pass over a volume with claims to free: release them, and (re)arm its quiescent window. */
  private pass(ctx: ServiceContext, key: string, volume: CSIVolumeRow): void {
    this.counters.passes++;
    let watch = this.watches.get(key);
    if (!watch) {
      watch = { timer: undefined };
      this.watches.set(key, watch);
    }
    if (watch.timer) ctx.clock.clearTimeout(watch.timer);
    watch.timer = ctx.clock.setTimeout(
      () => this.watches.delete(key),
      this.options.quiescentMs ?? DEFAULT_QUIESCENT_MS,
    );
    const past = Object.values(volume.PastClaims);
    if (past.length === 0 || !this.unpub) return;
    const done = this.unpub
      .unpublishMany(volume.Namespace, volume.ID, past, this.serverWrite(ctx), (started) => {
        this.counters.claimsReleased += started;
      })
      .catch((err: Error) =>
        ctx.logger.warn(
          { err, volume: volume.ID, namespace: volume.Namespace },
          "volume claim release failed",
        ),
      );
    this.inFlight.add(done);
    void done.finally(() => this.inFlight.delete(done));
  }

  private forget(key: string): void {
    const w = this.watches.get(key);
    if (w?.timer) this.ctx?.clock.clearTimeout(w.timer);
    this.watches.delete(key);
  }

  private serverWrite(ctx: ServiceContext): CheckpointWrite {
    return async (drafts: readonly Draft[]) => {
      const { index, outcomes } = await ctx.write(drafts);
      const refused = outcomes.find((o) => o.status === "rejected");
      if (refused?.status === "rejected") throw new Error(`${refused.code} ${refused.reason}`);
      return index;
    };
  }
}

function isEmpty(claims: Readonly<Record<string, unknown>>): boolean {
  for (const _ in claims) return false;
  return true;
}
