import type { Logger } from "pino";
import { filter, type Subscription } from "rxjs";
import { currentLeadership } from "../../projections/leadership.ts";
import type { Actor } from "../../streams/event-schema.ts";
import { claimLeadership } from "../cluster/leadership-claim.ts";
import type { Leadership } from "../leadership.ts";
import { type Draft, type Written, writeEvents } from "../store/writer.ts";
import type { LeaderService, ServiceContext } from "./service.ts";

/** What the runner hands the services, minus what it decides itself (failover, the epoch-stamped write). */
export interface RunnerContext extends Omit<ServiceContext, "failover" | "write"> {
  /** Who the services write as; the runner adds the leadership epoch to it. */
  readonly actor: Actor;
}

export interface RunnerOptions {
  /**
   * After losing a claim, or being deposed by a later epoch, while this
   * server's election still says it leads: wait this long before claiming
   * again. Two servers that both think they lead (a deposed one that has not
   * noticed yet) then take turns slowly instead of racing; the election
   * settles which one it is within its session timeout.
   */
  readonly reclaimAfterMs?: number;
  /**
   * Whether this server may resume the epoch its own previous run
   * established instead of claiming a new one: only where no other server
   * can write to the log (file, memory), so a restart adds nothing to it.
   */
  readonly resumeOwnEpoch?: boolean;
}

/**
 * Runs the leader-only services while this server leads. When the election
 * says it leads, it first appends its claim to the next leadership epoch
 * and waits until the log has applied it; only then do the services start,
 * with a write function that stamps every event with that epoch, so the
 * store refuses them once another server has established a later one. It
 * stops them (in reverse order) when the election says it no longer leads
 * or when the log shows a later epoch.
 */
export class ServiceRunner {
  private readonly subscriptions: Subscription[] = [];
  private transition: Promise<void> = Promise.resolve();
  private running = false;
  private wanted = false;
  private epoch = 0;
  private retry: NodeJS.Timeout | undefined;
  private closed = false;

  constructor(
    private readonly services: readonly LeaderService[],
    private readonly context: RunnerContext,
    private readonly logger: Logger,
    private readonly options: RunnerOptions = {},
  ) {}

  /** The epoch this server's services run under; 0 while they do not run. */
  get heldEpoch(): number {
    return this.epoch;
  }

  /**
   * Follows `leadership`; `address` is the one this server advertises
   * (written into its claims). Resolves once the first transition is done:
   * if this server leads now, its services run.
   */
  attach(leadership: Leadership, address: string): Promise<void> {
    this.subscriptions.push(
      leadership.leader$.subscribe((leader) => {
        this.wanted = leader;
        this.enqueue(() => (leader ? this.lead(address) : this.stopAll("no longer leader")));
      }),
      this.context.store.applied$.pipe(filter((batch) => batch.tables.has("leadership"))).subscribe({
        next: () => this.checkDeposed(address),
        // The store has failed and logged why; nothing will be applied again.
        error: () => undefined,
      }),
    );
    return this.transition;
  }

  async close(): Promise<void> {
    this.closed = true;
    this.wanted = false;
    clearTimeout(this.retry);
    for (const s of this.subscriptions.splice(0)) s.unsubscribe();
    // At once, not after a transition in flight: that may be a claim whose
    // append waits on a log that went away, and the services must not keep
    // deciding meanwhile.
    const stopped = this.stopAll("shutting down");
    await this.transition;
    await stopped;
  }

  private enqueue(step: () => Promise<void>): void {
    this.transition = this.transition
      .then(step)
      .catch((err: unknown) => this.logger.error({ err }, "leadership transition failed"));
  }

  private async lead(address: string): Promise<void> {
    if (!this.wanted || this.running || this.closed) return;
    const { store, tables, clock, config, actor } = this.context;
    const previous = currentLeadership(tables.leadership);
    if (this.options.resumeOwnEpoch && previous?.ServerName === config.serverName) {
      this.epoch = previous.Epoch;
      this.startAll(previous.Epoch, true);
      return;
    }
    let claim: Awaited<ReturnType<typeof claimLeadership>>;
    try {
      claim = await claimLeadership({
        store,
        leadership: tables.leadership,
        now: clock.now(),
        actor,
        serverName: config.serverName,
        address,
      });
    } catch (err) {
      this.logger.error({ err }, "cannot append the leadership claim");
      this.reclaimLater(address);
      return;
    }
    if (claim.status === "lost") {
      this.logger.warn({ index: claim.index, reason: claim.reason }, "leadership claim lost");
      this.reclaimLater(address);
      return;
    }
    const latest = currentLeadership(tables.leadership)?.Epoch ?? 0;
    if (!this.wanted || this.closed || latest !== claim.epoch) {
      // Lost the election, or superseded, while the claim was in flight.
      if (this.wanted && !this.closed) this.reclaimLater(address);
      return;
    }
    this.epoch = claim.epoch;
    // Epoch 1 is the first leader this log ever had; any later one takes
    // over from a leader that was (another server, or this one before a
    // restart), whose clients need the failover heartbeat TTL to find it.
    this.startAll(claim.epoch, claim.epoch > 1);
  }

  private startAll(epoch: number, failover: boolean): void {
    this.running = true;
    const { actor: base, ...shared } = this.context;
    const actor: Actor = { ...base, epoch };
    const write = (drafts: readonly Draft[]): Promise<Written> =>
      writeEvents(shared.store, shared.clock.now(), actor, drafts);
    this.logger.info({ epoch, failover }, "leadership established");
    for (const s of this.services) {
      s.start({ ...shared, failover, write });
      this.logger.info({ service: s.name, failover, epoch }, "service started");
    }
  }

  private async stopAll(why: string): Promise<void> {
    this.epoch = 0;
    if (!this.running) return;
    this.running = false;
    // Every service stops deciding (timers, subscriptions) before any of
    // them is waited for: one finishing a long write must not leave the
    // heartbeat timers running behind it.
    const stopping = [...this.services].reverse().map(async (s) => {
      await s.stop();
      this.logger.info({ service: s.name, why }, "service stopped");
    });
    await Promise.all(stopping);
  }

  private checkDeposed(address: string): void {
    if (this.epoch === 0) return;
    const latest = currentLeadership(this.context.tables.leadership);
    if (!latest || latest.Epoch <= this.epoch) return;
    this.logger.warn(
      { epoch: this.epoch, by: latest.ServerName, newEpoch: latest.Epoch },
      "deposed by a later leadership epoch",
    );
    this.epoch = 0;
    this.enqueue(() => this.stopAll(`deposed by epoch ${latest.Epoch}`));
    if (this.wanted) this.reclaimLater(address);
  }

  private reclaimLater(address: string): void {
    clearTimeout(this.retry);
    if (this.closed) return;
    this.retry = setTimeout(
      () => this.enqueue(() => this.lead(address)),
      this.options.reclaimAfterMs ?? 2_000,
    );
    this.retry.unref();
  }
}
