import { filter, type Subscription } from "rxjs";
import type { ACLTokenRow } from "../../projections/acl.ts";
import type { ACLTokensDeleted } from "../../streams/acl.ts";
import type { Timer } from "../util/clock.ts";
import type { LeaderService, ServiceContext } from "./service.ts";

/** Nomad's ACLMaxExpiredBatchSize: tokens collected by one event at most. */
export const MAX_EXPIRED_BATCH = 4096;

/** How long after a failed collection the next is tried. */
const RETRY_AFTER_MS = 30_000;

/**
 * What happens when an ACL token expires: the leader removes it from the
 * log's tables with an `ACLTokensDeleted` event of reason "expired", so the
 * audit trail says when it went and why. An expired token is refused from
 * the moment it expires (src/auth/acl-authenticator.ts); this only clears it
 * away.
 *
 * Nomad's core jobs look for expired tokens every 5 minutes; this service
 * instead watches the token table and sets one timer for the earliest
 * expiry, so nothing polls and a token is collected when it expires.
 */
export class AclTokenExpiry implements LeaderService {
  readonly name = "acl-token-expiry";
  private ctx: ServiceContext | undefined;
  private subscription: Subscription | undefined;
  private timer: Timer | undefined;
  /** When the timer fires (unix ms), to tell whether a new expiry is sooner. */
  private dueAt = Number.POSITIVE_INFINITY;
  private running: Promise<void> = Promise.resolve();

  start(ctx: ServiceContext): void {
    this.ctx = ctx;
    this.subscription = ctx.store.change$.pipe(filter((c) => c.table === "acl_tokens")).subscribe({
      next: (c) => {
        const after = c.after as ACLTokenRow | undefined;
        if (after?.ExpirationTime) this.scheduleAt(Date.parse(after.ExpirationTime));
      },
      error: () => undefined,
    });
    this.scheduleAt(this.earliestExpiry(ctx));
  }

  async stop(): Promise<void> {
    this.subscription?.unsubscribe();
    this.subscription = undefined;
    this.clearTimer();
    this.ctx = undefined;
    await this.running;
  }

  private earliestExpiry(ctx: ServiceContext): number {
    let earliest = Number.POSITIVE_INFINITY;
    for (const t of ctx.tables.aclTokens.all()) {
      if (t.ExpirationTime) earliest = Math.min(earliest, Date.parse(t.ExpirationTime));
    }
    return earliest;
  }

  private clearTimer(): void {
    if (this.timer && this.ctx) this.ctx.clock.clearTimeout(this.timer);
    this.timer = undefined;
    this.dueAt = Number.POSITIVE_INFINITY;
  }

  private scheduleAt(at: number): void {
    const ctx = this.ctx;
    if (!ctx || !Number.isFinite(at) || at >= this.dueAt) return;
    this.clearTimer();
    this.dueAt = at;
    // Strictly after the expiry instant: a token is expired once its time is in the past.
    const delay = Math.max(0, at - ctx.clock.now() + 1);
    this.timer = ctx.clock.setTimeout(() => {
      this.timer = undefined;
      this.dueAt = Number.POSITIVE_INFINITY;
      this.running = this.collect(ctx).then((ok) => {
        if (this.ctx !== ctx) return;
        // After a failure (leadership lost, a write refused), not again at once for the same token.
        this.scheduleAt(ok ? this.earliestExpiry(ctx) : ctx.clock.now() + RETRY_AFTER_MS);
      });
    }, delay);
  }

  /** Whether every expired token was collected. */
  private async collect(ctx: ServiceContext): Promise<boolean> {
    const now = ctx.clock.now();
    const expired: string[] = [];
    for (const t of ctx.tables.aclTokens.all()) {
      if (t.ExpirationTime && Date.parse(t.ExpirationTime) < now) expired.push(t.AccessorID);
    }
    for (let i = 0; i < expired.length; i += MAX_EXPIRED_BATCH) {
      const data: ACLTokensDeleted = {
        AccessorIDs: expired.slice(i, i + MAX_EXPIRED_BATCH),
        Reason: "expired",
      };
      try {
        const { outcomes } = await ctx.write([{ type: "ACLTokensDeleted", v: 1, data }]);
        const refused = outcomes.find((o) => o.status === "rejected");
        // A token deleted by a caller in between refuses the batch; the retry collects the rest.
        if (refused) throw new Error(refused.reason);
      } catch (err) {
        ctx.logger.warn({ err }, "collecting expired ACL tokens failed; retrying");
        return false;
      }
    }
    if (expired.length > 0) ctx.logger.info({ tokens: expired.length }, "expired ACL tokens collected");
    return true;
  }
}
