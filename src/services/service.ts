import type { Logger } from "pino";
import type { Projections } from "../../projections/index.ts";
import type { ServerConfig } from "../config.ts";
import type { Store } from "../store/store.ts";
import type { Writable, Written } from "../store/writer.ts";
import type { Clock } from "../util/clock.ts";

/** What a leader-only service is given when leadership starts. */
export interface ServiceContext {
  readonly config: ServerConfig;
  readonly store: Store;
  readonly tables: Projections["tables"];
  readonly clock: Clock;
  readonly logger: Logger;
  /** Appends events as the server itself and waits until they are applied. */
  write(drafts: readonly Writable[]): Promise<Written>;
  /** True from the moment leadership was established (a fresh leader, not a restart of timers). */
  readonly failover: boolean;
}

/**
 * A subscriber that acts on state: it runs only on the leader, reacts to the
 * store's change$ and applied$ (never polls), and writes events. `stop` is
 * called when leadership is lost or the server shuts down; it must release
 * every subscription and timer.
 */
export interface LeaderService {
  readonly name: string;
  start(ctx: ServiceContext): void;
  stop(): Promise<void>;
}
