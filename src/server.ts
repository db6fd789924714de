import { randomUUID } from "node:crypto";
import { join } from "node:path";
import type { FastifyInstance } from "fastify";
import { type Logger, pino } from "pino";
import { Subject } from "rxjs";
import { createProjections } from "../projections/index.ts";
import type { ClusterBootstrapped } from "../streams/cluster.ts";
import type { Actor } from "../streams/event-schema.ts";
import { allSchemas } from "../streams/index.ts";
import { buildApi } from "./api/build-api.ts";
import type { ApiContext } from "./api/context.ts";
import { OpenAuthenticator } from "./auth/authenticate.ts";
import { advertisedAddress, openElection } from "./cluster/open-election.ts";
import { EnvelopeCodec } from "./codec/envelope-codec.ts";
import { type ServerConfig, splitHostPort } from "./config.ts";
import { EventHub } from "./events/event-hub.ts";
import type { Leadership } from "./leadership.ts";
import type { EventLog } from "./log/event-log.ts";
import { openLog } from "./log/open-log.ts";
import { Metrics } from "./metrics/metrics.ts";
import { HeartbeatWatcher } from "./services/heartbeat-watcher.ts";
import { createServices } from "./services/index.ts";
import type { LeaderService } from "./services/service.ts";
import { ServiceRunner } from "./services/service-runner.ts";
import type { ShutdownProgress } from "./shutdown/bounded-step.ts";
import { type ShutdownOutcome, shutDown } from "./shutdown/shutdown-sequence.ts";
import { SnapshotFile } from "./store/snapshot-file.ts";
import { StateAt } from "./store/state-at.ts";
import { Store } from "./store/store.ts";
import { Watches } from "./store/watches.ts";
import { writeEvents } from "./store/writer.ts";
import { type Clock, systemClock } from "./util/clock.ts";

export interface RunningServer {
  /** The address the HTTP API listens on, e.g. 127.0.0.1:4646 (the real port when 0 was asked for). */
  readonly address: string;
  readonly store: Store;
  readonly log: EventLog;
  readonly http: FastifyInstance;
  readonly logger: Logger;
  /** Who leads, as this server sees it. */
  readonly leadership: Leadership;
  /** The leader-only services (they run while this server leads); tests look into them. */
  readonly services: readonly LeaderService[];
  /**
   * The ordered, bounded shutdown (src/shutdown/shutdown-sequence.ts): leader
   * services, election, HTTP API, snapshot, log. `progress` tells the caller
   * which step it is on. Calling it again returns the same shutdown.
   */
  close(progress?: ShutdownProgress): Promise<ShutdownOutcome>;
  /** Flushes and closes the log alone, for an exit that cannot wait for the rest. */
  flushLog(): Promise<void>;
}

export interface ServerDeps {
  readonly logger?: Logger;
  /** Time for envelopes and service timers; tests pass a VirtualClock. */
  readonly clock?: Clock;
}

/**
 * The composition root: config -> log -> store -> services -> API.
 * Resolves once the server has caught up with its log and listens.
 */
export async function startServer(config: ServerConfig, deps: ServerDeps = {}): Promise<RunningServer> {
  const logger = deps.logger ?? pino({ level: config.logLevel, name: "chronomad" });
  const clock = deps.clock ?? systemClock;
  const codec = new EnvelopeCodec(allSchemas);
  const projections = createProjections();
  const log = await openLog(config.log, { logger, fsync: config.fsync });
  const metrics = new Metrics();
  const snapshots =
    config.log === "memory:" ? undefined : new SnapshotFile(join(config.dataDir, "snapshots"), logger);
  const store = new Store({
    log,
    codec,
    projections: projections.all,
    logger: logger.child({ component: "store" }),
    snapshots,
    snapshotEvery: config.snapshotEvery,
  });
  try {
    await store.start();
  } catch (err) {
    await log.close();
    throw err;
  }

  const { host, port } = splitHostPort(config.httpAddr);
  const closing = new Subject<"closing">();
  // Read at every election join, for stickiness: `services` exists by then.
  const leadership = openElection(config, logger, () => services.heldEpoch);
  const heartbeats = new HeartbeatWatcher();
  const quiet = logger.child({ component: "history" }, { level: "warn" });
  const events = new EventHub({
    store,
    codec,
    createProjections,
    snapshots,
    logger: quiet,
    bufferEvents: config.eventBufferSize,
  });
  const ctx: ApiContext = {
    config,
    store,
    tables: projections.tables,
    events,
    stateAt: new StateAt({ log, codec, createProjections, snapshots, logger: quiet }),
    leadership,
    authenticator: new OpenAuthenticator(),
    metrics,
    logger,
    closing$: closing.asObservable(),
    clock,
    heartbeats,
    watches: new Watches(store),
  };
  registerStoreMetrics(metrics, store);
  metrics.gauge("chronomad.leader", () => (leadership.isLeader() ? 1 : 0));
  metrics.gauge("chronomad.leadership.epoch", () => services.heldEpoch);

  await bootstrapCluster(ctx);

  const leaderServices = createServices(config, { heartbeats });
  const services = new ServiceRunner(
    leaderServices,
    {
      config,
      store,
      tables: projections.tables,
      clock,
      logger: logger.child({ component: "services" }),
      actor: serverActor(config),
    },
    logger,
    { reclaimAfterMs: config.leaderSessionTimeout, resumeOwnEpoch: leadership.exclusive },
  );

  const http = await buildApi(ctx);
  await http.listen({ host, port });
  const advertised = advertisedAddress(config, http.server.address());
  try {
    await leadership.join(advertised);
    // A leader serves only once its services run (its claim is in the log).
    await services.attach(leadership, advertised);
  } catch (err) {
    await http.close();
    await services.close();
    await leadership.close();
    await store.stop();
    await log.close();
    throw err;
  }
  logger.info({ http: advertised, log: log.url, index: store.appliedIndex }, "chronomad serving");

  let closed: Promise<ShutdownOutcome> | undefined;
  const close = (progress: ShutdownProgress = { step: "starting", startedAt: Date.now() }) => {
    closed ??= shutDown(
      {
        logger,
        graceMs: config.shutdownGrace,
        services,
        election: leadership,
        closing,
        http,
        events,
        watches: ctx.watches,
        store,
        log,
      },
      progress,
    );
    return closed;
  };
  const flushLog = () => log.close();
  return {
    address: advertised,
    store,
    log,
    http,
    logger,
    leadership,
    services: leaderServices,
    close,
    flushLog,
  };
}

/**
 * A fresh log gets its cluster identity as its first record. Two servers
 * racing here both append; the first record wins at apply and the other is
 * rejected there, so every server ends up with the same cluster ID.
 */
async function bootstrapCluster(ctx: ApiContext): Promise<void> {
  if (ctx.tables.cluster.get("cluster")) return;
  const data: ClusterBootstrapped = {
    ClusterID: randomUUID(),
    CreateTime: ctx.clock.now(),
    ServerName: ctx.config.serverName,
  };
  const { outcomes } = await writeEvents(ctx.store, ctx.clock.now(), serverActor(ctx.config), [
    { type: "ClusterBootstrapped", v: 1, data },
  ]);
  ctx.logger.info(
    { clusterId: ctx.tables.cluster.get("cluster")?.ClusterID, won: outcomes[0]?.status === "applied" },
    "cluster bootstrapped",
  );
}

/** The actor of everything a server decides on its own (expiry, scheduling, GC). */
export function serverActor(config: ServerConfig): Actor {
  return { kind: "server", id: config.serverName };
}

function registerStoreMetrics(metrics: Metrics, store: Store): void {
  metrics.gauge("chronomad.store.applied_index", () => store.appliedIndex);
  metrics.gauge("chronomad.log.last_index", () => store.log.lastIndex());
  metrics.gauge("chronomad.runtime.heap_bytes", () => process.memoryUsage().heapUsed);
  metrics.gauge("chronomad.runtime.rss_bytes", () => process.memoryUsage.rss());
}
