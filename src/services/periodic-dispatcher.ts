import { randomUUID } from "node:crypto";
import { filter, type Subscription } from "rxjs";
import { jobKey } from "../../projections/evals.ts";
import { isPeriodicActive } from "../../projections/job-children.ts";
import type { JobRow } from "../../projections/jobs.ts";
import { PERIODIC_LAUNCH_SUFFIX } from "../../streams/periodic.ts";
import { nextLaunchMs, periodicLaunch } from "../jobs/periodic-launch.ts";
import type { Timer } from "../util/clock.ts";
import type { LeaderService, ServiceContext } from "./service.ts";

/** A periodic job the dispatcher follows: its spec as last seen and the timer of its next launch. */
interface Tracked {
  readonly spec: string;
  timer: Timer | undefined;
  /** Unix ms of the launch the timer is for. */
  next: number;
}

/**
 * Nomad's PeriodicDispatch on the leader: one timer per active periodic job
 * (enabled, not stopped, not parameterized), set on the server's clock for
 * the spec's next time in the job's zone. At each tick it appends one
 * `PeriodicJobLaunched` record: the child job and its evaluation. It follows
 * the jobs table (a new spec resets the timer, a stop or purge removes it).
 *
 * On leadership it resumes as Nomad's restorePeriodicDispatcher: a job whose
 * next launch after its recorded last one (or its registration) is already
 * past launches once, now, unless prohibit_overlap holds it back; later
 * ticks follow the schedule from now. The projection refuses a launch that
 * is not after the last recorded one, so a restarted or second leader
 * cannot launch a tick twice. Launches are written one after another, so
 * prohibit_overlap sees the child of the previous one.
 */
export class PeriodicDispatcher implements LeaderService {
  readonly name = "periodic-dispatcher";
  private ctx: ServiceContext | undefined;
  private subscription: Subscription | undefined;
  private readonly tracked = new Map<string, Tracked>();
  private running: Promise<void> = Promise.resolve();

  start(ctx: ServiceContext): void {
    this.ctx = ctx;
    this.subscription = ctx.store.change$.pipe(filter((c) => c.table === "jobs")).subscribe({
      next: (c) => this.jobChanged(c.key, c.after as JobRow | undefined),
      error: () => undefined,
    });
    this.restore(ctx);
  }

  async stop(): Promise<void> {
    this.subscription?.unsubscribe();
    this.subscription = undefined;
    const ctx = this.ctx;
    for (const t of this.tracked.values()) if (t.timer && ctx) ctx.clock.clearTimeout(t.timer);
    this.tracked.clear();
    this.ctx = undefined;
    await this.running;
  }

  /** Resolves once every launch decided so far is written (tests). */
  async settled(): Promise<void> {
    for (let seen: Promise<void> | undefined; seen !== this.running; ) {
      seen = this.running;
      await seen;
    }
  }

  /** When the tracked job next launches (unix ms), for tests and the logs. */
  nextLaunch(namespace: string, jobID: string): number | undefined {
    return this.tracked.get(jobKey(namespace, jobID))?.next;
  }

  private restore(ctx: ServiceContext): void {
    const now = ctx.clock.now();
    for (const job of ctx.tables.jobs.all()) {
      if (!isPeriodicActive(job)) continue;
      const key = jobKey(job.Namespace, job.ID);
      this.track(ctx, key, job);
      const launch = ctx.tables.periodicLaunches.get(key);
      if (!launch) {
        ctx.logger.error(
          { job: job.ID, namespace: job.Namespace },
          "no recorded launch time for periodic job",
        );
        continue;
      }
      const missed = nextLaunchMs(job.Periodic!, launch.Launch);
      if (missed === null || missed >= now) continue;
      ctx.logger.info(
        { job: job.ID, namespace: job.Namespace, missed: new Date(missed).toISOString() },
        "periodic job missed a launch while no leader ran; launching it now",
      );
      this.enqueue(ctx, key, now, false);
    }
  }

  private jobChanged(key: string, job: JobRow | undefined) {
    const ctx = this.ctx;
    if (!ctx) return;
    if (!job || !isPeriodicActive(job)) return this.untrack(ctx, key);
    const current = this.tracked.get(key);
    if (current && current.spec === JSON.stringify(job.Periodic)) return;
    this.track(ctx, key, job);
  }

  /** (Re)sets the job's timer for its next launch from now, as Nomad's Add. */
  private track(ctx: ServiceContext, key: string, job: JobRow): void {
    this.untrack(ctx, key);
    const entry: Tracked = { spec: JSON.stringify(job.Periodic), timer: undefined, next: 0 };
    this.tracked.set(key, entry);
    this.schedule(ctx, key, entry, nextLaunchMs(job.Periodic!, ctx.clock.now()));
  }

  private untrack(ctx: ServiceContext, key: string): void {
    const entry = this.tracked.get(key);
    if (!entry) return;
    if (entry.timer) ctx.clock.clearTimeout(entry.timer);
    this.tracked.delete(key);
  }

  private schedule(ctx: ServiceContext, key: string, entry: Tracked, at: number | null): void {
    entry.timer = undefined;
    if (at === null) return;
    entry.next = at;
    entry.timer = ctx.clock.setTimeout(
      () => this.tick(ctx, key, entry, at),
      Math.max(0, at - ctx.clock.now()),
    );
  }

  /** Nomad's dispatch: the next tick is set first, then this one launches (or is skipped for overlap). */
  private tick(ctx: ServiceContext, key: string, entry: Tracked, at: number) {
    if (this.ctx !== ctx || this.tracked.get(key) !== entry) return;
    const job = ctx.tables.jobs.get(key);
    if (!job || !isPeriodicActive(job)) return this.untrack(ctx, key);
    this.schedule(ctx, key, entry, nextLaunchMs(job.Periodic!, at));
    this.enqueue(ctx, key, at, false);
  }

  /** Launches one after another: each sees the tables the previous one left. */
  enqueue(ctx: ServiceContext, key: string, launchMs: number, forced: boolean): void {
    this.running = this.running.then(() => this.launch(ctx, key, launchMs, forced));
  }

  private async launch(ctx: ServiceContext, key: string, launchMs: number, forced: boolean): Promise<void> {
    if (this.ctx !== ctx) return;
    const job = ctx.tables.jobs.get(key);
    if (!job || !isPeriodicActive(job)) return;
    if (job.Periodic!.ProhibitOverlap === true && this.hasLiveChild(ctx, job)) {
      ctx.logger.debug({ job: job.ID, namespace: job.Namespace }, "skipping launch: job prohibits overlap");
      return;
    }
    const data = periodicLaunch(job, launchMs, ctx.clock.now(), randomUUID(), forced);
    try {
      const { outcomes } = await ctx.write([{ type: "PeriodicJobLaunched", v: 1, data }]);
      const refused = outcomes.find((o) => o.status === "rejected");
      if (refused && refused.status === "rejected") {
        // Another leader launched this tick, or the job changed since: nothing was written.
        ctx.logger.debug(
          { job: job.ID, child: data.ChildID, reason: refused.reason },
          "periodic launch refused",
        );
        return;
      }
      ctx.logger.debug({ job: job.ID, child: data.ChildID }, "periodic job launched");
    } catch (err) {
      ctx.logger.warn({ err, job: job.ID, child: data.ChildID }, "periodic launch failed");
    }
  }

  /** Nomad's RunningChildren: a periodic child that is not dead yet. */
  private hasLiveChild(ctx: ServiceContext, job: JobRow): boolean {
    const prefix = `${jobKey(job.Namespace, job.ID)}${PERIODIC_LAUNCH_SUFFIX}`;
    for (const child of ctx.tables.jobs.withPrefix(prefix)) {
      if (child.ParentID === job.ID && child.Status !== "dead") return true;
    }
    return false;
  }
}
