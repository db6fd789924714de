import type { ServerConfig } from "../config.ts";
import { Keyring } from "../keyring/keyring.ts";
import { KeyringInitializer } from "../keyring/keyring-initializer.ts";
import { AclTokenExpiry } from "./acl-token-expiry.ts";
import { CoreGc } from "./core-gc.ts";
import { DeploymentWatcher } from "./deployment-watcher.ts";
import { HeartbeatWatcher } from "./heartbeat-watcher.ts";
import { KeyringGc } from "./keyring-gc.ts";
import { KeyringRekey } from "./keyring-rekey.ts";
import { NodeDrainer } from "./node-drainer.ts";
import { PeriodicDispatcher } from "./periodic-dispatcher.ts";
import { SchedulerService } from "./scheduler/scheduler-service.ts";
import type { LeaderService } from "./service.ts";
import { VolumeWatcher } from "./volume-watcher.ts";

/** Services the API also talks to (the client RPC resets heartbeat timers), created by the caller. */
export interface SharedServices {
  readonly heartbeats?: HeartbeatWatcher;
  /** The server awaits its first key before it reports itself started. */
  readonly keyring?: KeyringInitializer;
  /** `/v1/agent/schedulers` reads and resizes its worker pool. */
  readonly scheduler?: SchedulerService;
  /** CSIVolume.Unpublish and volume detach run its unpublish workflow. */
  readonly volumeWatcher?: VolumeWatcher;
}

/** The leader-only services of a server, in start order. */
export function createServices(config: ServerConfig, shared: SharedServices = {}): LeaderService[] {
  const keyring = shared.keyring ?? new KeyringInitializer({ keyring: new Keyring() });
  return [
    // First: clients wait for the JWKS to list a key before they call anything.
    keyring,
    shared.heartbeats ?? new HeartbeatWatcher(),
    new CoreGc(),
    // The keyring's lifecycle shares the server's custody of key material with the initializer.
    new KeyringGc(keyring.deps),
    new KeyringRekey(keyring.deps.keyring),
    shared.scheduler ?? new SchedulerService(),
    new NodeDrainer(),
    new DeploymentWatcher(),
    new AclTokenExpiry(),
    new PeriodicDispatcher(),
    shared.volumeWatcher ?? new VolumeWatcher(volumeWatcherOptions(config)),
  ];
}

/** The volume watcher's settings from the server's configuration. */
export function volumeWatcherOptions(config: ServerConfig) {
  return {
    quiescentMs: config.csi.volumeQuiescentTimeout,
    detach: {
      timeoutMs: config.csi.detachTimeout,
      attempts: config.csi.detachAttempts,
      backoffMs: config.csi.detachBackoff,
    },
  };
}
