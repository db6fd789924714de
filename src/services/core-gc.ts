import { volumeClaimGcDrafts } from "../csi/volume-claim-gc.ts";
import { collectGarbage, DEFAULT_GC_THRESHOLDS, type GcThresholds, gcDrafts } from "../gc/collect-garbage.ts";
import type { Timer } from "../util/clock.ts";
import type { LeaderService, ServiceContext } from "./service.ts";

/** Nomad's eval GC interval. */
const GC_INTERVAL_MS = 5 * 60_000;

/**
 * The leader's periodic garbage collection (Nomad's core "job-gc" and
 * "eval-gc" jobs): finished jobs, terminal evaluations and allocations older
 * than Nomad's thresholds. Their history stays.
 */
export class CoreGc implements LeaderService {
  readonly name = "core-gc";
  private timer: Timer | undefined;
  private ctx: ServiceContext | undefined;
  private running: Promise<void> = Promise.resolve();

  constructor(private readonly thresholds: GcThresholds = DEFAULT_GC_THRESHOLDS) {}

  start(ctx: ServiceContext): void {
    this.ctx = ctx;
    this.schedule();
  }

  async stop(): Promise<void> {
    if (this.timer && this.ctx) this.ctx.clock.clearTimeout(this.timer);
    this.timer = undefined;
    this.ctx = undefined;
    await this.running;
  }

  private schedule(): void {
    const ctx = this.ctx;
    if (!ctx) return;
    this.timer = ctx.clock.setTimeout(() => {
      this.running = this.collect(ctx).finally(() => this.schedule());
    }, GC_INTERVAL_MS);
  }

  private async collect(ctx: ServiceContext): Promise<void> {
    await this.volumeClaims(ctx);
    try {
      const events = await collectGarbage(ctx.tables, {
        nowMs: ctx.clock.now(),
        thresholds: this.thresholds,
      });
      if (events.length === 0) return;
      // No cause on these records: what makes an object collectable is its
      // age past a threshold, read on the clock, not a record it follows
      // from. The records name what they remove, and history keeps the
      // object's own trail up to its end.
      await ctx.write(gcDrafts(events));
      ctx.logger.info({ events: events.length }, "garbage collected");
    } catch (err) {
      ctx.logger.warn({ err }, "garbage collection failed; retrying at the next interval");
    }
  }

  /** Nomad's csi-volume-claim-gc core job (src/csi/volume-claim-gc.ts): wakes the watcher of every volume with claims to free. */
  private async volumeClaims(ctx: ServiceContext): Promise<void> {
    const drafts = volumeClaimGcDrafts(ctx.tables);
    if (drafts.length === 0) return;
    try {
      await ctx.write(drafts);
      ctx.logger.info({ volumes: drafts.length }, "volume claim GC woke the volume watcher");
    } catch (err) {
      ctx.logger.warn({ err }, "volume claim GC failed; retrying at the next interval");
    }
  }
}
