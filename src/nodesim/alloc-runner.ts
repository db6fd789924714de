import { AllocServices, type NodeServices } from "./alloc-services.ts";
import type { SimAllocSpec } from "./alloc-spec.ts";
import { AllocVolumes, type NodeVolumes } from "./alloc-volumes.ts";
import type { DriverOptions, Range } from "./driver-options.ts";
import { type HealthWatchParams, healthWatchParams, unhealthyEvent } from "./health-watch.ts";
import { Prng } from "./prng.ts";
import {
  appendEvent,
  clientStatusOf,
  events,
  newTaskState,
  rfc3339,
  type TaskEvent,
  type TaskState,
  ZERO_TIME,
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
  /** null: cleared, the allocation joined another deployment (Nomad's ClearDeploymentStatus). */
  readonly Healthy: boolean | null;
  readonly Timestamp: string;
  readonly Canary: boolean;
  readonly ModifyIndex: number;
}

export interface RunnerHost {
  readonly timers: TimerQueue;
  readonly driver: DriverOptions;
  readonly seed: string;
  /** The node's native service registration (provider "nomad"); without it, none is made. */
  readonly services?: NodeServices;
  /** The node's CSI volume calls; without it, no volume is claimed. */
  readonly volumes?: NodeVolumes;
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
 *
 * It watches its health as Nomad's health hook does (health_hook.go with
 * allochealth's tracker): a service allocation, in a deployment or not (a
 * drain's replacements), is healthy once its tasks have run for
 * min_healthy_time, unhealthy if they die or the healthy deadline passes
 * first; an update that moves it to another deployment clears its health
 * and watches again.
 */
export class AllocRunner {
  readonly taskStates: Record<string, TaskState> = {};
  /** The allocation as last pulled: an update replaces it (a new deployment, a new job version in place). */
  spec: SimAllocSpec;
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
  /** How health is being watched; undefined: it is not (set already, or not wanted). */
  private watch: HealthWatchParams | undefined;
  private healthDeadline: QueuedTimer | undefined;
  /** Runs while the tasks run, for min_healthy_time. */
  private healthyAfter: QueuedTimer | undefined;
  private readonly prng: Prng;
  /** Its native services' hooks; undefined when the host registers none. */
  private readonly services: AllocServices | undefined;
  /** Its csi hook; undefined when the group has no csi volume or the host claims none. */
  readonly volumes: AllocVolumes | undefined;

  constructor(
    spec: SimAllocSpec,
    private readonly host: RunnerHost,
  ) {
    this.spec = spec;
    this.desiredStatus = spec.DesiredStatus;
    this.allocModifyIndex = spec.AllocModifyIndex;
    this.prng = new Prng(`${host.seed}/alloc/${spec.ID}`);
    this.services = host.services ? new AllocServices(spec, host.services) : undefined;
    this.volumes =
      host.volumes && spec.CSIVolumes.length > 0 ? new AllocVolumes(spec, host.volumes) : undefined;
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
    // The csi hook's Prerun: the claims go first (their failures are logged, as the tasks still run here).
    void this.volumes?.claim();
    // The health hook's and the group service hook's Prerun, before any task starts.
    this.watchHealth();
    this.services?.registerGroup();
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

  /**
   * Received already stopped by the server (desired stop or evict before
   * this node first pulled it): Nomad's task runners see shouldShutdown
   * before their first run, so no hook runs and no task starts; each task
   * goes to dead with only its Received event, not failed, and the
   * allocation is reported complete. Without that report the server would
   * hold it pending forever.
   */
  endUnstarted(): void {
    const now = this.host.timers.now();
    this.phase = "dead";
    for (const t of this.spec.Tasks) {
      const s = newTaskState();
      appendEvent(s, events.received(now));
      s.State = "dead";
      s.FinishedAt = rfc3339(now);
      this.taskStates[t.Name] = s;
    }
    this.changed();
  }

  /**
   * A newer version of the allocation from the server (Nomad's
   * handleAllocUpdate): stops it when the server wants it stopped; otherwise
   * the health hook starts over, its health cleared if the allocation moved
   * to another deployment. A runner that ended takes no update.
   */
  update(spec: SimAllocSpec): void {
    this.allocModifyIndex = spec.AllocModifyIndex;
    if (this.phase === "dead") return;
    const previous = this.spec;
    this.spec = spec;
    this.desiredStatus = spec.DesiredStatus;
    if (spec.DesiredStatus === "stop" || spec.DesiredStatus === "evict") {
      this.stop();
      return;
    }
    // Update hooks do not run for an allocation the server already counts as terminal.
    if (["complete", "failed", "lost"].includes(spec.ClientStatus)) return;
    this.services?.update(spec);
    this.stopWatch();
    if (spec.DeploymentID !== previous.DeploymentID && this.deploymentStatus) {
      // Not sent by itself: the server hears of it with the next health.
      this.deploymentStatus = { ...this.deploymentStatus, Healthy: null, Timestamp: ZERO_TIME };
    }
    this.watchHealth();
  }

  /**
   * Kills the tasks: "Killing", then after the driver's kill time "Terminated"
   * and "Killed"; complete. The health watch goes on, as Nomad's does (update
   * hooks do not run for a stop): tasks killed before they were healthy make
   * the allocation unhealthy. Registered services are removed first (the
   * group hook's PreKill, the task hooks' PreKilling), and the kill waits
   * for their deletes to be answered, as Nomad's does.
   */
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
    const kill = () => {
      // Destroyed while its services were being removed: nothing left to kill.
      if (this.phase !== "killing") return;
      this.after(this.host.driver.kill, () => {
        const at = this.host.timers.now();
        this.finish(at, [events.terminated(at, 0, SIGTERM), events.killed(at)], false);
      });
    };
    const services = this.services;
    if (!services?.registered) {
      kill();
      return;
    }
    services.deregisterGroup();
    services.deregisterTasks();
    void services.settled().then(kill);
  }

  /** The runner is gone (the server collected the allocation, or the simulator stops): no more updates. */
  destroy(): void {
    this.cancelTimers();
    this.stopWatch();
    this.phase = "dead";
    this.destroyed = true;
  }

  /** The update the node sends for this allocation now. */
  toUpdate(nodeID: string): ClientAllocUpdate {
    let deploymentStatus = this.deploymentStatus;
    // Nomad's clientAlloc: a failed allocation of a deployment is unhealthy, even if no watch said so.
    if (
      this.clientStatus === "failed" &&
      this.spec.DeploymentID !== "" &&
      deploymentStatus?.Healthy == null
    ) {
      deploymentStatus = { Healthy: false, Timestamp: ZERO_TIME, Canary: false, ModifyIndex: 0 };
    }
    return {
      ID: this.spec.ID,
      NodeID: nodeID,
      ClientStatus: this.clientStatus,
      ClientDescription: this.clientDescription,
      TaskStates: this.taskStates,
      DeploymentStatus: deploymentStatus,
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
    this.services?.registerTasks();
    this.schedulePeriodic(true);
    this.trackTasks();
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
    // The task service hooks' Exited.
    this.services?.deregisterTasks();
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
      this.trackTasks();
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
    // The tasks' Exited, then the group hook's Postrun: nothing of a finished allocation stays registered.
    this.services?.deregisterTasks();
    this.services?.deregisterGroup();
    // The csi hook's Postrun: once its claims are answered, what it holds is unpublished.
    const volumes = this.volumes;
    if (volumes) void volumes.settled().then(() => volumes.release());
    for (const s of Object.values(this.taskStates)) {
      s.State = "dead";
      s.Failed = failed;
      s.FinishedAt = rfc3339(now);
      for (const e of list) appendEvent(s, e);
    }
    this.changed();
    this.trackTasks();
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
    this.step = this.periodic = undefined;
  }

  // ---- health (Nomad's health hook and allochealth tracker) ----

  /** The hook's init: nothing if health is set already or not wanted; else the deadline runs from now. */
  private watchHealth(): void {
    if (this.deploymentStatus?.Healthy != null) return;
    const params = healthWatchParams(this.spec);
    if (!params) return;
    this.watch = params;
    this.healthDeadline = this.host.timers.after(params.healthyDeadline, () => {
      this.healthDeadline = undefined;
      this.setHealth(false);
    });
    this.trackTasks();
  }

  /**
   * The tracker following the tasks: running (or being killed, still
   * running) starts the min_healthy_time countdown; back to pending (a
   * restart) stops it; dead, for whatever reason, is unhealthy.
   */
  private trackTasks(): void {
    if (!this.watch) return;
    if (this.phase === "dead") {
      this.setHealth(false);
      return;
    }
    if (this.phase === "running" || this.phase === "killing") {
      this.healthyAfter ??= this.host.timers.after(this.watch.minHealthyTime, () => {
        this.healthyAfter = undefined;
        this.setHealth(true);
      });
      return;
    }
    this.host.timers.cancel(this.healthyAfter);
    this.healthyAfter = undefined;
  }

  /** Nomad's SetHealth: the allocation's health and when, reported; an unhealthy deployment allocation says why. */
  private setHealth(healthy: boolean): void {
    const watch = this.watch;
    if (!watch) return;
    this.stopWatch();
    const now = this.host.timers.now();
    if (!healthy && watch.isDeploy && this.desiredStatus === "run") {
      for (const s of Object.values(this.taskStates)) appendEvent(s, unhealthyEvent(now, s, watch));
    }
    this.deploymentStatus = {
      Healthy: healthy,
      Timestamp: rfc3339(now),
      // The server owns these; the client keeps what it had.
      Canary: this.deploymentStatus?.Canary ?? false,
      ModifyIndex: this.deploymentStatus?.ModifyIndex ?? 0,
    };
    this.host.changed(this);
  }

  private stopWatch(): void {
    this.host.timers.cancel(this.healthDeadline);
    this.host.timers.cancel(this.healthyAfter);
    this.healthDeadline = this.healthyAfter = undefined;
    this.watch = undefined;
  }
}
