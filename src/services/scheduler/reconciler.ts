import type { AllocRow } from "../../../projections/allocs.ts";
import type { DeploymentRow } from "../../../projections/deployments.ts";
import { goTime } from "../../../projections/go-time.ts";
import type { JobRow } from "../../../projections/jobs.ts";
import type { NodeRow } from "../../../projections/nodes.ts";
import {
  type ClientStatus,
  isServerTerminal,
  lastUnknownMs,
  maxClientDisconnectMs,
  needsToReconnect,
} from "../../../streams/allocs.ts";
import {
  DEPLOYMENT_BLOCKED,
  DEPLOYMENT_NEWER_JOB,
  DEPLOYMENT_PENDING_FOR_PEER,
  DEPLOYMENT_RUNNING,
  DEPLOYMENT_RUNNING_AUTO_PROMOTION,
  DEPLOYMENT_RUNNING_NEEDS_PROMOTION,
  DEPLOYMENT_STOPPED_JOB,
  DEPLOYMENT_SUCCESSFUL,
  type DeploymentSpec,
  type DeploymentState,
  type DeploymentStatusUpdate,
  hasAutoPromote,
  isDeploymentActive,
  requiresPromotion,
} from "../../../streams/deployments.ts";
import { type EvaluationSpec, newEvaluation, ZERO_TIME } from "../../../streams/evals.ts";
import type { TaskGroupSpec } from "../../../streams/jobs.ts";
import {
  type AllocSet,
  type DelayedReschedule,
  difference,
  filterByRescheduleable,
  filterByTainted,
  filterByTerminal,
  isLostByServer,
  liveReplacement,
  NameIndex,
  nameOrder,
  setOf,
  type TaintContext,
  union,
} from "./alloc-sets.ts";
import {
  ALLOC_LOST,
  ALLOC_MIGRATING,
  ALLOC_NOT_NEEDED,
  ALLOC_RECONNECTED,
  ALLOC_RESCHEDULED,
  ALLOC_UPDATING,
  BATCHED_FAILED_ALLOC_WINDOW_MS,
  DISCONNECT_TIMEOUT_FOLLOWUP_EVAL_DESC,
  RESCHEDULING_FOLLOWUP_EVAL_DESC,
} from "./descriptions.ts";
import { runToEnd, type Steps } from "./slices.ts";

/** Nomad's DesiredUpdates: the plan annotation per task group. */
export interface DesiredUpdates {
  Ignore: number;
  Place: number;
  Migrate: number;
  Stop: number;
  InPlaceUpdate: number;
  DestructiveUpdate: number;
  Canary: number;
  Preemptions: number;
}

export interface PlaceResult {
  readonly name: string;
  readonly tg: TaskGroupSpec;
  readonly previous?: AllocRow;
  readonly reschedule: boolean;
  readonly lost: boolean;
  /** Placed as a canary of the deployment (Nomad's allocPlaceResult.canary). */
  readonly canary?: boolean;
}

export interface DestructiveResult {
  readonly name: string;
  readonly tg: TaskGroupSpec;
  readonly stop: AllocRow;
  readonly description: string;
}

export interface StopResult {
  readonly alloc: AllocRow;
  readonly clientStatus: ClientStatus | "";
  readonly description: string;
  readonly followupEvalID: string;
}

export type UpdateKind = "ignore" | "destructive" | "inplace";

export interface ReconcileInput {
  readonly jobID: string;
  readonly namespace: string;
  /** Undefined when the job was purged; a stopped job has Stop set. */
  readonly job: JobRow | undefined;
  readonly batch: boolean;
  readonly deployment: DeploymentRow | undefined;
  readonly allocs: readonly AllocRow[];
  readonly tainted: ReadonlyMap<string, NodeRow | null>;
  readonly evalID: string;
  readonly evalPriority: number;
  readonly nowMs: number;
  readonly evalPending: (id: string) => boolean;
  readonly newID: () => string;
  /** Nomad's allocUpdateFn: whether an allocation of an older version is left, updated in place, or replaced. */
  readonly updateKind: (existing: AllocRow, tg: TaskGroupSpec) => UpdateKind;
}

export interface ReconcileResult {
  deployment: DeploymentSpec | null;
  deploymentUpdates: DeploymentStatusUpdate[];
  place: PlaceResult[];
  destructive: DestructiveResult[];
  inplace: AllocRow[];
  stop: StopResult[];
  /** Allocation → the follow-up evaluation that reschedules it later. */
  attributeUpdates: Map<string, string>;
  /** Allocation on a disconnected node → its max-disconnect-timeout evaluation. */
  disconnectUpdates: Map<string, string>;
  /** Allocations whose reconnect must be recorded (an AllocState entry). */
  reconnectUpdates: AllocRow[];
  desiredTGUpdates: Record<string, DesiredUpdates>;
  followupEvals: EvaluationSpec[];
}

const emptyUpdates = (): DesiredUpdates => ({
  Ignore: 0,
  Place: 0,
  Migrate: 0,
  Stop: 0,
  InPlaceUpdate: 0,
  DestructiveUpdate: 0,
  Canary: 0,
  Preemptions: 0,
});

/**
 * Nomad's allocReconciler for service and batch jobs: compares what runs
 * with what the job asks for and decides, per task group and in Nomad's
 * order, what to stop, replace, place and update. Pure: everything comes in
 * the input.
 */
export class Reconciler {
  private readonly result: ReconcileResult = {
    deployment: null,
    deploymentUpdates: [],
    place: [],
    destructive: [],
    inplace: [],
    stop: [],
    attributeUpdates: new Map(),
    disconnectUpdates: new Map(),
    reconnectUpdates: [],
    desiredTGUpdates: {},
    followupEvals: [],
  };
  private deployment: DeploymentSpec | undefined;
  /** The deployment cancelled by this pass (Nomad's oldDeployment): its unpromoted canaries stop. */
  private oldDeployment: DeploymentSpec | undefined;
  private deploymentPaused = false;
  private deploymentFailed = false;
  private readonly stopped: boolean;
  private readonly taint: TaintContext;

  constructor(private readonly input: ReconcileInput) {
    this.stopped = input.job === undefined || input.job.Stop;
    this.deployment = input.deployment;
    this.taint = {
      tainted: input.tainted,
      nowMs: input.nowMs,
      all: setOf(input.allocs),
      evalPending: input.evalPending,
    };
  }

  compute(): ReconcileResult {
    return runToEnd(this.steps());
  }

  /** {@link compute} with pause points: between passes over a group's allocations, and per allocation where each costs a check. */
  *steps(): Steps<ReconcileResult> {
    const matrix = this.matrix();
    yield;
    this.cancelUnneededDeployments();
    if (this.stopped) {
      for (const [group, set] of matrix) {
        const desired = emptyUpdates();
        desired.Stop = this.filterAndStopAll(filterByTerminal(set));
        this.result.desiredTGUpdates[group] = desired;
      }
      return this.result;
    }
    if (this.deployment) {
      const s = this.deployment.Status;
      this.deploymentPaused = s === "paused" || s === "pending" || s === "initializing";
      this.deploymentFailed = s === "failed";
    }
    let complete = true;
    for (const [group, set] of matrix) complete = (yield* this.computeGroup(group, set)) && complete;
    const created = this.result.deployment;
    if (created && requiresPromotion(created)) {
      this.result.deployment = {
        ...created,
        StatusDescription: hasAutoPromote(created)
          ? DEPLOYMENT_RUNNING_AUTO_PROMOTION
          : DEPLOYMENT_RUNNING_NEEDS_PROMOTION,
      };
    }
    if (this.deployment && complete) {
      // A multiregion deployment waits, complete, for its peer regions (Nomad's computeDeploymentUpdates).
      const multiregion = isMultiregion(this.input.job);
      const s = this.deployment.Status;
      if (!multiregion) {
        this.result.deploymentUpdates.push({
          DeploymentID: this.deployment.ID,
          Status: "successful",
          StatusDescription: DEPLOYMENT_SUCCESSFUL,
        });
      } else if (s !== "unblocking" && s !== "successful" && s !== "blocked") {
        this.result.deploymentUpdates.push({
          DeploymentID: this.deployment.ID,
          Status: "blocked",
          StatusDescription: DEPLOYMENT_BLOCKED,
        });
      }
    }
    // An initializing deployment (a multiregion job's, created at register)
    // has its state computed now: it goes on as pending.
    if (this.deployment?.Status === "initializing") {
      this.result.deploymentUpdates.push({
        DeploymentID: this.deployment.ID,
        Status: "pending",
        StatusDescription: DEPLOYMENT_PENDING_FOR_PEER,
      });
    }
    return this.result;
  }

  /** Nomad's allocMatrix: allocations per task group, every group of the job present. */
  private matrix(): Map<string, AllocSet> {
    const m = new Map<string, AllocSet>();
    for (const a of this.input.allocs) {
      let s = m.get(a.TaskGroup);
      if (!s) {
        s = new Map();
        m.set(a.TaskGroup, s);
      }
      s.set(a.ID, a);
    }
    if (this.input.job && !this.input.job.Stop) {
      for (const tg of this.input.job.TaskGroups) if (!m.has(tg.Name)) m.set(tg.Name, new Map());
    }
    return m;
  }

  /** Nomad's cancelUnneededDeployments: a deployment of a stopped job, or of an older job, is cancelled. */
  private cancelUnneededDeployments(): void {
    const d = this.deployment;
    if (!d) return;
    const job = this.input.job;
    let cancelled: string | undefined;
    if (this.stopped) cancelled = DEPLOYMENT_STOPPED_JOB;
    else if (d.JobCreateIndex !== job?.CreateIndex || d.JobVersion !== job.Version) {
      cancelled = DEPLOYMENT_NEWER_JOB;
    }
    if (cancelled === undefined) {
      if (d.Status === "successful") this.deployment = undefined;
      return;
    }
    this.oldDeployment = d;
    if (isDeploymentActive(d.Status)) {
      this.result.deploymentUpdates.push({
        DeploymentID: d.ID,
        Status: "cancelled",
        StatusDescription: cancelled,
      });
    }
    this.deployment = undefined;
  }

  private markStop(
    set: AllocSet,
    clientStatus: ClientStatus | "",
    description: string,
    followups?: ReadonlyMap<string, string>,
  ): void {
    for (const a of set.values()) {
      this.result.stop.push({
        alloc: a,
        clientStatus,
        description,
        followupEvalID: followups?.get(a.ID) ?? "",
      });
    }
  }

  /** Nomad's filterAndStopAll: the job (or group) is gone, everything stops. */
  private filterAndStopAll(set: AllocSet): number {
    const t = filterByTainted(set, this.taint);
    this.markStop(t.untainted, "", ALLOC_NOT_NEEDED);
    this.markStop(t.migrate, "", ALLOC_NOT_NEEDED);
    this.markStop(t.lost, "lost", ALLOC_LOST);
    this.markStop(t.disconnecting, "", ALLOC_NOT_NEEDED);
    this.markStop(t.reconnecting, "", ALLOC_NOT_NEEDED);
    const unknown: AllocSet = new Map();
    for (const [id, a] of t.ignore) if (a.ClientStatus === "unknown") unknown.set(id, a);
    this.markStop(unknown, "", ALLOC_NOT_NEEDED);
    return set.size;
  }

  private *computeGroup(group: string, allIn: AllocSet): Steps<boolean> {
    const desired = emptyUpdates();
    this.result.desiredTGUpdates[group] = desired;
    const job = this.input.job!;
    const tg = job.TaskGroups.find((g) => g.Name === group);
    if (!tg) {
      desired.Stop = this.filterAndStopAll(allIn);
      return true;
    }
    const existingState = this.deployment?.TaskGroups[group];
    const dstate: MutableDeploymentState = existingState ? { ...existingState } : newDeploymentState(tg);
    const existingDeployment = existingState !== undefined;

    let all = allIn;
    if (this.input.batch) {
      // Terminal allocations of older versions of a batch job no longer count.
      const old: AllocSet = new Map();
      for (const [id, a] of all) {
        const older = (a.Job?.Version ?? 0) < job.Version || (a.Job?.CreateIndex ?? 0) < job.CreateIndex;
        if (older && (isServerTerminal(a) || ["complete", "failed", "lost"].includes(a.ClientStatus)))
          old.set(id, a);
      }
      all = difference(all, old);
      desired.Ignore += old.size;
    }
    const kept = this.cancelUnneededCanaries(all, desired);
    const canaries = kept.canaries;
    all = kept.all;

    yield;
    let { untainted, migrate, lost, disconnecting, reconnecting, ignore } = filterByTainted(all, this.taint);
    desired.Ignore += ignore.size;
    yield;
    const active = this.deployment
      ? { ID: this.deployment.ID, active: isDeploymentActive(this.deployment.Status) }
      : undefined;
    const split = filterByRescheduleable(
      untainted,
      this.input.batch,
      false,
      this.input.nowMs,
      this.input.evalID,
      active,
    );
    untainted = split.untainted;
    let rescheduleNow = split.now;
    const rescheduleLater: DelayedReschedule[] = [...split.later];
    yield;

    if (reconnecting.size > 0) {
      const { reconnect, stop } = this.reconcileReconnecting(reconnecting, all);
      desired.Stop += stop.size;
      untainted = difference(untainted, stop);
      migrate = difference(migrate, stop);
      lost = difference(lost, stop);
      disconnecting = difference(disconnecting, stop);
      reconnecting = difference(reconnecting, stop);
      ignore = difference(ignore, stop);
      rescheduleNow = difference(rescheduleNow, stop);
      this.computeReconnecting(reconnect);
      untainted = union(untainted, reconnect);
    }

    let timeoutLater = new Map<string, string>();
    if (disconnecting.size > 0) {
      const d = filterByRescheduleable(
        disconnecting,
        this.input.batch,
        true,
        this.input.nowMs,
        this.input.evalID,
        active,
      );
      rescheduleNow = union(rescheduleNow, d.now);
      untainted = union(untainted, d.untainted);
      timeoutLater = this.createTimeoutLaterEvals(disconnecting);
    }

    const lostLater = this.delayByStopAfterClientDisconnect(lost);
    const lostLaterEvals = this.createLaterEvals(lostLater, "alloc-failure", RESCHEDULING_FOLLOWUP_EVAL_DESC);
    for (const [id, e] of timeoutLater) lostLaterEvals.set(id, e);

    this.createRescheduleLaterEvals(rescheduleLater, all);

    // Allocations waiting to reconnect are not touched, but they hold their
    // slot: counting them keeps a returning node from finding its slot taken
    // by a fresh placement (Nomad 1.6+ counts them as untainted).
    const waiting: AllocSet = new Map();
    for (const [id, a] of ignore)
      if (a.ClientStatus === "unknown" && a.DesiredStatus === "run") waiting.set(id, a);
    yield;
    const nameIndex = new NameIndex(
      this.input.jobID,
      group,
      tg.Count,
      union(untainted, migrate, rescheduleNow, lost, waiting),
    );
    yield;
    let isCanarying = dstate.DesiredCanaries !== 0 && !dstate.Promoted;
    const stop = this.computeStop(
      tg,
      nameIndex,
      untainted,
      migrate,
      lost,
      lostLaterEvals,
      canaries,
      isCanarying,
    );
    desired.Stop += stop.size;
    yield;
    untainted = difference(untainted, stop);

    yield;
    const { ignored, inplace, destructive } = yield* this.computeUpdates(tg, untainted);
    desired.Ignore += ignored.size;
    desired.InPlaceUpdate += inplace.size;
    if (!existingDeployment) dstate.DesiredTotal += destructive.size + inplace.size;

    // Canaries are neither counted nor replaced as the group's allocations until promoted.
    if (isCanarying) untainted = difference(untainted, canaries);
    const requiresCanaries =
      tg.Update !== null && destructive.size > 0 && canaries.size < tg.Update.Canary && !dstate.Promoted;
    if (requiresCanaries) this.computeCanaries(tg, dstate, destructive, canaries, desired, nameIndex);
    isCanarying = dstate.DesiredCanaries !== 0 && !dstate.Promoted;

    let underProvisionedBy = this.computeUnderProvisionedBy(tg, untainted, destructive, migrate, isCanarying);
    let place: PlaceResult[] = [];
    if (lostLater.length === 0) {
      place = this.computePlacements(tg, nameIndex, untainted, migrate, rescheduleNow, lost, waiting, all);
      yield;
      if (!existingDeployment) dstate.DesiredTotal += place.length;
    }
    const placeReady = !this.deploymentPaused && !this.deploymentFailed && !isCanarying;
    underProvisionedBy = this.computeReplacements(
      placeReady,
      desired,
      place,
      rescheduleNow,
      lost,
      underProvisionedBy,
    );
    yield;
    if (placeReady) this.computeDestructiveUpdates(destructive, underProvisionedBy, desired, tg);
    else desired.Ignore += destructive.size;
    this.computeMigrations(desired, migrate, tg);
    this.createDeployment(tg, existingDeployment, dstate, all, destructive);

    const complete =
      destructive.size +
        inplace.size +
        place.length +
        migrate.size +
        rescheduleNow.size +
        rescheduleLater.length ===
        0 && !requiresCanaries;
    if (!complete || !this.deployment) return false;
    const state = this.deployment.TaskGroups[group];
    if (!state) return true;
    return (
      state.HealthyAllocs >= Math.max(state.DesiredTotal, state.DesiredCanaries) &&
      !(state.DesiredCanaries > 0 && !state.Promoted)
    );
  }

  /**
   * Nomad's cancelUnneededCanaries: unpromoted canaries of a cancelled or
   * failed deployment stop; the current deployment's canaries on draining
   * or lost nodes stop too (without counting: the deployment goes on).
   * Returns the live canaries and the group's allocations without the stopped.
   */
  private cancelUnneededCanaries(
    original: AllocSet,
    desired: DesiredUpdates,
  ): { canaries: AllocSet; all: AllocSet } {
    const stopIDs: string[] = [];
    if (this.oldDeployment) unpromotedCanaries(this.oldDeployment, stopIDs);
    if (this.deployment?.Status === "failed") unpromotedCanaries(this.deployment, stopIDs);
    const stopSet = fromKeys(original, stopIDs);
    const live: AllocSet = new Map();
    for (const [id, a] of stopSet) if (!isServerTerminal(a)) live.set(id, a);
    this.markStop(live, "", ALLOC_NOT_NEEDED);
    desired.Stop += live.size;
    let all = difference(original, stopSet);
    let canaries: AllocSet = new Map();
    if (this.deployment) {
      const ids: string[] = [];
      for (const state of Object.values(this.deployment.TaskGroups))
        ids.push(...(state.PlacedCanaries ?? []));
      const t = filterByTainted(fromKeys(all, ids), this.taint);
      this.markStop(t.migrate, "", ALLOC_MIGRATING);
      this.markStop(t.lost, "lost", ALLOC_LOST);
      canaries = t.untainted;
      all = difference(all, t.migrate, t.lost);
    }
    return { canaries, all };
  }

  /** Nomad's computeCanaries: the canaries still missing are placed unless the deployment is paused or failed. */
  private computeCanaries(
    tg: TaskGroupSpec,
    dstate: MutableDeploymentState,
    destructive: AllocSet,
    canaries: AllocSet,
    desired: DesiredUpdates,
    nameIndex: NameIndex,
  ): void {
    const wanted = tg.Update?.Canary ?? 0;
    dstate.DesiredCanaries = wanted;
    if (this.deploymentPaused || this.deploymentFailed) return;
    const n = Math.max(0, wanted - canaries.size);
    desired.Canary += n;
    for (const name of nameIndex.nextCanaries(n, canaries, destructive))
      this.result.place.push({ name, tg, reschedule: false, lost: false, canary: true });
  }

  /** Nomad's reconcileReconnecting: the original or its replacement is kept, the other stopped. */
  private reconcileReconnecting(
    reconnecting: AllocSet,
    all: AllocSet,
  ): { reconnect: AllocSet; stop: AllocSet } {
    const stop: AllocSet = new Map();
    const job = this.input.job!;
    for (const r of reconnecting.values()) {
      if (!isServerTerminal(r) && r.ClientStatus === "failed") {
        stop.set(r.ID, r);
        this.result.stop.push({
          alloc: r,
          clientStatus: "failed",
          description: ALLOC_RESCHEDULED,
          followupEvalID: "",
        });
        continue;
      }
      const stopIt =
        r.DesiredStatus !== "run" ||
        r.DesiredTransition.Migrate === true ||
        r.DesiredTransition.Reschedule === true ||
        r.DesiredTransition.ForceReschedule === true ||
        (r.Job?.Version ?? 0) < job.Version ||
        (r.Job?.CreateIndex ?? 0) < job.CreateIndex;
      if (stopIt) {
        stop.set(r.ID, r);
        // An allocation the server already stopped needs no second stop.
        if (!isServerTerminal(r)) {
          this.result.stop.push({
            alloc: r,
            clientStatus: "",
            description: ALLOC_NOT_NEEDED,
            followupEvalID: "",
          });
        }
        continue;
      }
      for (const x of all.values()) {
        const replacement = x.ID !== r.ID && x.PreviousAllocation === r.ID ? x : undefined;
        const chained = replacement ?? chainedReplacement(r, x, all);
        if (!chained || isServerTerminal(chained)) continue;
        const keep = pickReconnectingAlloc(r, chained);
        if (keep === chained) {
          if (!stop.has(r.ID)) {
            stop.set(r.ID, r);
            this.result.stop.push({
              alloc: r,
              clientStatus: "",
              description: ALLOC_NOT_NEEDED,
              followupEvalID: "",
            });
          }
        } else if (chained.ClientStatus !== "failed" && !stop.has(chained.ID)) {
          stop.set(chained.ID, chained);
          this.result.stop.push({
            alloc: chained,
            clientStatus: "",
            description: ALLOC_RECONNECTED,
            followupEvalID: "",
          });
        }
      }
    }
    const reconnect: AllocSet = new Map();
    for (const [id, r] of reconnecting) if (!stop.has(id)) reconnect.set(id, r);
    return { reconnect, stop };
  }

  /** Nomad's computeReconnecting: a reconnect the server has not recorded yet gets its AllocState entry. */
  private computeReconnecting(reconnect: AllocSet): void {
    const job = this.input.job!;
    for (const r of reconnect.values()) {
      if (
        r.DesiredTransition.Migrate === true ||
        r.DesiredTransition.Reschedule === true ||
        r.DesiredTransition.ForceReschedule === true ||
        (r.Job?.Version ?? 0) < job.Version ||
        (r.Job?.CreateIndex ?? 0) < job.CreateIndex ||
        r.DesiredStatus !== "run" ||
        r.ClientStatus !== "running"
      ) {
        continue;
      }
      if (needsToReconnect(r)) this.result.reconnectUpdates.push(r);
    }
  }

  /** Nomad's delayByStopAfterClientDisconnect: lost allocations whose group waits before replacing them. */
  private delayByStopAfterClientDisconnect(lost: AllocSet): DelayedReschedule[] {
    const later: DelayedReschedule[] = [];
    for (const a of lost.values()) {
      const tg = a.Job?.TaskGroups.find((g) => g.Name === a.TaskGroup) as TaskGroupSpec | undefined;
      const stopAfter = tg?.StopAfterClientDisconnect;
      if (!stopAfter || stopAfter <= 0) continue;
      const lostAt = lastLostMs(a) ?? this.input.nowMs;
      const killTimeout = Math.max(0, ...(tg?.Tasks ?? []).map((t) => t.KillTimeout ?? 0));
      const at = lostAt + (stopAfter + killTimeout) / 1e6;
      if (at > this.input.nowMs) later.push({ alloc: a, at });
    }
    return later;
  }

  /** Nomad's createTimeoutLaterEvals: one max-disconnect-timeout evaluation per 5 s batch of disconnects. */
  private createTimeoutLaterEvals(disconnecting: AllocSet): Map<string, string> {
    const delays: DelayedReschedule[] = [];
    for (const a of disconnecting.values()) {
      const window = maxClientDisconnectMs(a);
      if (window === undefined) continue;
      // Its disconnect already has a timeout evaluation waiting (an earlier
      // pass placed no replacement): one per disconnect.
      if (
        a.ClientStatus === "unknown" &&
        a.FollowupEvalID !== "" &&
        this.input.evalPending(a.FollowupEvalID)
      ) {
        continue;
      }
      delays.push({ alloc: a, at: this.input.nowMs + window });
    }
    const ids = this.createLaterEvals(
      delays,
      "max-disconnect-timeout",
      DISCONNECT_TIMEOUT_FOLLOWUP_EVAL_DESC,
      true,
    );
    for (const d of delays) this.result.disconnectUpdates.set(d.alloc.ID, ids.get(d.alloc.ID)!);
    return ids;
  }

  /** Nomad's createRescheduleLaterEvals: failed allocations get their follow-up evaluation ID. */
  private createRescheduleLaterEvals(later: readonly DelayedReschedule[], all: AllocSet): void {
    const ids = this.createLaterEvals(later, "alloc-failure", RESCHEDULING_FOLLOWUP_EVAL_DESC);
    for (const d of later) {
      if (!all.has(d.alloc.ID)) continue;
      const evalID = ids.get(d.alloc.ID)!;
      if (this.result.disconnectUpdates.has(d.alloc.ID))
        this.result.disconnectUpdates.set(d.alloc.ID, evalID);
      else this.result.attributeUpdates.set(d.alloc.ID, evalID);
    }
  }

  /**
   * Nomad's createLostLaterEvals: follow-up evaluations with WaitUntil,
   * batched so that allocations due within 5 s of the batch's first share
   * one. Returns allocation ID → evaluation ID.
   */
  private createLaterEvals(
    later: readonly DelayedReschedule[],
    trigger: string,
    description: string,
    describeEvery = false,
  ): Map<string, string> {
    const ids = new Map<string, string>();
    if (later.length === 0) return ids;
    const job = this.input.job!;
    const sorted = [...later].sort((a, b) => a.at - b.at);
    let batchStart = sorted[0]!.at;
    const make = (at: number, first: boolean): EvaluationSpec =>
      newEvaluation({
        ID: this.input.newID(),
        Namespace: job.Namespace,
        Priority: this.input.evalPriority,
        Type: job.Type,
        TriggeredBy: trigger,
        JobID: job.ID,
        JobModifyIndex: job.ModifyIndex,
        Status: "pending",
        StatusDescription: first || describeEvery ? description : "",
        WaitUntil: goTime(at),
        CreateTime: this.input.nowMs * 1e6,
      });
    let current = make(batchStart, true);
    this.result.followupEvals.push(current);
    for (const d of sorted) {
      if (d.at - batchStart >= BATCHED_FAILED_ALLOC_WINDOW_MS) {
        batchStart = d.at;
        current = make(batchStart, false);
        this.result.followupEvals.push(current);
      }
      ids.set(d.alloc.ID, current.ID);
    }
    return ids;
  }

  /** Nomad's computeStop: lost allocations, then the excess over the count, highest name index first. */
  private computeStop(
    tg: TaskGroupSpec,
    nameIndex: NameIndex,
    untaintedIn: AllocSet,
    migrate: AllocSet,
    lost: AllocSet,
    followups: ReadonlyMap<string, string>,
    canaries: AllocSet,
    isCanarying: boolean,
  ): AllocSet {
    const stop: AllocSet = new Map(lost);
    // Already stopped and lost (by the heartbeat path, or an earlier pass): nothing to write again.
    const toStop: AllocSet = new Map();
    for (const [id, a] of lost) if (!isLostByServer(a) || followups.has(id)) toStop.set(id, a);
    this.markStop(toStop, "lost", ALLOC_LOST, followups);
    // Canaries of a deployment still canarying are not the group's to stop.
    const considered = isCanarying ? difference(untaintedIn, canaries) : untaintedIn;
    let known = 0;
    for (const a of considered.values()) if (a.ClientStatus !== "unknown") known++;
    let remove = known + migrate.size - tg.Count;
    if (remove <= 0) return stop;
    const untainted = filterByTerminal(considered);
    const stopNotNeeded = (id: string, a: AllocRow) => {
      stop.set(id, a);
      this.result.stop.push({
        alloc: a,
        clientStatus: "",
        description: ALLOC_NOT_NEEDED,
        followupEvalID: "",
      });
    };
    // Promoted: the old allocations that share a canary's name go first.
    if (!isCanarying && canaries.size > 0) {
      const canaryNames = new Set<string>();
      for (const a of canaries.values()) canaryNames.add(a.Name);
      for (const [id, a] of [...untainted]) {
        if (canaries.has(id) || !canaryNames.has(a.Name)) continue;
        stopNotNeeded(id, a);
        untainted.delete(id);
        if (--remove === 0) return stop;
      }
    }
    if (migrate.size > 0) {
      const migrating = new NameIndex(this.input.jobID, tg.Name, tg.Count, migrate);
      const names = migrating.highest(remove);
      for (const [id, a] of [...migrate]) {
        if (!names.has(a.Name)) continue;
        stopNotNeeded(id, a);
        migrate.delete(id);
        nameIndex.unset(allocIndexOf(a));
        if (--remove === 0) return stop;
      }
    }
    // The highest-numbered names first, then any (Nomad's computeStop).
    const names = nameIndex.highest(remove);
    for (const [id, a] of [...untainted]) {
      if (!names.has(a.Name)) continue;
      stopNotNeeded(id, a);
      untainted.delete(id);
      if (--remove === 0) return stop;
    }
    for (const [id, a] of [...untainted]) {
      stopNotNeeded(id, a);
      untainted.delete(id);
      if (--remove === 0) return stop;
    }
    return stop;
  }

  private *computeUpdates(
    tg: TaskGroupSpec,
    untainted: AllocSet,
  ): Steps<{ ignored: AllocSet; inplace: AllocSet; destructive: AllocSet }> {
    const ignored: AllocSet = new Map();
    const inplace: AllocSet = new Map();
    const destructive: AllocSet = new Map();
    for (const [id, a] of untainted) {
      const kind = this.input.updateKind(a, tg);
      if (kind === "ignore") ignored.set(id, a);
      else if (kind === "destructive") destructive.set(id, a);
      else {
        inplace.set(id, a);
        this.result.inplace.push(a);
      }
      yield;
    }
    return { ignored, inplace, destructive };
  }

  /** Nomad's computeUnderProvisionedBy: how many changes the update strategy allows now. */
  private computeUnderProvisionedBy(
    tg: TaskGroupSpec,
    untainted: AllocSet,
    destructive: AllocSet,
    migrate: AllocSet,
    isCanarying: boolean,
  ): number {
    const update = tg.Update;
    if (!update || update.MaxParallel === 0 || destructive.size + migrate.size === 0) return tg.Count;
    if (!this.deployment) return update.MaxParallel;
    if (this.deploymentPaused || this.deploymentFailed || isCanarying) return 0;
    let limit = update.MaxParallel;
    for (const a of untainted.values()) {
      if (a.DeploymentID !== this.deployment.ID) continue;
      if (a.DeploymentStatus?.Healthy === false) return 0;
      if (a.DeploymentStatus?.Healthy !== true) limit--;
    }
    return Math.max(0, limit);
  }

  /** Nomad's computePlacements: replacements of rescheduled and lost allocations, then fresh names up to the count. */
  private computePlacements(
    tg: TaskGroupSpec,
    nameIndex: NameIndex,
    untainted: AllocSet,
    migrate: AllocSet,
    reschedule: AllocSet,
    lost: AllocSet,
    waiting: AllocSet,
    all: AllocSet,
  ): PlaceResult[] {
    const place: PlaceResult[] = [];
    for (const a of reschedule.values())
      place.push({ name: a.Name, tg, previous: a, reschedule: true, lost: false, canary: isCanary(a) });
    let existing = untainted.size + migrate.size + reschedule.size;
    const held = new Set<string>();
    for (const set of [untainted, migrate, reschedule]) for (const a of set.values()) held.add(a.Name);
    for (const a of waiting.values()) {
      if (liveReplacement(a, all) !== undefined) continue;
      existing++;
      held.add(a.Name);
    }
    // The most recent first: when an allocation and its replacement were
    // both lost, the replacement (the end of the chain) is the one replaced.
    const byRecency = [...lost.values()].sort((x, y) => y.CreateIndex - x.CreateIndex);
    for (const a of byRecency) {
      if (existing >= tg.Count) break;
      // Lost earlier and replaced already (the replacement is untainted), or
      // a slot another allocation holds or is being placed into: one per name.
      if (liveReplacement(a, all) !== undefined || held.has(a.Name)) continue;
      existing++;
      held.add(a.Name);
      place.push({ name: a.Name, tg, previous: a, reschedule: false, lost: true, canary: isCanary(a) });
    }
    if (existing < tg.Count) {
      for (const name of nameIndex.next(tg.Count - existing))
        place.push({ name, tg, reschedule: false, lost: false });
    }
    return place;
  }

  /** Nomad's computeReplacements. */
  private computeReplacements(
    placeReady: boolean,
    desired: DesiredUpdates,
    place: readonly PlaceResult[],
    rescheduleNow: AllocSet,
    lost: AllocSet,
    underProvisionedBy: number,
  ): number {
    const failed: AllocSet = new Map();
    for (const [id, a] of rescheduleNow) {
      if (!this.result.disconnectUpdates.has(id) && a.ClientStatus !== "unknown") failed.set(id, a);
    }
    if (placeReady) {
      desired.Place += place.length;
      this.result.place.push(...place);
      this.markStop(failed, "", ALLOC_RESCHEDULED);
      desired.Stop += failed.size;
      return underProvisionedBy - Math.min(place.length, underProvisionedBy);
    }
    if (lost.size > 0) {
      const allowed = Math.min(lost.size, place.length);
      desired.Place += allowed;
      this.result.place.push(...place.slice(0, allowed));
    }
    if (rescheduleNow.size === 0 || place.length === 0) return underProvisionedBy;
    for (const p of place) {
      const prev = p.previous;
      const partOfFailed =
        this.deploymentFailed && prev !== undefined && this.deployment?.ID === prev.DeploymentID;
      if (partOfFailed || !p.reschedule || !prev) continue;
      this.result.place.push(p);
      desired.Place++;
      if (this.result.disconnectUpdates.has(prev.ID)) continue;
      this.result.stop.push({
        alloc: prev,
        clientStatus: "",
        description: ALLOC_RESCHEDULED,
        followupEvalID: "",
      });
      desired.Stop++;
    }
    return underProvisionedBy;
  }

  private computeDestructiveUpdates(
    destructive: AllocSet,
    underProvisionedBy: number,
    desired: DesiredUpdates,
    tg: TaskGroupSpec,
  ): void {
    const n = Math.min(destructive.size, underProvisionedBy);
    desired.DestructiveUpdate += n;
    desired.Ignore += destructive.size - n;
    for (const a of nameOrder(destructive).slice(0, n)) {
      this.result.destructive.push({ name: a.Name, tg, stop: a, description: ALLOC_UPDATING });
    }
  }

  private computeMigrations(desired: DesiredUpdates, migrate: AllocSet, tg: TaskGroupSpec): void {
    desired.Migrate += migrate.size;
    for (const a of nameOrder(migrate)) {
      this.result.stop.push({ alloc: a, clientStatus: "", description: ALLOC_MIGRATING, followupEvalID: "" });
      this.result.place.push({
        name: a.Name,
        tg,
        previous: a,
        reschedule: false,
        lost: false,
        canary: isCanary(a),
      });
    }
  }

  /** Nomad's createDeployment: the first run of a version with an update strategy gets a deployment. */
  private createDeployment(
    tg: TaskGroupSpec,
    existingDeployment: boolean,
    dstate: MutableDeploymentState,
    all: AllocSet,
    destructive: AllocSet,
  ): void {
    if (existingDeployment || !tg.Update || tg.Update.MaxParallel === 0 || dstate.DesiredTotal === 0) return;
    const job = this.input.job!;
    const updatingSpec = destructive.size > 0 || this.result.inplace.length > 0;
    let hadRunning = false;
    for (const a of all.values()) {
      if (a.Job?.Version === job.Version && a.Job?.CreateIndex === job.CreateIndex) {
        hadRunning = true;
        break;
      }
    }
    if (hadRunning && !updatingSpec) return;
    if (!this.deployment) {
      const now = this.input.nowMs * 1e6;
      this.deployment = {
        ID: this.input.newID(),
        Namespace: job.Namespace,
        JobID: job.ID,
        JobVersion: job.Version,
        JobModifyIndex: job.ModifyIndex,
        JobSpecModifyIndex: job.JobModifyIndex,
        JobCreateIndex: job.CreateIndex,
        IsMultiregion: isMultiregion(job),
        TaskGroups: {},
        Status: "running",
        StatusDescription: DEPLOYMENT_RUNNING,
        EvalPriority: this.input.evalPriority,
        CreateTime: now,
        ModifyTime: now,
      };
      this.result.deployment = this.deployment;
    }
    this.deployment = {
      ...this.deployment,
      TaskGroups: { ...this.deployment.TaskGroups, [tg.Name]: dstate },
    };
    if (this.result.deployment && this.result.deployment.ID === this.deployment.ID)
      this.result.deployment = this.deployment;
  }
}

/** Nomad's Job.IsMultiregion: a multiregion block naming regions. */
function isMultiregion(job: JobRow | undefined): boolean {
  const m = (job as { Multiregion?: { Regions?: readonly unknown[] | null } | null } | undefined)
    ?.Multiregion;
  return (m?.Regions?.length ?? 0) > 0;
}

const isCanary = (a: AllocRow): boolean => a.DeploymentStatus?.Canary === true;

function fromKeys(set: AllocSet, ids: readonly string[]): AllocSet {
  const out: AllocSet = new Map();
  for (const id of ids) {
    const a = set.get(id);
    if (a) out.set(id, a);
  }
  return out;
}

type MutableDeploymentState = { -readonly [K in keyof DeploymentState]: DeploymentState[K] };

function newDeploymentState(tg: TaskGroupSpec): MutableDeploymentState {
  return {
    AutoRevert: tg.Update?.AutoRevert ?? false,
    AutoPromote: tg.Update?.AutoPromote ?? false,
    ProgressDeadline: tg.Update?.ProgressDeadline ?? 0,
    RequireProgressBy: ZERO_TIME,
    Promoted: false,
    PlacedCanaries: null,
    DesiredCanaries: 0,
    DesiredTotal: 0,
    PlacedAllocs: 0,
    HealthyAllocs: 0,
    UnhealthyAllocs: 0,
  };
}

/** A replacement further down the chain of `r` (r → stopped replacement → live one). */
function chainedReplacement(r: AllocRow, x: AllocRow, all: AllocSet): AllocRow | undefined {
  let prev = x.PreviousAllocation;
  for (let hops = 0; prev !== "" && hops < 100; hops++) {
    if (prev === r.ID) return hops > 0 ? x : undefined;
    const p = all.get(prev);
    if (!p || !isServerTerminal(p)) return undefined;
    prev = p.PreviousAllocation;
  }
  return undefined;
}

/**
 * Nomad's pickReconnectingAlloc: the replacement is kept when it runs a newer
 * job version, or scores better and (runs, or the original does not);
 * otherwise the original. Not commutative: the original is preferred.
 */
export function pickReconnectingAlloc(original: AllocRow, replacement: AllocRow): AllocRow {
  const newer =
    (replacement.Job?.Version ?? 0) > (original.Job?.Version ?? 0) ||
    (replacement.Job?.CreateIndex ?? 0) > (original.Job?.CreateIndex ?? 0);
  if (newer) return replacement;
  const o = maxNormScore(original);
  const r = maxNormScore(replacement);
  const better = (o === undefined && r !== undefined) || (o !== undefined && r !== undefined && r > o);
  if (better && (replacement.ClientStatus === "running" || original.ClientStatus !== "running"))
    return replacement;
  return original;
}

function maxNormScore(a: AllocRow): number | undefined {
  const meta = (a.Metrics as { ScoreMetaData?: { NormScore?: number }[] | null } | null)?.ScoreMetaData;
  const first = meta?.[0];
  return typeof first?.NormScore === "number" ? first.NormScore : undefined;
}

function allocIndexOf(a: AllocRow): number {
  const open = a.Name.lastIndexOf("[");
  return open < 0 ? 0 : Number(a.Name.slice(open + 1, -1)) || 0;
}

/** When the allocation was marked lost (its last `lost` AllocState), in ms. */
function lastLostMs(a: AllocRow): number | undefined {
  let last: number | undefined;
  for (const s of a.AllocStates ?? []) {
    if (s.Value !== "lost") continue;
    const t = Date.parse(s.Time);
    if (!Number.isNaN(t)) last = t;
  }
  return last ?? lastUnknownMs(a);
}

/**
 * The canaries of `d` not promoted, added to `into`. A module function, not
 * a closure per call: under tsx each closure made costs a defineProperty of
 * its name (`__name`), on every group of every evaluation.
 */
function unpromotedCanaries(d: DeploymentSpec, into: string[]): void {
  for (const state of Object.values(d.TaskGroups))
    if (!state.Promoted) into.push(...(state.PlacedCanaries ?? []));
}
