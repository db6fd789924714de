import { randomUUID } from "node:crypto";
import { join } from "node:path";
import type { FastifyInstance } from "fastify";
import type { Logger } from "pino";
import { Subject } from "rxjs";
import { createProjections } from "../projections/index.ts";
import type { ClusterBootstrapped } from "../streams/cluster.ts";
import type { Actor } from "../streams/event-schema.ts";
import { allSchemas } from "../streams/index.ts";
import { buildApi } from "./api/build-api.ts";
import type { ApiContext } from "./api/context.ts";
import { AclAuthenticator } from "./auth/acl-authenticator.ts";
import { OpenAuthenticator } from "./auth/authenticate.ts";
import { advertisedAddress, type Election, openElection } from "./cluster/open-election.ts";
import { ReadOnlyElection } from "./cluster/read-only-election.ts";
import { EnvelopeCodec } from "./codec/envelope-codec.ts";
import { type ServerConfig, splitHostPort } from "./config.ts";
import { nomadDetachCall } from "./csi/nomad-detach.ts";
import { EventHub } from "./events/event-hub.ts";
import { HistoryStore } from "./history/history-store.ts";
import { signIdentitiesElsewhere } from "./identity/alloc-identities.ts";
import { loadClusterKek } from "./keyring/cluster-kek.ts";
import { Keyring } from "./keyring/keyring.ts";
import { KeyringInitializer } from "./keyring/keyring-initializer.ts";
import { Keystore } from "./keyring/keystore.ts";
import { RootKeyMaterialSync } from "./keyring/root-key-material-sync.ts";
import type { Leadership } from "./leadership.ts";
import type { EventLog } from "./log/event-log.ts";
import { openLog } from "./log/open-log.ts";
import { LogTap } from "./logging/log-tap.ts";
import { Metrics } from "./metrics/metrics.ts";
import { registerNomadMetrics } from "./metrics/nomad-metrics.ts";
import { NodeSessions } from "./rpc/node-sessions.ts";
import { RpcDispatcher } from "./rpc/rpc-dispatcher.ts";
import { RpcMetrics } from "./rpc/rpc-metrics.ts";
import { RpcServer } from "./rpc/rpc-server.ts";
import { HeartbeatWatcher } from "./services/heartbeat-watcher.ts";
import { createServices, volumeWatcherOptions } from "./services/index.ts";
import { SchedulerService } from "./services/scheduler/scheduler-service.ts";
import { SchedulerThreads } from "./services/scheduler/threads/scheduler-threads.ts";
import type { LeaderService } from "./services/service.ts";
import { ServiceRunner } from "./services/service-runner.ts";
import { VolumeWatcher } from "./services/volume-watcher.ts";
import type { ShutdownProgress } from "./shutdown/bounded-step.ts";
import { type ShutdownOutcome, shutDown } from "./shutdown/shutdown-sequence.ts";
import { SnapshotFile } from "./store/snapshot-file.ts";
import { StateAt } from "./store/state-at.ts";
import { Store } from "./store/store.ts";
import { Watches } from "./store/watches.ts";
import { writeEvents } from "./store/writer.ts";
import { type Clock, systemClock } from "./util/clock.ts";
import { LISTEN_BACKLOG } from "./util/listen-backlog.ts";

export interface RunningServer {
  /** The address the HTTP API listens on, e.g. 127.0.0.1:4646 (the real port when 0 was asked for). */
  readonly address: string;
  /** The advertised RPC address Nomad's client agents connect to; "" for a read-only server (no RPC port). */
  readonly rpcAddress: string;
  readonly store: Store;
  readonly log: EventLog;
  readonly http: FastifyInstance;
  readonly logger: Logger;
  /** Who leads, as this server sees it. */
  readonly leadership: Leadership;
  /** The leader-only services (they run while this server leads); tests look into them. */
  readonly services: readonly LeaderService[];
  /** The root key material this server holds (src/keyring/keystore.ts); tests look into it. */
  readonly keyring: Keyring;
  /** The scheduler's threads, when `scheduler_workers` is above 0 (tests wait for them to be ready). */
  readonly schedulerThreads?: SchedulerThreads;
  /**
   * The ordered, bounded shutdown (src/shutdown/shutdown-sequence.ts): leader
   * services, election, HTTP API, snapshot, log. `progress` tells the caller
   * which step it is on. Calling it again returns the same shutdown.
   */
  close(progress?: ShutdownProgress): Promise<ShutdownOutcome>;
  /** Every object's history entries, on disk (src/history/). */
  readonly history: HistoryStore;
  /** Flushes and closes the log alone, for an exit that cannot wait for the rest. */
  flushLog(): Promise<void>;
}

export interface ServerDeps {
  /** The server's logger; without one it logs JSON to stdout at config.logLevel. */
  readonly logger?: Logger;
  /** Taps the logger for `/v1/agent/monitor`; pass `logTap.logger` as `logger` with it. */
  readonly logTap?: LogTap;
  /** Time for envelopes and service timers; tests pass a VirtualClock. */
  readonly clock?: Clock;
}

/**
 * The composition root: config -> log -> store -> services -> API.
 * Resolves once the server has caught up with its log and listens.
 */
export async function startServer(config: ServerConfig, deps: ServerDeps = {}): Promise<RunningServer> {
  // A logger of the embedder's own cannot be tapped: /v1/agent/monitor then says so.
  const logTap =
    deps.logTap ?? (deps.logger ? undefined : new LogTap(config.logLevel, { name: "chronomad" }));
  const logger = deps.logger ?? logTap!.logger;
  const clock = deps.clock ?? systemClock;
  const codec = new EnvelopeCodec(allSchemas);
  const projections = createProjections();
  // Before the log opens: a bad KEK setting is a configuration error with nothing to undo.
  const clusterKek = await loadClusterKek(config);
  // Read-only (serve --read-only): no lock, no repair, no append; the log must exist.
  const log = await openLog(config.log, { logger, fsync: config.fsync, readOnly: config.readOnly });
  const metrics = new Metrics();
  const snapshots =
    config.log === "memory:" ? undefined : new SnapshotFile(join(config.dataDir, "snapshots"), logger);
  // Beside the snapshots; a memory log or a read-only server (which writes nothing to its data dir) keeps it in a temporary directory.
  const history = await HistoryStore.open(
    config.log === "memory:" || config.readOnly ? undefined : join(config.dataDir, "history"),
    logger.child({ component: "history" }),
    { ms: config.historyRetention, now: clock.now() },
  );
  const store = new Store({
    log,
    codec,
    projections: projections.all,
    logger: logger.child({ component: "store" }),
    // A read-only server writes nothing, snapshots included, so its live
    // store starts from the log; reads of the past and event-stream catch-up
    // still start from the snapshots the data dir holds.
    snapshots: config.readOnly ? undefined : snapshots,
    snapshotEvery: config.readOnly ? 0 : config.snapshotEvery,
    rebuild: history.rebuild,
  });
  history.attach(store, log.lastIndex());
  try {
    await store.start();
  } catch (err) {
    await history.close();
    await log.close();
    throw err;
  }
  // Root key material (src/keyring/keystore.ts): the memory log keeps it in memory only.
  const keystore = config.log === "memory:" ? undefined : Keystore.inDataDir(config.dataDir, clusterKek);
  const keyring = new Keyring({ keystore, clusterKek });
  const keyMaterial = new RootKeyMaterialSync({
    store,
    rootKeys: projections.tables.rootKeys,
    keyring,
    keystore,
    clusterKek,
    logger: logger.child({ component: "keyring" }),
  });
  await keyMaterial.start();
  const keyringInitializer = new KeyringInitializer({ keyring, keystore, clusterKek });

  const { host, port } = splitHostPort(config.httpAddr);
  const closing = new Subject<"closing">();
  // Read at every election join, for stickiness: `services` exists by then.
  // A read-only server takes part in no election: it never leads, so no leader service runs.
  const leadership: Election = config.readOnly
    ? new ReadOnlyElection(config.serverName)
    : await openElection(config, logger, () => services.heldEpoch);
  const heartbeats = new HeartbeatWatcher();
  const schedulerThreads = startSchedulerThreads(config, store, logger);
  if (schedulerThreads) signIdentitiesElsewhere(keyring, (key, inputs) => schedulerThreads.sign(key, inputs));
  const scheduler = new SchedulerService({
    keyring,
    threads: schedulerThreads && { pool: schedulerThreads, codec },
  });
  const quiet = logger.child({ component: "history" }, { level: "warn" });
  const events = new EventHub({
    store,
    codec,
    createProjections,
    snapshots,
    logger: quiet,
    bufferEvents: config.eventBufferSize,
  });
  const nodeSessions = new NodeSessions();
  const volumeWatcher = new VolumeWatcher({
    ...volumeWatcherOptions(config),
    nomadCall: nomadDetachCall(nodeSessions),
  });
  const ctx: ApiContext = {
    config,
    store,
    tables: projections.tables,
    events,
    stateAt: new StateAt({ log, codec, createProjections, snapshots, logger: quiet }),
    history,
    leadership,
    authenticator: config.aclEnabled
      ? new AclAuthenticator(projections.tables, clock)
      : new OpenAuthenticator(),
    metrics,
    logger,
    logTap,
    schedulers: scheduler,
    closing$: closing.asObservable(),
    clock,
    heartbeats,
    watches: new Watches(store),
    keyring,
    nodeSessions,
    volumeWatcher,
  };
  registerStoreMetrics(metrics, store);
  metrics.gauge("chronomad.leader", () => (leadership.isLeader() ? 1 : 0));
  metrics.gauge("chronomad.leadership.epoch", () => services.heldEpoch);
  registerNomadMetrics(metrics, {
    store,
    tables: projections.tables,
    leadership,
    scheduler,
    heartbeats: () => heartbeats.tracked,
  });
  // Zero passes once the volumes have settled: the watcher does no work for idle volumes.
  metrics.gauge(
    "chronomad.csi.volume_watcher.passes",
    () => volumeWatcher.counters.passes,
    {},
    "Volume watcher passes over a volume since start",
  );
  metrics.gauge(
    "chronomad.csi.volume_watcher.watchers",
    () => volumeWatcher.watching,
    {},
    "CSI volumes with a live watcher",
  );
  metrics.gauge(
    "chronomad.csi.volume_watcher.releasing",
    () => volumeWatcher.releasing,
    {},
    "CSI claim unpublishes under way",
  );

  // A read-only server appends nothing, not even the cluster's identity to a log that lacks it.
  if (!config.readOnly) await bootstrapCluster(ctx);

  const leaderServices = config.readOnly
    ? []
    : createServices(config, { heartbeats, keyring: keyringInitializer, scheduler, volumeWatcher });
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
  await http.listen({ host, port, backlog: LISTEN_BACKLOG });
  const advertised = advertisedAddress(config, http.server.address());
  // A read-only server must not take a client agent's writes: it opens no RPC port.
  const rpc = config.readOnly
    ? undefined
    : await startRpc(config, ctx, http).catch(async (err) => {
        await http.close();
        throw err;
      });
  const rpcAdvertised = rpc
    ? advertisedAddress(config, rpc.server.bound(), config.advertiseRpcAddr, config.rpcAddr)
    : "";
  try {
    await leadership.join(advertised, rpcAdvertised);
    if (!config.readOnly) {
      // A leader serves only once its services run (its claim is in the log).
      await services.attach(leadership, advertised);
      // Nomad's clients wait for the JWKS to list a key: a leader reports
      // itself started once its first key is written (or its write failed and
      // will be retried).
      if (leadership.isLeader()) await keyringInitializer.settled();
    }
  } catch (err) {
    await rpc?.server.close();
    await http.close();
    await services.close();
    await schedulerThreads?.close();
    await keyMaterial.stop();
    await leadership.close();
    await store.stop();
    await history.close();
    await log.close();
    throw err;
  }
  logger.info(
    {
      http: advertised,
      rpc: rpcAdvertised,
      log: log.url,
      index: store.appliedIndex,
      readOnly: config.readOnly,
    },
    "chronomad serving",
  );

  let closed: Promise<ShutdownOutcome> | undefined;
  const close = (progress: ShutdownProgress = { step: "starting", startedAt: Date.now() }) => {
    // Stops following new keys at once; a keystore write in flight finishes on its own.
    void keyMaterial.stop();
    closed ??= shutDown(
      {
        logger,
        graceMs: config.shutdownGrace,
        services,
        election: leadership,
        closing,
        http,
        rpc: rpc?.server,
        schedulerThreads,
        events,
        watches: ctx.watches,
        store,
        log,
        history,
      },
      progress,
    );
    return closed;
  };
  const flushLog = () => log.close();
  return {
    address: advertised,
    rpcAddress: rpcAdvertised,
    store,
    log,
    history,
    http,
    logger,
    leadership,
    services: leaderServices,
    keyring,
    schedulerThreads,
    close,
    flushLog,
  };
}

/**
 * The scheduler's threads (config `scheduler_workers`), each a replica of
 * the scheduler's tables fed with every batch the store applies. They catch
 * up in the background: until one is ready, the scheduler computes in
 * process. A read-only server schedules nothing.
 */
function startSchedulerThreads(
  config: ServerConfig,
  store: Store,
  logger: Logger,
): SchedulerThreads | undefined {
  if (config.readOnly || config.schedulerWorkers === 0) return undefined;
  const threads = new SchedulerThreads({
    workers: config.schedulerWorkers,
    nice: config.schedulerNice,
    store,
    snapshotDir: config.log === "memory:" ? undefined : join(config.dataDir, "snapshots"),
    logger: logger.child({ component: "scheduler-threads" }),
    logLevel: config.logLevel,
  });
  store.applied$.subscribe({ next: (b) => threads.applied(b.records), error: () => undefined });
  threads.start().catch((err: Error) => {
    logger.error({ err }, "scheduler threads did not start: scheduling on the main thread");
  });
  return threads;
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

/** Nomad's RPC port, for client agents: a second transport into the API's client RPC routes. */
async function startRpc(config: ServerConfig, ctx: ApiContext, http: FastifyInstance) {
  const sessions = ctx.nodeSessions;
  const metrics = new RpcMetrics(ctx.metrics);
  const logger = ctx.logger.child({ component: "rpc" });
  const server = await RpcServer.listen(
    {
      addr: config.rpcAddr,
      handshakeTimeoutMs: config.rpcHandshakeTimeout,
      maxConnsPerClient: config.rpcMaxConnsPerClient,
    },
    { dispatcher: new RpcDispatcher(http, ctx, sessions, metrics), sessions, metrics, logger },
  );
  ctx.metrics.gauge("chronomad.rpc.sessions", () => server.sessionCount);
  ctx.metrics.gauge("chronomad.rpc.client_nodes", () => sessions.size);
  return { server };
}
