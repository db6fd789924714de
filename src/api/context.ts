import type { Logger } from "pino";
import type { Observable } from "rxjs";
import type { Projections } from "../../projections/index.ts";
import type { Authenticator } from "../auth/authenticate.ts";
import type { ServerConfig } from "../config.ts";
import type { EventHub } from "../events/event-hub.ts";
import type { HistoryStore } from "../history/history-store.ts";
import type { Keyring } from "../keyring/keyring.ts";
import type { Leadership } from "../leadership.ts";
import type { LogTap } from "../logging/log-tap.ts";
import type { Metrics } from "../metrics/metrics.ts";
import type { HeartbeatTimers } from "../nodes/heartbeat-timers.ts";
import type { NodeSessions } from "../rpc/node-sessions.ts";
import type { SchedulerWorkerPool } from "../services/scheduler/worker-pool.ts";
import type { VolumeWatcher } from "../services/volume-watcher.ts";
import type { StateAt } from "../store/state-at.ts";
import type { Store } from "../store/store.ts";
import type { Watches } from "../store/watches.ts";
import type { Clock } from "../util/clock.ts";

/** What every API plugin is given: the server's parts, nothing global. */
export interface ApiContext {
  readonly config: ServerConfig;
  readonly store: Store;
  readonly tables: Projections["tables"];
  /** Event-stream frames from any index the log holds. */
  readonly events: EventHub;
  /** The tables as of a past index (time travel). */
  readonly stateAt: StateAt;
  /** Every object's history entries (the `history` table holds only what they are about). */
  readonly history: HistoryStore;
  readonly leadership: Leadership;
  readonly authenticator: Authenticator;
  readonly metrics: Metrics;
  readonly logger: Logger;
  /** Taps `logger` for `/v1/agent/monitor`; absent when the embedder supplied its own logger. */
  readonly logTap: LogTap | undefined;
  /** This server's scheduler workers (`/v1/agent/schedulers`). */
  readonly schedulers: SchedulerWorkerPool;
  /** Emits once when the server starts shutting down, so long waits end early. */
  readonly closing$: Observable<"closing">;
  /** The time stamped on envelopes and used by timers; virtual in tests. */
  readonly clock: Clock;
  /** The leader's node heartbeat timers (client RPC resets them). */
  readonly heartbeats: HeartbeatTimers;
  /** Wakes blocking reads when what they watch changes. */
  readonly watches: Watches;
  /** The root key material this server holds: seals and opens what must not be in clear (OIDC client secrets). */
  readonly keyring: Keyring;
  /** The yamux sessions of client agents connected to this server's RPC port, by node (server → client calls). */
  readonly nodeSessions: NodeSessions;
  /** The leader's CSI volume watcher: CSIVolume.Unpublish and volume detach run its unpublish workflow. */
  readonly volumeWatcher?: VolumeWatcher;
}
