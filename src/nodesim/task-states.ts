/**
 * Nomad's TaskState and TaskEvent, as a client reports them in
 * Node.UpdateAlloc, for the simulated driver. Times in events are Unix
 * nanoseconds, times in states RFC 3339 (Go's zero time when unset), as
 * Nomad's client encodes them.
 */

export const ZERO_TIME = "0001-01-01T00:00:00Z";
/** Nomad's taskrunner keeps the last 10 events of a task. */
export const MAX_TASK_EVENTS = 10;

export type TaskStateName = "pending" | "running" | "dead";

export interface TaskEvent {
  readonly Type: string;
  readonly Time: number;
  readonly DisplayMessage: string;
  /** Set by events that carry a message of their own (Nomad's SetMessage). */
  readonly Message?: string;
  readonly Details: Readonly<Record<string, string>>;
  readonly FailsTask?: boolean;
  readonly ExitCode?: number;
  readonly Signal?: number;
  readonly RestartReason?: string;
  readonly StartDelay?: number;
  readonly KillTimeout?: number;
  readonly DriverMessage?: string;
}

export interface TaskState {
  State: TaskStateName;
  Failed: boolean;
  Restarts: number;
  LastRestart: string;
  StartedAt: string;
  FinishedAt: string;
  Events: TaskEvent[];
  TaskHandle: null;
}

export function newTaskState(): TaskState {
  return {
    State: "pending",
    Failed: false,
    Restarts: 0,
    LastRestart: ZERO_TIME,
    StartedAt: ZERO_TIME,
    FinishedAt: ZERO_TIME,
    Events: [],
    TaskHandle: null,
  };
}

export function appendEvent(state: TaskState, event: TaskEvent): void {
  if (state.Events.length >= MAX_TASK_EVENTS) state.Events.shift();
  state.Events.push(event);
}

export const rfc3339 = (ms: number) => new Date(ms).toISOString();

/** Nomad's TaskEvent constructors for what the simulated driver does, with Nomad's messages. */
export const events = {
  received: (ms: number): TaskEvent => ev("Received", ms, "Task received by client"),
  setup: (ms: number): TaskEvent => ev("Task Setup", ms, "Building Task Directory"),
  driver: (ms: number, message: string): TaskEvent => ({
    ...ev("Driver", ms, message),
    DriverMessage: message,
  }),
  started: (ms: number): TaskEvent => ev("Started", ms, "Task started by client"),
  hookMessage: (ms: number, message: string): TaskEvent => ev("Task hook message", ms, message),
  signaling: (ms: number, reason: string): TaskEvent => ({
    ...ev("Signaling", ms, reason, { signal: "SIGHUP", reason }),
    Signal: 1,
  }),
  terminated: (ms: number, exitCode: number, signal = 0): TaskEvent => ({
    ...ev("Terminated", ms, `Exit Code: ${exitCode}${signal ? `, Signal: ${signal}` : ""}`, {
      exit_code: String(exitCode),
      signal: String(signal),
      oom_killed: "false",
    }),
    ExitCode: exitCode,
    Signal: signal,
  }),
  restarting: (ms: number, delayMs: number): TaskEvent => ({
    ...ev("Restarting", ms, `Task restarting in ${(delayMs / 1000).toFixed(3)}s`, {
      restart_reason: "Restart within policy",
      start_delay: String(Math.round(delayMs * 1e6)),
    }),
    RestartReason: "Restart within policy",
    StartDelay: Math.round(delayMs * 1e6),
  }),
  notRestarting: (ms: number, attempts: number): TaskEvent => ({
    ...ev("Not Restarting", ms, `Exceeded allowed attempts ${attempts} in interval and mode is "fail"`, {
      restart_reason: `Exceeded allowed attempts ${attempts} in interval and mode is "fail"`,
      fails_task: "true",
    }),
    FailsTask: true,
  }),
  killing: (ms: number, killTimeoutMs: number): TaskEvent => ({
    ...ev("Killing", ms, `Sent interrupt. Waiting ${killTimeoutMs / 1000}s before force killing`, {
      kill_timeout: String(killTimeoutMs * 1e6),
    }),
    KillTimeout: killTimeoutMs * 1e6,
  }),
  killed: (ms: number): TaskEvent => ev("Killed", ms, "Task successfully killed"),
};

function ev(type: string, ms: number, message: string, details: Record<string, string> = {}): TaskEvent {
  return { Type: type, Time: ms * 1e6, DisplayMessage: message, Details: details };
}

/** Nomad's getClientStatus: the allocation's status from its tasks' states. */
export function clientStatusOf(states: Readonly<Record<string, TaskState>>): {
  status: "pending" | "running" | "complete" | "failed";
  description: string;
} {
  let pending = false;
  let running = false;
  let dead = false;
  let failed = false;
  for (const s of Object.values(states)) {
    if (s.State === "running") running = true;
    else if (s.State === "pending") pending = true;
    else if (s.Failed) failed = true;
    else dead = true;
  }
  if (failed) return { status: "failed", description: "Failed tasks" };
  if (running) return { status: "running", description: "Tasks are running" };
  if (pending) return { status: "pending", description: "No tasks have started" };
  if (dead) return { status: "complete", description: "All tasks have completed" };
  return { status: "pending", description: "No tasks have started" };
}
