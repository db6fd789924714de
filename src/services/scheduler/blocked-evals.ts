import { type EvaluationRow, jobKey } from "../../../projections/evals.ts";
import type { EvalBroker } from "./eval-broker.ts";

export interface BlockedHooks {
  /** Older blocked evaluations of a job that has a newer one: mark them canceled. */
  onDuplicates(evaluations: readonly EvaluationRow[]): void;
  /** The CSI volumes the evaluation's job asks for (none when not given). */
  volumesOf?(evaluation: EvaluationRow): readonly VolumeAsk[];
}

/** A CSI volume a job asks for: `source`, or with per_alloc any `source[index]`, in its namespace. */
export interface VolumeAsk {
  readonly namespace: string;
  readonly source: string;
  readonly perAlloc: boolean;
}

/** Whether a volume asked for is the volume `id` of `namespace`. */
export function asksForVolume(ask: VolumeAsk, namespace: string, id: string): boolean {
  if (ask.namespace !== namespace) return false;
  if (id === ask.source) return true;
  return ask.perAlloc && id.startsWith(`${ask.source}[`) && id.endsWith("]");
}

/**
 * Nomad's blocked evaluations tracker (nomad/blocked_evals.go), leader-only:
 * one blocked evaluation per job, kept until capacity may have appeared for
 * it — a node of a class it could use becomes ready or eligible, or an
 * allocation on one finishes — and then handed back to the broker. An
 * evaluation that could not tell classes apart (escaped) is released by any
 * such change. Unblocks it may have missed while being computed (its
 * SnapshotIndex is older than the change) release it at once.
 */
export class BlockedEvals {
  private enabled = false;
  private readonly captured = new Map<string, EvaluationRow>();
  private readonly escaped = new Map<string, EvaluationRow>();
  private readonly jobs = new Map<string, string>();
  /** Per computed class, the index of the last change that could have freed capacity on it. */
  private readonly unblockIndexes = new Map<string, number>();
  /** Per CSI volume (namespace, ID), the index its claims were last freed (or it was registered) at. */
  private readonly volumeIndexes = new Map<string, { namespace: string; id: string; index: number }>();

  constructor(
    private readonly broker: EvalBroker,
    private readonly hooks: BlockedHooks,
  ) {}

  get size(): number {
    return this.captured.size + this.escaped.size;
  }

  /** Blocked evaluations that could not tell node classes apart (Nomad's TotalEscaped). */
  get escapedCount(): number {
    return this.escaped.size;
  }

  setEnabled(enabled: boolean): void {
    if (this.enabled === enabled) return;
    this.enabled = enabled;
    if (!enabled) {
      this.captured.clear();
      this.escaped.clear();
      this.jobs.clear();
      this.unblockIndexes.clear();
      this.volumeIndexes.clear();
    }
  }

  /** Nomad's Block (and Reblock): track it, or release it at once if it missed an unblock. */
  block(evaluation: EvaluationRow): void {
    if (!this.enabled || this.captured.has(evaluation.ID) || this.escaped.has(evaluation.ID)) return;
    const key = jobKey(evaluation.Namespace, evaluation.JobID);
    const existingID = this.jobs.get(key);
    if (existingID !== undefined && existingID !== evaluation.ID) {
      const existing = this.captured.get(existingID) ?? this.escaped.get(existingID);
      if (existing && latestIndex(existing) >= latestIndex(evaluation)) {
        this.hooks.onDuplicates([evaluation]);
        return;
      }
      if (existing) {
        this.remove(existing.ID);
        this.hooks.onDuplicates([existing]);
      }
    }
    if (this.missedUnblock(evaluation)) {
      this.broker.enqueueUnblocked([evaluation]);
      return;
    }
    this.jobs.set(key, evaluation.ID);
    (evaluation.EscapedComputedClass ? this.escaped : this.captured).set(evaluation.ID, evaluation);
  }

  /** Nomad's Untrack: the job's evaluation succeeded, its blocked one is moot (the apply canceled it). */
  untrack(namespace: string, jobID: string): void {
    const id = this.jobs.get(jobKey(namespace, jobID));
    if (id !== undefined) this.remove(id);
  }

  remove(evalID: string): void {
    const e = this.captured.get(evalID) ?? this.escaped.get(evalID);
    if (!e) return;
    this.captured.delete(evalID);
    this.escaped.delete(evalID);
    const key = jobKey(e.Namespace, e.JobID);
    if (this.jobs.get(key) === evalID) this.jobs.delete(key);
  }

  /** Nomad's Unblock: capacity may have appeared on nodes of `computedClass` at `index`. */
  unblock(computedClass: string, index: number): void {
    if (!this.enabled) return;
    if (index > (this.unblockIndexes.get(computedClass) ?? 0)) this.unblockIndexes.set(computedClass, index);
    const released: EvaluationRow[] = [...this.escaped.values()];
    for (const e of this.captured.values()) {
      const eligible = e.ClassEligibility?.[computedClass];
      if (eligible === false) continue;
      released.push(e);
    }
    this.release(released);
  }

  /**
   * A CSI volume's claims were freed (or the volume appeared) at `index`:
   * the evaluations blocked on it get another go. The CSI check is not cached
   * by class, so a class unblock says nothing of it; without this a job
   * waiting for a claim would wait for an unrelated change.
   */
  unblockVolume(namespace: string, id: string, index: number): void {
    if (!this.enabled) return;
    const key = `${namespace}\u0000${id}`;
    if (index > (this.volumeIndexes.get(key)?.index ?? 0))
      this.volumeIndexes.set(key, { namespace, id, index });
    const released = [...this.captured.values(), ...this.escaped.values()].filter((e) =>
      this.volumesOf(e).some((ask) => asksForVolume(ask, namespace, id)),
    );
    this.release(released);
  }

  private volumesOf(e: EvaluationRow): readonly VolumeAsk[] {
    return this.hooks.volumesOf?.(e) ?? [];
  }

  /** Nomad's UnblockFailed: evaluations blocked after too many plan conflicts get another go. */
  unblockFailed(): void {
    if (!this.enabled) return;
    const released = [...this.captured.values(), ...this.escaped.values()].filter(
      (e) => e.TriggeredBy === "max-plan-attempts",
    );
    this.release(released);
  }

  private release(evaluations: readonly EvaluationRow[]): void {
    if (evaluations.length === 0) return;
    for (const e of evaluations) this.remove(e.ID);
    this.broker.enqueueUnblocked(evaluations);
  }

  /** Nomad's missedUnblock, and a volume freed after the evaluation's tables. */
  private missedUnblock(e: EvaluationRow): boolean {
    if (this.volumeIndexes.size > 0) {
      for (const ask of this.volumesOf(e)) {
        for (const v of this.volumeIndexes.values()) {
          if (v.index > e.SnapshotIndex && asksForVolume(ask, v.namespace, v.id)) return true;
        }
      }
    }
    let max = 0;
    for (const [cls, index] of this.unblockIndexes) {
      if (index > max) max = index;
      const eligible = e.ClassEligibility?.[cls];
      if (eligible === undefined && e.SnapshotIndex < index) return true;
      if (eligible === true && e.SnapshotIndex < index) return true;
    }
    return e.EscapedComputedClass && e.SnapshotIndex < max;
  }
}

function latestIndex(e: EvaluationRow): number {
  return Math.max(e.CreateIndex, e.SnapshotIndex);
}
