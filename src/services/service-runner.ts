import type { Logger } from "pino";
import type { Subscription } from "rxjs";
import type { Leadership } from "../leadership.ts";
import type { LeaderService, ServiceContext } from "./service.ts";

/**
 * Starts the leader-only services when this server becomes leader and stops
 * them when it stops being leader, in reverse order.
 */
export class ServiceRunner {
  private running = false;
  private subscription: Subscription | undefined;
  private transition: Promise<void> = Promise.resolve();

  constructor(
    private readonly services: readonly LeaderService[],
    private readonly context: Omit<ServiceContext, "failover">,
    private readonly logger: Logger,
  ) {}

  attach(leadership: Leadership): void {
    let first = true;
    this.subscription = leadership.leader$.subscribe((leader) => {
      // Only a server that takes over from another one uses the failover
      // heartbeat TTL; the first leader of a fresh start does not.
      const failover = leader && !first;
      if (leader) first = false;
      this.transition = this.transition.then(() => (leader ? this.startAll(failover) : this.stopAll()));
    });
  }

  async close(): Promise<void> {
    this.subscription?.unsubscribe();
    await this.transition;
    await this.stopAll();
  }

  private async startAll(failover: boolean): Promise<void> {
    if (this.running) return;
    this.running = true;
    for (const s of this.services) {
      s.start({ ...this.context, failover });
      this.logger.info({ service: s.name, failover }, "service started");
    }
  }

  private async stopAll(): Promise<void> {
    if (!this.running) return;
    this.running = false;
    for (const s of [...this.services].reverse()) {
      await s.stop();
      this.logger.info({ service: s.name }, "service stopped");
    }
  }
}
