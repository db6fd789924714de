import { randomUUID } from "node:crypto";
import type { EvaluationRow } from "../../../projections/evals.ts";
import { jobKey } from "../../../projections/evals.ts";
import { ZERO_TIME } from "../../../streams/evals.ts";
import type { Clock, Timer } from "../../util/clock.ts";
import { Heap } from "./heap.ts";

/** Nomad's broker settings (nomad/config.go), in milliseconds. */
export interface BrokerOptions {
  readonly nackTimeoutMs: number;
  readonly deliveryLimit: number;
  readonly initialNackDelayMs: number;
  readonly subsequentNackDelayMs: number;
}

export const DEFAULT_BROKER_OPTIONS: BrokerOptions = {
  nackTimeoutMs: 60_000,
  deliveryLimit: 3,
  initialNackDelayMs: 1_000,
  subsequentNackDelayMs: 20_000,
};

export interface BrokerHooks {
  /** An evaluation reached the delivery limit: mark it failed, then call `ackFailed`. */
  onFailed(evaluation: EvaluationRow): void;
  /** Pending evaluations made pointless by a newer one of the same job: mark them canceled. */
  onCancelable(evaluations: readonly EvaluationRow[]): void;
}

export interface Delivery {
  readonly evaluation: EvaluationRow;
  readonly token: string;
}

interface Unacked {
  readonly evaluation: EvaluationRow;
  readonly token: string;
  /** When the nack timeout falls (clock ms); undefined while paused. */
  due: number | undefined;
  /** While paused: how long the timeout had left. */
  remaining: number;
}

interface Waiter {
  readonly types: ReadonlySet<string>;
  readonly signal: AbortSignal | undefined;
  readonly resolve: (d: Delivery | undefined) => void;
}

/** Nomad's ReadyEvaluations order: higher priority first across jobs, then older first. */
const readyOrder = (a: EvaluationRow, b: EvaluationRow) =>
  a.JobID !== b.JobID && a.Priority !== b.Priority ? b.Priority - a.Priority : a.CreateIndex - b.CreateIndex;

/** Nomad's PendingEvaluations order (one job): higher priority, then the most recently modified. */
const pendingOrder = (a: EvaluationRow, b: EvaluationRow) =>
  a.Priority !== b.Priority ? b.Priority - a.Priority : b.ModifyIndex - a.ModifyIndex;

/**
 * Nomad's eval broker (nomad/eval_broker.go), leader-only and in memory: at
 * most one evaluation per job is ready or in flight, the others wait in the
 * job's pending queue; ready evaluations go out by priority; each delivery
 * must be acked or nacked before its nack timeout; a nacked evaluation comes
 * back after a delay, and fails once it reaches the delivery limit. Delays
 * (Wait, WaitUntil, nack delays, the nack timeout) run on the Clock.
 */
export class EvalBroker {
  private enabled = false;
  private closed = false;
  private readonly tracked = new Map<string, number>();
  private readonly jobEvals = new Map<string, string>();
  private readonly pending = new Map<string, Heap<EvaluationRow>>();
  private readonly ready = new Map<string, Heap<EvaluationRow>>();
  private readonly unacked = new Map<string, Unacked>();
  private readonly delayed = new Map<string, Timer>();
  private waiters: Waiter[] = [];
  /**
   * One clock timer for every delivery's nack timeout, due at the earliest
   * of them or before (`nackAt`). A timer per delivery, cleared and set again
   * around each log write and cleared at the ack, was four timer operations
   * per evaluation on the main thread; deadlines are plain numbers now, and
   * the timer, when it fires, nacks what is due and sets itself again.
   */
  private nackTimer: Timer | undefined;
  private nackAt = Number.POSITIVE_INFINITY;
  /** Workers' signals this broker listens on: one listener each, not one per dequeue. */
  private readonly signals = new WeakSet<AbortSignal>();

  constructor(
    private readonly clock: Clock,
    private readonly hooks: BrokerHooks,
    private readonly options: BrokerOptions = DEFAULT_BROKER_OPTIONS,
  ) {}

  get isEnabled(): boolean {
    return this.enabled;
  }

  /** How many evaluations are ready, in flight, waiting on a delay, or queued behind their job's current one. */
  stats(): { ready: number; unacked: number; delayed: number; pending: number } {
    let ready = 0;
    for (const h of this.ready.values()) ready += h.size;
    let pending = 0;
    for (const h of this.pending.values()) pending += h.size;
    return { ready, unacked: this.unacked.size, delayed: this.delayed.size, pending };
  }

  /** Nomad's per-scheduler broker stats (ByScheduler): ready and in-flight evaluations of one type. */
  statsOf(type: string): { ready: number; unacked: number } {
    let unacked = 0;
    for (const u of this.unacked.values()) if (u.evaluation.Type === type) unacked++;
    return { ready: this.ready.get(type)?.size ?? 0, unacked };
  }

  /** Nomad's SetEnabled: disabling drops everything (it is rebuilt from the evals table on enable). */
  setEnabled(enabled: boolean): void {
    if (this.enabled === enabled) return;
    this.enabled = enabled;
    if (!enabled) this.flush();
  }

  /** Leadership ended: drop everything and release the workers waiting for work. */
  close(): void {
    this.closed = true;
    this.setEnabled(false);
    const waiters = this.waiters;
    this.waiters = [];
    for (const w of waiters) w.resolve(undefined);
  }

  /** Nomad's Enqueue: a pending evaluation, delivered now or once its Wait / WaitUntil has passed. */
  enqueue(evaluation: EvaluationRow): void {
    if (!this.enabled || this.tracked.has(evaluation.ID)) return;
    this.tracked.set(evaluation.ID, 0);
    const waitMs = evaluation.Wait > 0 ? evaluation.Wait / 1e6 : 0;
    const until = evaluation.WaitUntil !== ZERO_TIME ? Date.parse(evaluation.WaitUntil) : Number.NaN;
    const delay = waitMs > 0 ? waitMs : Number.isNaN(until) ? 0 : until - this.clock.now();
    if (delay > 0) this.delay(evaluation, delay);
    else this.enqueueReady(evaluation);
  }

  /** Evaluations brought back by an unblock (their stored status stays `blocked`). */
  enqueueUnblocked(evaluations: readonly EvaluationRow[]): void {
    for (const e of evaluations) this.enqueue(e);
  }

  /**
   * Nomad's Dequeue: the next ready evaluation of one of `types`, waiting for
   * one if needed. Resolves undefined once the broker closes or `signal`
   * aborts (a worker retired by a smaller worker pool).
   */
  dequeue(types: readonly string[], signal?: AbortSignal): Promise<Delivery | undefined> {
    if (this.closed || signal?.aborted) return Promise.resolve(undefined);
    const set = new Set(types);
    const now = this.take(set);
    if (now) return Promise.resolve(now);
    return new Promise((resolve) => {
      this.waiters.push({ types: set, signal, resolve });
      // A worker's signal outlives its dequeues: one listener per signal
      // releases whichever of its dequeues waits when it aborts (adding and
      // removing one per dequeue cost more than the rest of the delivery).
      if (signal && !this.signals.has(signal)) {
        this.signals.add(signal);
        signal.addEventListener("abort", () => this.aborted(signal), { once: true });
      }
    });
  }

  /** A worker retired: its waiting dequeues resolve with nothing. */
  private aborted(signal: AbortSignal): void {
    const released = this.waiters.filter((w) => w.signal === signal);
    if (released.length === 0) return;
    this.waiters = this.waiters.filter((w) => w.signal !== signal);
    for (const w of released) w.resolve(undefined);
  }

  /** Nomad's Ack: done with it; the job's next pending evaluation becomes ready, older ones are canceled. */
  ack(evalID: string, token: string): void {
    const u = this.outstanding(evalID, token);
    this.unacked.delete(evalID);
    this.tracked.delete(evalID);
    this.release(u.evaluation);
  }

  /** Nomad's Nack: back to the queue after a delay, or failed at the delivery limit. */
  nack(evalID: string, token: string): void {
    const u = this.outstanding(evalID, token);
    this.unacked.delete(evalID);
    const dequeues = this.tracked.get(evalID) ?? 0;
    if (dequeues >= this.options.deliveryLimit) {
      this.hooks.onFailed(u.evaluation);
      return;
    }
    const wait =
      dequeues <= 0
        ? 0
        : dequeues === 1
          ? this.options.initialNackDelayMs
          : (dequeues - 1) * this.options.subsequentNackDelayMs;
    if (wait > 0) this.delay(u.evaluation, wait, true);
    else this.enqueueReady(u.evaluation);
  }

  /** After `onFailed` recorded the failure: frees the job for its next evaluation. */
  ackFailed(evaluation: EvaluationRow): void {
    this.tracked.delete(evaluation.ID);
    this.release(evaluation);
  }

  /** Nomad's PauseNackTimeout: the worker is waiting on the log, which is not the worker being slow. */
  pauseNack(evalID: string, token: string): void {
    const u = this.unacked.get(evalID);
    if (!u || u.token !== token || u.due === undefined) return;
    u.remaining = Math.max(0, u.due - this.clock.now());
    u.due = undefined;
  }

  resumeNack(evalID: string, token: string): void {
    const u = this.unacked.get(evalID);
    if (!u || u.token !== token || u.due !== undefined) return;
    u.due = this.clock.now() + u.remaining;
    this.armNack(u.due);
  }

  /** Whether `token` is still the outstanding delivery of `evalID`. */
  isOutstanding(evalID: string, token: string): boolean {
    return this.unacked.get(evalID)?.token === token;
  }

  private outstanding(evalID: string, token: string): Unacked {
    const u = this.unacked.get(evalID);
    if (!u) throw new Error("Evaluation ID not found");
    if (u.token !== token) throw new Error("Token does not match for Evaluation ID");
    return u;
  }

  /** The nack timer fires no later than `due`. */
  private armNack(due: number): void {
    if (due >= this.nackAt) return;
    if (this.nackTimer) this.clock.clearTimeout(this.nackTimer);
    this.nackAt = due;
    this.nackTimer = this.clock.setTimeout(() => this.nackDue(), Math.max(0, due - this.clock.now()));
  }

  /** Nacks every delivery whose timeout has fallen, earliest first, and sets the timer for the next. */
  private nackDue(): void {
    this.nackTimer = undefined;
    this.nackAt = Number.POSITIVE_INFINITY;
    const now = this.clock.now();
    const due: Unacked[] = [];
    let next = Number.POSITIVE_INFINITY;
    for (const u of this.unacked.values()) {
      if (u.due === undefined) continue;
      if (u.due <= now) due.push(u);
      else if (u.due < next) next = u.due;
    }
    // Stable: deliveries due at the same time go in the order they were made.
    due.sort((a, b) => a.due! - b.due!);
    for (const u of due) {
      if (this.unacked.get(u.evaluation.ID) !== u || u.due === undefined || u.due > now) continue;
      u.due = undefined;
      this.nack(u.evaluation.ID, u.token);
    }
    if (next !== Number.POSITIVE_INFINITY) this.armNack(next);
  }

  private delay(evaluation: EvaluationRow, ms: number, requeue = false): void {
    const timer = this.clock.setTimeout(() => {
      this.delayed.delete(evaluation.ID);
      if (!this.enabled) return;
      if (requeue || this.tracked.has(evaluation.ID)) this.enqueueReady(evaluation);
    }, ms);
    this.delayed.set(evaluation.ID, timer);
  }

  /** Nomad's enqueueLocked: ready if it is its job's current evaluation, else pending behind it. */
  private enqueueReady(evaluation: EvaluationRow): void {
    const key = jobKey(evaluation.Namespace, evaluation.JobID);
    const current = this.jobEvals.get(key);
    if (current === undefined) this.jobEvals.set(key, evaluation.ID);
    else if (current !== evaluation.ID) {
      let heap = this.pending.get(key);
      if (!heap) {
        heap = new Heap(pendingOrder);
        this.pending.set(key, heap);
      }
      heap.push(evaluation);
      return;
    }
    let heap = this.ready.get(evaluation.Type);
    if (!heap) {
      heap = new Heap(readyOrder);
      this.ready.set(evaluation.Type, heap);
    }
    heap.push(evaluation);
    this.wake();
  }

  private release(evaluation: EvaluationRow): void {
    const key = jobKey(evaluation.Namespace, evaluation.JobID);
    if (this.jobEvals.get(key) === evaluation.ID) this.jobEvals.delete(key);
    const heap = this.pending.get(key);
    if (!heap || heap.size === 0) return;
    this.pending.delete(key);
    const next = heap.pop()!;
    const cancelable = heap.drain();
    for (const e of cancelable) this.tracked.delete(e.ID);
    if (cancelable.length > 0) this.hooks.onCancelable(cancelable);
    this.enqueueReady(next);
  }

  private take(types: ReadonlySet<string>): Delivery | undefined {
    if (!this.enabled) return undefined;
    let best: Heap<EvaluationRow> | undefined;
    for (const type of types) {
      const heap = this.ready.get(type);
      const head = heap?.peek();
      if (!head) continue;
      const bestHead = best?.peek();
      if (!bestHead || head.Priority > bestHead.Priority) best = heap;
    }
    const evaluation = best?.pop();
    if (!evaluation) return undefined;
    const token = randomUUID();
    this.tracked.set(evaluation.ID, (this.tracked.get(evaluation.ID) ?? 0) + 1);
    const due = this.clock.now() + this.options.nackTimeoutMs;
    this.unacked.set(evaluation.ID, { evaluation, token, due, remaining: this.options.nackTimeoutMs });
    this.armNack(due);
    return { evaluation, token };
  }

  private wake(): void {
    const waiters = this.waiters;
    this.waiters = [];
    for (const w of waiters) {
      const d = this.take(w.types);
      if (d) w.resolve(d);
      else this.waiters.push(w);
    }
  }

  private flush(): void {
    for (const t of this.delayed.values()) this.clock.clearTimeout(t);
    if (this.nackTimer) this.clock.clearTimeout(this.nackTimer);
    this.nackTimer = undefined;
    this.nackAt = Number.POSITIVE_INFINITY;
    this.delayed.clear();
    this.unacked.clear();
    this.tracked.clear();
    this.jobEvals.clear();
    this.pending.clear();
    this.ready.clear();
  }
}
