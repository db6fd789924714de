import type { ServerConfig } from "../config.ts";
import { CoreGc } from "./core-gc.ts";
import { DeploymentWatcher } from "./deployment-watcher.ts";
import { HeartbeatWatcher } from "./heartbeat-watcher.ts";
import { NodeDrainer } from "./node-drainer.ts";
import { SchedulerService } from "./scheduler/scheduler-service.ts";
import type { LeaderService } from "./service.ts";

/** Services the API also talks to (the client RPC resets heartbeat timers), created by the caller. */
export interface SharedServices {
  readonly heartbeats?: HeartbeatWatcher;
}

/** The leader-only services of a server, in start order. */
export function createServices(_config: ServerConfig, shared: SharedServices = {}): LeaderService[] {
  return [
    shared.heartbeats ?? new HeartbeatWatcher(),
    new CoreGc(),
    new SchedulerService(),
    new NodeDrainer(),
    new DeploymentWatcher(),
  ];
}
