import { randomUUID } from "node:crypto";
import { filter, type Subscription } from "rxjs";
import type { AllocRow } from "../../../projections/allocs.ts";
import type { EvaluationRow } from "../../../projections/evals.ts";
import type { JobRow } from "../../../projections/jobs.ts";
import type { NodeRow } from "../../../projections/nodes.ts";
import { currentSchedulerConfig } from "../../../projections/scheduler-config.ts";
import { isClientTerminal } from "../../../streams/allocs.ts";
import {
  type EvaluationSpec,
  type EvaluationsUpserted,
  isTerminalEvalStatus,
  newEvaluation,
} from "../../../streams/evals.ts";
import type { EnvelopeCodec } from "../../codec/envelope-codec.ts";
import { PlanIdentities } from "../../identity/plan-identities.ts";
import type { Keyring } from "../../keyring/keyring.ts";
import type { Change } from "../../store/projection.ts";
import type { Draft, Written } from "../../store/writer.ts";
import type { Timer } from "../../util/clock.ts";
import type { LeaderService, ServiceContext } from "../service.ts";
import { BlockedEvals, type VolumeAsk } from "./blocked-evals.ts";
import { threadPass } from "./computed-pass.ts";
import { CANCELED_BY_NEWER_EVAL, DELIVERY_LIMIT_REACHED, DUPLICATE_BLOCKED_EVAL } from "./descriptions.ts";
import { type BrokerOptions, DEFAULT_BROKER_OPTIONS, EvalBroker } from "./eval-broker.ts";
import { specOf } from "./eval-update.ts";
import { NO_LABELS, NO_METRICS, PIPELINE_TIMINGS, type SchedulerMetricsSink } from "./pipeline-metrics.ts";
import { PlanQueue, type PlanQueueStats } from "./plan-queue.ts";
import { isReadyNode, ReadyNodes, readinessChanged } from "./ready-nodes.ts";
import { jobOf, jobUnknown } from "./scheduler-context.ts";
import type { SchedulerThreads } from "./threads/scheduler-threads.ts";
import { Utilization } from "./utilization.ts";
import { computeInSlices, type SchedulePass, Worker, type WorkerRuntime } from "./worker.ts";
import {
  CORE_SCHEDULER,
  isValidWorkerPool,
  SCHEDULER_TYPES,
  type SchedulerWorkerPool,
  type WorkerInfo,
  type WorkerPoolConfig,
  workerPoolChanged,
} from "./worker-pool.ts";

/** Nomad's failedEvalUnblockInterval. */
const UNBLOCK_FAILED_EVERY_MS = 60_000;
/** Nomad's EvalFailedFollowupBaselineDelay and EvalFailedFollowupDelayRange. */
const FAILED_FOLLOWUP_BASE_MS = 60_000;
const FAILED_FOLLOWUP_RANGE_MS = 300_000;
/** Nomad's cancel reaper batch. */
const CANCEL_BATCH = 728;

/** Workers a server runs unless told otherwise. */
export const DEFAULT_WORKERS = 4;
/**
 * Evaluations each worker keeps in flight unless told otherwise. With one
 * each, the event loop sat idle 37% of a 500-evaluation drain waiting on
 * fdatasync; with four, 8%, at a third of the appends (src/bench/pipeline-bench.ts).
 * The price: plans computed before their neighbours' applied conflict more
 * on a nearly full cluster (refused at apply, planned again).
 */
export const DEFAULT_DEPTH = 4;

/** Plan queue appends under way at once (see PlanQueueOptions.maxAppends). */
export const PLAN_APPENDS_IN_FLIGHT = 2;

/** What `/v1/metrics` reads of the pipeline. */
export interface PipelineStats {
  readonly planQueue: PlanQueueStats;
  /** Workers with an evaluation in hand now, and the share of the last 10 s they had one. */
  readonly workersBusy: number;
  readonly workerUtilization: number;
  readonly workers: number;
}

export interface SchedulerOptions {
  /** Concurrent workers: computing is single-threaded, so more of them only overlap log writes. */
  readonly workers?: number;
  /** Evaluations each worker keeps in flight (see Worker). */
  readonly depth?: number;
  /** Where passes are computed; in process, at once, when absent (and without `threads`). */
  readonly schedule?: SchedulePass;
  /**
   * Scheduler threads (config `scheduler_workers`): passes are computed on
   * their replicas, and in process, in slices, while none is ready.
   */
  readonly threads?: { readonly pool: SchedulerThreads; readonly codec: EnvelopeCodec };
  readonly broker?: Partial<BrokerOptions>;
  readonly newID?: () => string;
  readonly random?: () => number;
  /**
   * The server's root key material: plans stamp their allocations with the
   * active key and sign their workload identities. Without it (tests of the
   * scheduler alone), allocations are placed without identities.
   */
  readonly keyring?: Keyring;
}

/**
 * The scheduler, a leader-only service. Everything it does is a reaction to
 * projection changes: pending evaluations go to the broker, blocked ones to
 * the blocked tracker, node and allocation changes release blocked ones,
 * the scheduler configuration pauses and resumes the broker. Workers take
 * evaluations from the broker and write plans and evaluation updates, fenced
 * by the leadership epoch. All of it is rebuilt from the evals table when
 * leadership starts.
 */
export class SchedulerService implements LeaderService, SchedulerWorkerPool {
  readonly name = "scheduler";
  private ctx: ServiceContext | undefined;
  private broker: EvalBroker | undefined;
  private blocked: BlockedEvals | undefined;
  private readyNodes: ReadyNodes | undefined;
  private subscription: Subscription | undefined;
  private workers: Worker[] = [];
  private runtime: WorkerRuntime | undefined;
  /** Every worker loop not yet ended, retired ones included: stop() waits for them all. */
  private readonly running = new Set<Promise<void>>();
  private pool: WorkerPoolConfig;
  private depth: number;
  private unblockTimer: Timer | undefined;
  private readonly inFlight = new Set<Promise<unknown>>();
  private paused = true;
  private planQueue: PlanQueue | undefined;
  private readonly utilization = new Utilization();
  private metrics: SchedulerMetricsSink = NO_METRICS;
  /** Evaluations processed, plans submitted, and passes computed on a scheduler thread. */
  readonly counters = { evals: 0, plans: 0, onThreads: 0 };
  private readonly newID: () => string;
  private readonly random: () => number;

  constructor(private readonly options: SchedulerOptions = {}) {
    this.newID = options.newID ?? randomUUID;
    this.random = options.random ?? Math.random;
    this.pool = {
      NumSchedulers: Math.max(1, options.workers ?? DEFAULT_WORKERS),
      EnabledSchedulers: [...SCHEDULER_TYPES, CORE_SCHEDULER],
    };
    this.depth = Math.max(1, Math.floor(options.depth ?? DEFAULT_DEPTH));
  }

  workerConfig(): WorkerPoolConfig {
    return { NumSchedulers: this.pool.NumSchedulers, EnabledSchedulers: [...this.pool.EnabledSchedulers] };
  }

  /**
   * Nomad's SetSchedulerWorkerConfig: this server's pool, kept in memory as
   * Nomad keeps it (a restart goes back to the default). Only the leader
   * runs workers here, so on a follower it takes effect when it leads. The
   * old workers finish the evaluation in hand and take no other.
   */
  setWorkerConfig(config: WorkerPoolConfig): WorkerPoolConfig {
    if (!isValidWorkerPool(config) || !workerPoolChanged(config, this.pool)) return this.workerConfig();
    this.pool = { NumSchedulers: config.NumSchedulers, EnabledSchedulers: [...config.EnabledSchedulers] };
    if (this.runtime) {
      for (const w of this.workers) w.stop();
      this.startWorkers(this.runtime);
    }
    this.ctx?.logger.info(
      { workers: this.pool.NumSchedulers, schedulers: this.pool.EnabledSchedulers },
      "scheduler workers reconfigured",
    );
    return this.workerConfig();
  }

  /** Evaluations each worker keeps in flight; running workers finish theirs and are replaced. */
  setDepth(depth: number): void {
    const next = Math.max(1, Math.floor(depth));
    if (next === this.depth) return;
    this.depth = next;
    if (!this.runtime) return;
    this.runtime = { ...this.runtime, depth: next };
    for (const w of this.workers) w.stop();
    this.startWorkers(this.runtime);
  }

  workersInfo(): readonly WorkerInfo[] {
    return this.workers.map((w) => w.info());
  }

  private startWorkers(runtime: WorkerRuntime): void {
    const enabled = [...this.pool.EnabledSchedulers];
    const types = SCHEDULER_TYPES.filter((t) => enabled.includes(t));
    this.workers = Array.from(
      { length: this.pool.NumSchedulers },
      // Worker IDs are not state: not drawn from newID, whose sequence tests replay.
      () => new Worker(runtime, { id: randomUUID(), types, enabled, startedAt: runtime.clock.now() }),
    );
    for (const w of this.workers) {
      const loop = w.run();
      this.running.add(loop);
      void loop.finally(() => this.running.delete(loop));
    }
  }

  /** Where the pipeline's timings go (the server's metrics registry). */
  setMetrics(sink: SchedulerMetricsSink): void {
    this.metrics = sink;
  }

  /** The plan queue and the workers, for `/v1/metrics`. */
  pipelineStats(): PipelineStats {
    const workers = this.runtime ? this.workers.length : 0;
    return {
      planQueue: this.planQueue?.stats() ?? { depth: 0, inFlight: 0, appends: 0, records: 0, submissions: 0 },
      workersBusy: this.utilization.busy,
      workerUtilization: this.utilization.fraction(workers),
      workers,
    };
  }

  /** The broker while leading (tests and benchmarks look at its queues). */
  get evalBroker(): EvalBroker | undefined {
    return this.broker;
  }

  get blockedEvals(): BlockedEvals | undefined {
    return this.blocked;
  }

  /** Nothing ready, in flight or being written: what tests wait for before looking at the tables. */
  get idle(): boolean {
    const s = this.broker?.stats();
    return !s || (s.ready === 0 && s.unacked === 0 && s.pending === 0 && this.inFlight.size === 0);
  }

  start(ctx: ServiceContext): void {
    this.ctx = ctx;
    const broker = new EvalBroker(
      ctx.clock,
      {
        onFailed: (e) => this.track(this.fail(ctx, broker, e)),
        onCancelable: (evals) => this.track(this.cancel(ctx, evals, CANCELED_BY_NEWER_EVAL)),
      },
      { ...DEFAULT_BROKER_OPTIONS, ...this.options.broker },
    );
    const blocked = new BlockedEvals(broker, {
      onDuplicates: (evals) =>
        this.track(this.cancel(ctx, evals, evals[0] ? DUPLICATE_BLOCKED_EVAL(evals[0].JobID) : "")),
      volumesOf: (e) => jobVolumeAsks(jobOf(ctx.tables, e.Namespace, e.JobID)),
    });
    const readyNodes = new ReadyNodes(ctx.tables.nodes);
    this.broker = broker;
    this.blocked = blocked;
    this.readyNodes = readyNodes;

    this.subscription = ctx.store.change$
      .pipe(filter((c) => WATCHED.has(c.table)))
      .subscribe({ next: (c) => this.changed(c), error: () => undefined });
    this.paused = true;
    this.setPaused(currentSchedulerConfig(ctx.tables.schedulerConfig).PauseEvalBroker);

    const logger = ctx.logger.child({ component: "scheduler" });
    const metrics: SchedulerMetricsSink = {
      sample: (...args) => this.metrics.sample(...args),
      incr: (...args) => this.metrics.incr(...args),
    };
    const planQueue = new PlanQueue((drafts) => ctx.write(drafts), {
      maxAppends: PLAN_APPENDS_IN_FLIGHT,
      onAppended: (ms) =>
        metrics.sample(PIPELINE_TIMINGS.planApply[0], ms, NO_LABELS, PIPELINE_TIMINGS.planApply[1]),
    });
    this.planQueue = planQueue;
    const identities = this.options.keyring && new PlanIdentities(this.options.keyring, logger);
    const runtime: WorkerRuntime = {
      tables: ctx.tables,
      broker,
      blocked,
      readyNodes,
      clock: ctx.clock,
      logger,
      newID: this.newID,
      appliedIndex: () => ctx.store.appliedIndex,
      write: async (drafts) => {
        const started = performance.now();
        const written = await planQueue.submit(drafts);
        // Nomad's plan.submit times plans only: evaluation updates do not go through its plan queue.
        if (!drafts.some((d) => d.type === "AllocsPlanApplied")) return written;
        metrics.sample(
          PIPELINE_TIMINGS.planSubmit[0],
          performance.now() - started,
          NO_LABELS,
          PIPELINE_TIMINGS.planSubmit[1],
        );
        return written;
      },
      counters: this.counters,
      identities,
      schedule:
        this.options.schedule ??
        (this.options.threads &&
          onThreads(ctx, this.options.threads, readyNodes, this.newID, identities, this.counters)),
      offThread: offThread(this.options),
      depth: this.depth,
      metrics,
      utilization: this.utilization,
    };
    this.runtime = runtime;
    this.startWorkers(runtime);
    const tick = () => {
      this.blocked?.unblockFailed();
      this.unblockTimer = ctx.clock.setTimeout(tick, UNBLOCK_FAILED_EVERY_MS);
    };
    this.unblockTimer = ctx.clock.setTimeout(tick, UNBLOCK_FAILED_EVERY_MS);
  }

  async stop(): Promise<void> {
    this.subscription?.unsubscribe();
    this.subscription = undefined;
    this.runtime = undefined;
    if (this.unblockTimer && this.ctx) this.ctx.clock.clearTimeout(this.unblockTimer);
    for (const w of this.workers) w.stop();
    this.broker?.close();
    this.blocked?.setEnabled(false);
    await Promise.allSettled([...this.running]);
    await Promise.allSettled([...this.inFlight]);
    this.workers = [];
    this.planQueue = undefined;
    this.ctx = undefined;
  }

  private setPaused(paused: boolean): void {
    if (this.paused === paused) return;
    this.paused = paused;
    this.broker!.setEnabled(!paused);
    this.blocked!.setEnabled(!paused);
    if (!paused) this.restore();
  }

  /** Nomad's restoreEvals: pending evaluations to the broker, blocked ones to the tracker, oldest first. */
  private restore(): void {
    for (const e of this.ctx!.tables.evals.list()) {
      if (!this.brokered(e)) continue;
      if (e.Status === "pending") this.broker!.enqueue(e);
      else if (e.Status === "blocked") this.blocked!.block(e);
    }
  }

  private changed(c: Change): void {
    switch (c.table) {
      case "evals":
        this.evalChanged(c.before as EvaluationRow | undefined, c.after as EvaluationRow | undefined);
        return;
      case "nodes": {
        const before = c.before as NodeRow | undefined;
        const after = c.after as NodeRow | undefined;
        if (!readinessChanged(before, after)) {
          // A node plugin that appears or turns healthy: the CSI check is not cached by class.
          if (before && after && isReadyNode(after) && csiNodePluginsChanged(before, after))
            this.blocked!.unblock(after.ComputedClass, c.index);
          return;
        }
        this.readyNodes!.invalidate();
        if (after && isReadyNode(after)) this.blocked!.unblock(after.ComputedClass, c.index);
        return;
      }
      case "csi_volumes": {
        const after = c.after as ClaimedVolume | undefined;
        if (after && claimsFreed(c.before as ClaimedVolume | undefined, after))
          this.blocked!.unblockVolume(after.Namespace, after.ID, c.index);
        return;
      }
      case "allocs": {
        const before = c.before as AllocRow | undefined;
        const after = c.after as AllocRow | undefined;
        if (!before || !after) return;
        // Capacity frees when the client is done with it or the scheduler stopped it.
        const finished = !isClientTerminal(before) && isClientTerminal(after);
        const stopped = before.DesiredStatus === "run" && after.DesiredStatus !== "run";
        if (!finished && !stopped) return;
        const node = this.ctx!.tables.nodes.get(after.NodeID);
        if (node) this.blocked!.unblock(node.ComputedClass, c.index);
        return;
      }
      case "scheduler_config":
        this.setPaused(currentSchedulerConfig(this.ctx!.tables.schedulerConfig).PauseEvalBroker);
        return;
    }
  }

  private evalChanged(before: EvaluationRow | undefined, after: EvaluationRow | undefined): void {
    if (!after) {
      if (before) this.blocked!.remove(before.ID);
      return;
    }
    if (!this.brokered(after)) return;
    if (after.Status === "pending" && before?.Status !== "pending") this.broker!.enqueue(after);
    else if (after.Status === "blocked" && before?.Status !== "blocked") this.blocked!.block(after);
    else if (before?.Status === "blocked" && isTerminalEvalStatus(after.Status))
      this.blocked!.remove(after.ID);
    if (after.Status === "complete" && isEmpty(after.FailedTGAllocs))
      this.blocked!.untrack(after.Namespace, after.JobID);
  }

  /**
   * Whether an evaluation is the scheduler's: not one of a job this cluster
   * never recorded (no row, no version), which there is nothing to reconcile
   * against and nothing of the scheduler's to stop; such evaluations (test
   * fixtures, hand-written records) are left exactly as written.
   */
  private brokered(e: EvaluationRow): boolean {
    return e.Type === "_core" ? false : !jobUnknown(this.ctx!.tables, e.Namespace, e.JobID);
  }

  /** Nomad's failed-eval reaper: failed at the delivery limit, with a failed-follow-up evaluation later. */
  private async fail(ctx: ServiceContext, broker: EvalBroker, e: EvaluationRow): Promise<void> {
    const now = ctx.clock.now();
    const current = ctx.tables.evals.get(e.ID) ?? e;
    const wait = FAILED_FOLLOWUP_BASE_MS + Math.floor(this.random() * FAILED_FOLLOWUP_RANGE_MS);
    const followup = newEvaluation({
      ID: this.newID(),
      Namespace: e.Namespace,
      Priority: e.Priority,
      Type: e.Type,
      TriggeredBy: "failed-follow-up",
      JobID: e.JobID,
      JobModifyIndex: e.JobModifyIndex,
      PreviousEval: e.ID,
      Wait: wait * 1e6,
      CreateTime: now * 1e6,
    });
    const failed: EvaluationSpec = {
      ...specOf(current),
      Status: "failed",
      StatusDescription: DELIVERY_LIMIT_REACHED(DEFAULT_BROKER_OPTIONS.deliveryLimit),
      NextEval: followup.ID,
      ModifyTime: Math.max(now * 1e6, current.CreateTime + 1),
    };
    try {
      const data: EvaluationsUpserted = { Evals: [failed, followup] };
      await this.write(ctx, [{ type: "EvaluationsUpserted", v: 1, data }]);
    } finally {
      broker.ackFailed(e);
    }
  }

  /** Marks evaluations canceled (superseded pending ones, duplicate blocked ones), in batches. */
  private async cancel(
    ctx: ServiceContext,
    evals: readonly EvaluationRow[],
    description: string,
  ): Promise<void> {
    const now = ctx.clock.now() * 1e6;
    const canceled: EvaluationSpec[] = [];
    for (const e of evals) {
      const current = ctx.tables.evals.get(e.ID);
      if (!current || isTerminalEvalStatus(current.Status)) continue;
      canceled.push({
        ...specOf(current),
        Status: "canceled",
        StatusDescription: description,
        ModifyTime: Math.max(now, current.CreateTime + 1),
      });
    }
    for (let i = 0; i < canceled.length; i += CANCEL_BATCH) {
      const data: EvaluationsUpserted = { Evals: canceled.slice(i, i + CANCEL_BATCH) };
      await this.write(ctx, [{ type: "EvaluationsUpserted", v: 1, data }]);
    }
  }

  /** The bookkeeping writes share the plan queue's appends with the workers' records. */
  private write(ctx: ServiceContext, drafts: readonly Draft[]): Promise<Written> {
    return this.planQueue ? this.planQueue.submit(drafts) : ctx.write(drafts);
  }

  private track(p: Promise<unknown>): void {
    const done = p.catch((err: Error) =>
      this.ctx?.logger.error({ err }, "scheduler bookkeeping write failed"),
    );
    this.inFlight.add(done);
    void done.finally(() => this.inFlight.delete(done));
  }
}

const WATCHED = new Set(["evals", "nodes", "allocs", "scheduler_config", "csi_volumes"]);

/** What the scheduler reads of a csi_volumes row. */
interface ClaimedVolume {
  readonly ID: string;
  readonly Namespace: string;
  readonly ReadClaims: Readonly<Record<string, unknown>> | null;
  readonly WriteClaims: Readonly<Record<string, unknown>> | null;
}

/** A new volume, or one that holds a claim fewer than before. */
function claimsFreed(before: ClaimedVolume | undefined, after: ClaimedVolume): boolean {
  if (!before) return true;
  for (const claims of [before.ReadClaims, before.WriteClaims]) {
    for (const id in claims ?? {}) {
      if (!Object.hasOwn(after.ReadClaims ?? {}, id) && !Object.hasOwn(after.WriteClaims ?? {}, id))
        return true;
    }
  }
  return false;
}

function csiNodePluginsChanged(before: NodeRow, after: NodeRow): boolean {
  return (
    before.CSINodePlugins !== after.CSINodePlugins && !sameJson(before.CSINodePlugins, after.CSINodePlugins)
  );
}

const sameJson = (a: unknown, b: unknown) => JSON.stringify(a ?? null) === JSON.stringify(b ?? null);

/** The CSI volumes a job's groups ask for. */
function jobVolumeAsks(job: JobRow | undefined): VolumeAsk[] {
  const out: VolumeAsk[] = [];
  for (const tg of job?.TaskGroups ?? []) {
    for (const v of Object.values(tg.Volumes ?? {})) {
      if (v?.Type === "csi")
        out.push({ namespace: job!.Namespace, source: v.Source, perAlloc: v.PerAlloc === true });
    }
  }
  return out;
}

function isEmpty(map: Readonly<Record<string, unknown>> | null): boolean {
  return map === null || Object.keys(map).length === 0;
}

/** Whether passes go to a scheduler thread now (not while none is ready: then they run here, in slices). */
function offThread(options: SchedulerOptions): (() => boolean) | undefined {
  const threads = options.threads;
  if (options.schedule || !threads) return undefined;
  return () => threads.pool.canSchedule;
}

/**
 * Passes computed on the scheduler threads, each against its replica at
 * least as new as the tables the worker just read (the main store's applied
 * index: the evaluation row, and after a partial plan the index that plan
 * applied at, Nomad's RefreshIndex). While no thread is ready (starting, or
 * replacing one that failed), in process, in slices.
 */
function onThreads(
  ctx: ServiceContext,
  threads: NonNullable<SchedulerOptions["threads"]>,
  readyNodes: ReadyNodes,
  newID: () => string,
  identities: PlanIdentities | undefined,
  counters: { onThreads: number },
): SchedulePass {
  const inProcess = {
    tables: ctx.tables,
    readyNodes,
    clock: ctx.clock,
    newID,
    appliedIndex: () => ctx.store.appliedIndex,
  };
  return async (evaluation, attempt) => {
    if (!threads.pool.canSchedule) return computeInSlices(inProcess, evaluation, attempt);
    const message = await threads.pool.schedule({
      evaluation,
      minIndex: ctx.store.appliedIndex,
      nowMs: ctx.clock.now(),
      attempt,
      signingKeyID: identities?.signingKey(ctx.tables.rootKeys),
    });
    counters.onThreads++;
    return threadPass(message, threads.codec);
  };
}
