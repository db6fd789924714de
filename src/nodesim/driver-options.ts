/** A duration range in milliseconds; a draw is uniform in [min, max]. */
export interface Range {
  readonly min: number;
  readonly max: number;
}

/**
 * How the simulated driver runs tasks. Durations in milliseconds. A task's
 * `mock_driver`-style config (`run_for`, `exit_code`) overrides the batch
 * run time and the failure draw, as Nomad's mock driver reads them.
 */
export interface DriverOptions {
  /** Received → "Task Setup" (building the task directory). */
  readonly setup: Range;
  /** Task Setup → "Driver" event (downloading the image). */
  readonly pull: Range;
  /** Driver event → "Started": the task runs. */
  readonly start: Range;
  /** How long a batch task runs before it exits. */
  readonly batchRunFor: Range;
  /** Share of tasks that fail: a batch task exits 1; a service task crashes once within `crashWithin`. */
  readonly failureRate: number;
  readonly crashWithin: Range;
  /** Delay before a restart; undefined: the group's RestartPolicy.Delay (Nomad's default 15 s). */
  readonly restartDelay: number | undefined;
  /**
   * Low-priority activity while running, every this long (±50%): a template
   * re-render (a hook message, then the signal `eventGap` later); 0: none.
   */
  readonly eventInterval: number;
  readonly eventGap: Range;
  /** "Killing" → "Killed" when the server stops an allocation. */
  readonly kill: Range;
}

export const DEFAULT_DRIVER: DriverOptions = {
  setup: { min: 10, max: 50 },
  pull: { min: 100, max: 600 },
  start: { min: 300, max: 1_500 },
  batchRunFor: { min: 60_000, max: 300_000 },
  failureRate: 0.01,
  crashWithin: { min: 30_000, max: 600_000 },
  restartDelay: undefined,
  // A re-render a minute per allocation: at 50,000 allocations that is ~1,700 task events a second.
  eventInterval: 60_000,
  eventGap: { min: 100, max: 400 },
  kill: { min: 50, max: 300 },
};
