import type { SimAllocSpec } from "./alloc-spec.ts";
import type { DriverOptions, Range } from "./driver-options.ts";
import { Prng } from "./prng.ts";
import {
  appendEvent,
  clientStatusOf,
  events,
  newTaskState,
  rfc3339,
  type TaskEvent,
  type TaskState,
} from "./task-states.ts";
import type { QueuedTimer, TimerQueue } from "./timer-queue.ts";

/** What a runner reports to the server (the client-owned fields of Nomad's Allocation). */
export interface ClientAllocUpdate {
  readonly ID: string;
  readonly NodeID: string;
  readonly ClientStatus: string;
  readonly ClientDescription: string;
  readonly TaskStates: Readonly<Record<string, TaskState>>;
  readonly DeploymentStatus: DeploymentHealth | null;
  readonly NetworkStatus: null;
}

export interface DeploymentHealth {
  readonly Healthy: boolean;
  readonly Timestamp: string;
  readonly Canary: boolean;
  readonly ModifyIndex: number;
}

export interface RunnerHost {
  readonly timers: TimerQueue;
  readonly driver: DriverOptions;
  readonly seed: string;
  /** The runner's state changed: the node buffers an update of it. */
  changed(runner: AllocRunner): void;
}

type Phase = "setup" | "pull" | "start" | "running" | "restarting" | "killing" | "dead";

const KILL_TIMEOUT_MS = 5_000;
const SIGTERM = 15;

/**
 * A minimal allocation runner with a simulated driver, as nomad-nodesim
 * plugs one into the client: the tasks of the allocation's group go
 * pending → running → complete or failed, with Nomad's task events, and
 * restart within the group's restart policy. Service and system tasks run
 * until the server stops the allocation; batch tasks exit after their run
 * time. All tasks of the group move together, on one timer.
 */
export class AllocRunner {
  readonly taskStates: Record<string, TaskState> = {};
  clientStatus: "pending" | "running" | "complete" | "failed" = "pending";
  clientDescription = "";
  deploymentStatus: DeploymentHealth | null = null;
  desiredStatus: string;
  allocModifyIndex: number;
  /** The client status the server last acknowledged (Nomad's lastAcknowledgedState): sets an update's priority. */
  ackedStatus: string | undefined;
  /** Destroyed before or while running: the server collected it, or it was never to run. */
  destroyed = false;
  /** Its tasks started at least once (a restart in progress still counts). */
  everStarted = false;
  private phase: Phase = "setup";
  private step: QueuedTimer | undefined;
  private periodic: QueuedTimer | undefined;
  private health: QueuedTimer | undefined;
  private readonly prng: Prng;

  constructor(
    readonly spec: SimAllocSpec,
    private readonly host: RunnerHost,
  ) {
    this.desiredStatus = spec.DesiredStatus;
    this.allocModifyIndex = spec.AllocModifyIndex;
    this.prng = new Prng(`${host.seed}/alloc/${spec.ID}`);
  }

  get ID(): string {
    return this.spec.ID;
  }

  /** Whether the runner ended: its tasks finished, or it was destroyed. */
  get terminal(): boolean {
    return this.phase === "dead";
  }

  /** Received: the tasks are pending and the setup begins. */
  start(): void {
    const now = this.host.timers.now();
    for (const t of this.spec.Tasks) this.taskStates[t.Name] = newTaskState();
    this.event(events.received(now));
    this.after(this.host.driver.setup, () => {
      this.phase = "pull";
      this.event(events.setup(this.host.timers.now()));
      this.after(this.host.driver.pull, () => {
        this.phase = "start";
        this.event(events.driver(this.host.timers.now(), "Downloading image"));
        this.after(this.host.driver.start, () => this.run());
      });
    });
  }

  /** A newer version of the allocation from the server; stops it when the server wants it stopped. */
  update(spec: Pick<SimAllocSpec, "DesiredStatus" | "AllocModifyIndex">): void {
    this.allocModifyIndex = spec.AllocModifyIndex;
    this.desiredStatus = spec.DesiredStatus;
    if (spec.DesiredStatus === "stop" || spec.DesiredStatus === "evict") this.stop();
  }

  /** Kills the tasks: "Killing", then after the driver's kill time "Terminated" and "Killed"; complete. */
  stop(): void {
    if (this.phase === "dead" || this.phase === "killing") return;
    this.cancelTimers();
    const now = this.host.timers.now();
    if (this.phase !== "running") {
      this.finish(now, [events.killed(now)], false);
      return;
    }
    this.phase = "killing";
    this.event(events.killing(now, KILL_TIMEOUT_MS));
    this.after(this.host.driver.kill, () => {
      const at = this.host.timers.now();
      this.finish(at, [events.terminated(at, 0, SIGTERM), events.killed(at)], false);
    });
  }

  /** The runner is gone (the server collected the allocation, or the simulator stops): no more updates. */
  destroy(): void {
    this.cancelTimers();
    this.phase = "dead";
    this.destroyed = true;
  }

  /** The update the node sends for this allocation now. */
  toUpdate(nodeID: string): ClientAllocUpdate {
    return {
      ID: this.spec.ID,
      NodeID: nodeID,
      ClientStatus: this.clientStatus,
      ClientDescription: this.clientDescription,
      TaskStates: this.taskStates,
      DeploymentStatus: this.deploymentStatus,
      NetworkStatus: null,
    };
  }

  private run(): void {
    const now = this.host.timers.now();
    this.phase = "running";
    this.everStarted = true;
    for (const s of Object.values(this.taskStates)) {
      s.State = "running";
      if (s.StartedAt === "0001-01-01T00:00:00Z") s.StartedAt = rfc3339(now);
    }
    this.event(events.started(now));
    this.schedulePeriodic(true);
    if (this.spec.DeploymentID !== "" && this.deploymentStatus === null && !this.health) {
      this.health = this.host.timers.after(this.spec.MinHealthyTime, () => {
        this.health = undefined;
        if (this.phase !== "running") return;
        this.deploymentStatus = {
          Healthy: true,
          Timestamp: rfc3339(this.host.timers.now()),
          Canary: false,
          ModifyIndex: 0,
        };
        this.host.changed(this);
      });
    }
    const d = this.host.driver;
    if (this.spec.JobType === "batch" || this.spec.JobType === "sysbatch") {
      const task = this.spec.Tasks[0];
      const runFor = task?.RunFor ?? this.draw(d.batchRunFor);
      const exitCode = task?.ExitCode ?? (this.prng.chance(d.failureRate) ? 1 : 0);
      this.step = this.host.timers.after(runFor, () => this.exit(exitCode));
    } else if (this.prng.chance(d.failureRate)) {
      this.step = this.host.timers.after(this.draw(d.crashWithin), () => this.exit(1));
    }
  }

  private exit(code: number): void {
    const now = this.host.timers.now();
    this.cancelTimers();
    if (code === 0) {
      this.finish(now, [events.terminated(now, 0)], false);
      return;
    }
    const states = Object.values(this.taskStates);
    if ((states[0]?.Restarts ?? 0) < this.spec.RestartAttempts) {
      const delay = this.host.driver.restartDelay ?? this.spec.RestartDelay;
      this.phase = "restarting";
      for (const s of states) {
        s.State = "pending";
        s.Restarts++;
        s.LastRestart = rfc3339(now);
        appendEvent(s, events.terminated(now, code));
        appendEvent(s, events.restarting(now, delay));
      }
      this.changed();
      this.step = this.host.timers.after(delay, () => this.run());
      return;
    }
    this.finish(
      now,
      [events.terminated(now, code), events.notRestarting(now, this.spec.RestartAttempts)],
      true,
    );
  }

  private finish(now: number, list: readonly TaskEvent[], failed: boolean): void {
    this.phase = "dead";
    for (const s of Object.values(this.taskStates)) {
      s.State = "dead";
      s.Failed = failed;
      s.FinishedAt = rfc3339(now);
      for (const e of list) appendEvent(s, e);
    }
    this.changed();
  }

  /**
   * The low-priority activity of a running task: every `eventInterval`
   * (±50%) a template re-render with change_mode "signal", which Nomad
   * reports as a hook message and, a moment later, the signal it sends.
   */
  private schedulePeriodic(first = false): void {
    const d = this.host.driver;
    if (d.eventInterval <= 0) return;
    // The first comes anywhere within one interval, so allocations that started together
    // re-render at a steady rate from the start rather than in a wave one interval later.
    const wait = d.eventInterval * (first ? this.prng.next() : this.prng.between(0.5, 1.5));
    this.periodic = this.host.timers.after(wait, () => {
      if (this.phase !== "running") return;
      this.event(events.hookMessage(this.host.timers.now(), "Template re-rendered"));
      this.periodic = this.host.timers.after(this.draw(d.eventGap), () => {
        if (this.phase !== "running") return;
        this.event(events.signaling(this.host.timers.now(), "Template re-rendered"));
        this.schedulePeriodic();
      });
    });
  }

  private event(e: TaskEvent): void {
    for (const s of Object.values(this.taskStates)) appendEvent(s, e);
    this.changed();
  }

  private changed(): void {
    const { status, description } = clientStatusOf(this.taskStates);
    this.clientStatus = status;
    this.clientDescription = description;
    this.host.changed(this);
  }

  private after(range: Range, fn: () => void): void {
    this.step = this.host.timers.after(this.draw(range), fn);
  }

  private draw(range: Range): number {
    return this.prng.between(range.min, range.max);
  }

  private cancelTimers(): void {
    this.host.timers.cancel(this.step);
    this.host.timers.cancel(this.periodic);
    this.host.timers.cancel(this.health);
    this.step = this.periodic = this.health = undefined;
  }
}
