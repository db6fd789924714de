import type { SimAllocSpec, SimHealthStrategy } from "./alloc-spec.ts";
import type { TaskEvent, TaskState } from "./task-states.ts";

/** How a runner watches its allocation's health (Nomad's getHealthParams); milliseconds. */
export interface HealthWatchParams {
  /** Health for a deployment (the allocation has one), not for a migration. */
  readonly isDeploy: boolean;
  readonly minHealthyTime: number;
  readonly healthyDeadline: number;
}

/** Nomad's DefaultMigrateStrategy, for groups without a migrate block. */
const DEFAULT_MIGRATE: SimHealthStrategy = {
  MaxParallel: 1,
  HealthCheck: "checks",
  MinHealthyTime: 10_000,
  HealthyDeadline: 300_000,
};

/**
 * Whether Nomad's client watches this allocation's health, and how
 * (client/allocrunner/health_hook.go, newAllocHealthWatcherHook and init):
 * only service jobs; with a deployment, by its update block unless that is
 * empty or manual; without one, by the migrate block, so that a drain can
 * tell when replacements are healthy. The simulated driver has no service
 * checks, so "checks" passes as soon as the tasks do (Nomad's tracker with
 * no checks registered).
 */
export function healthWatchParams(spec: SimAllocSpec): HealthWatchParams | undefined {
  if (spec.JobType !== "service") return undefined;
  const isDeploy = spec.DeploymentID !== "";
  if (isDeploy) {
    const u = spec.Update;
    if (!u || u.MaxParallel === 0 || u.HealthCheck === "manual") return undefined;
    return { isDeploy, minHealthyTime: u.MinHealthyTime, healthyDeadline: u.HealthyDeadline };
  }
  const m = spec.Migrate ?? DEFAULT_MIGRATE;
  return { isDeploy, minHealthyTime: m.MinHealthyTime, healthyDeadline: m.HealthyDeadline };
}

/**
 * The "Alloc Unhealthy" event Nomad's tracker gives each task of an
 * allocation found unhealthy for its deployment (allochealth's
 * taskHealthState.event; the simulated tasks have no checks to blame).
 */
export function unhealthyEvent(ms: number, state: TaskState, params: HealthWatchParams): TaskEvent {
  const deadline = goDuration(params.healthyDeadline);
  let message: string;
  if (state.Failed) message = "Unhealthy because of failed task";
  else if (state.State === "pending") message = `Task not running by healthy_deadline of ${deadline}`;
  else if (state.State === "dead") message = "Unhealthy because of dead task";
  // The tracker's context has no deadline: a running task is always "not running long enough".
  else
    message = `Task not running for min_healthy_time of ${goDuration(params.minHealthyTime)} by healthy_deadline of ${deadline}`;
  return {
    Type: "Alloc Unhealthy",
    Time: ms * 1e6,
    Message: message,
    DisplayMessage: message,
    Details: { message },
  };
}

/** Go's time.Duration String for whole milliseconds: "100ms", "10s", "1.5s", "5m0s", "1h0m0s". */
export function goDuration(ms: number): string {
  if (ms === 0) return "0s";
  const sign = ms < 0 ? "-" : "";
  let rest = Math.abs(ms);
  if (rest < 1000) return `${sign}${rest}ms`;
  const h = Math.floor(rest / 3_600_000);
  rest -= h * 3_600_000;
  const m = Math.floor(rest / 60_000);
  rest -= m * 60_000;
  const s = `${rest / 1000}s`;
  if (h > 0) return `${sign}${h}h${m}m${s}`;
  if (m > 0) return `${sign}${m}m${s}`;
  return sign + s;
}
