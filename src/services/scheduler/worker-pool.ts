/** Nomad's `_core` scheduler: garbage collection evaluations (chronomad's CoreGc service runs them). */
export const CORE_SCHEDULER = "_core";

/** The scheduler types a worker can take evaluations of, as Nomad's BuiltinSchedulers. */
export const SCHEDULER_TYPES = ["service", "batch", "system", "sysbatch"] as const;

/**
 * Workers one server may run. Nomad sets no bound; here scheduling computes
 * on one thread, so more workers only overlap their log writes, and each
 * costs memory: a bound keeps a stray request from exhausting the server.
 */
export const MAX_SCHEDULERS = 256;

/** Nomad's SchedulerWorkerPoolArgs: how many workers a server runs, and which evaluation types they take. */
export interface WorkerPoolConfig {
  readonly NumSchedulers: number;
  readonly EnabledSchedulers: readonly string[];
}

/** Nomad's WorkerInfo, as `/v1/agent/schedulers` reports it. */
export interface WorkerInfo {
  readonly ID: string;
  readonly EnabledSchedulers: readonly string[];
  /** When the worker started (ms since the epoch). */
  readonly Started: number;
  /** Nomad's WorkerStatus names: Starting, Started, Stopping, Stopped. */
  readonly Status: string;
  /** Nomad's SchedulerWorkerStatus names: WaitingToDequeue, Scheduling, Stopped. */
  readonly WorkloadStatus: string;
}

/** What the API sees of the scheduler's workers. */
export interface SchedulerWorkerPool {
  workerConfig(): WorkerPoolConfig;
  /** Applies a valid configuration (restarting the workers if this server runs them); answers the one in force. */
  setWorkerConfig(config: WorkerPoolConfig): WorkerPoolConfig;
  /** The workers running now: none on a server that does not lead. */
  workersInfo(): readonly WorkerInfo[];
}

/**
 * Nomad's SchedulerWorkerPoolArgs.IsValid: a non-negative count, `_core`
 * enabled, and nothing but known scheduler types.
 */
export function isValidWorkerPool(config: WorkerPoolConfig): boolean {
  if (!Number.isInteger(config.NumSchedulers) || config.NumSchedulers < 0) return false;
  let core = false;
  for (const s of config.EnabledSchedulers) {
    if (s === CORE_SCHEDULER) core = true;
    else if (!(SCHEDULER_TYPES as readonly string[]).includes(s)) return false;
  }
  return core;
}

/** Whether two configurations differ, the enabled types compared as sets (Nomad's shouldReloadSchedulers). */
export function workerPoolChanged(a: WorkerPoolConfig, b: WorkerPoolConfig): boolean {
  if (a.NumSchedulers !== b.NumSchedulers) return true;
  const x = [...new Set(a.EnabledSchedulers)].sort();
  const y = [...new Set(b.EnabledSchedulers)].sort();
  return x.length !== y.length || x.some((s, i) => s !== y[i]);
}
