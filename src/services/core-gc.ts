import { collectGarbage, DEFAULT_GC_THRESHOLDS } from "../gc/collect-garbage.ts";
import type { Timer } from "../util/clock.ts";
import type { LeaderService, ServiceContext } from "./service.ts";

/** Nomad's eval GC interval. */
const GC_INTERVAL_MS = 5 * 60_000;

/**
 * The leader's periodic garbage collection of terminal evaluations and
 * allocations (Nomad's core "eval-gc" job). Their history stays.
 */
export class CoreGc implements LeaderService {
  readonly name = "core-gc";
  private timer: Timer | undefined;
  private ctx: ServiceContext | undefined;
  private running: Promise<void> = Promise.resolve();

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
    const events = collectGarbage(ctx.tables, ctx.clock.now(), DEFAULT_GC_THRESHOLDS, "periodic");
    if (events.length === 0) return;
    try {
      await ctx.write(events.map((data) => ({ type: "GarbageCollected", v: 1, data })));
      ctx.logger.info({ events: events.length }, "garbage collected");
    } catch (err) {
      ctx.logger.warn({ err }, "garbage collection failed; retrying at the next interval");
    }
  }
}
