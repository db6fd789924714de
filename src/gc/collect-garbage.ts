import { isCollectable } from "../../projections/gc.ts";
import type { Projections } from "../../projections/index.ts";
import { isTerminalEvalStatus } from "../../streams/evals.ts";
import type { GarbageCollected } from "../../streams/gc.ts";

/** Nomad's thresholds: how long a terminal object is kept before collection. */
export interface GcThresholds {
  /** eval_gc_threshold, default 1h. */
  readonly evalMs: number;
  /** batch_eval_gc_threshold, default 24h: batch results are read later. */
  readonly batchEvalMs: number;
}

export const DEFAULT_GC_THRESHOLDS: GcThresholds = { evalMs: 3_600_000, batchEvalMs: 86_400_000 };
export const FORCED_GC: GcThresholds = { evalMs: 0, batchEvalMs: 0 };

/** Batches stay small so each apply stays short. */
const MAX_PER_EVENT = 1000;

/**
 * What can be collected now (Nomad's evalReap): terminal evaluations older
 * than the threshold whose allocations are all collectable, with those
 * allocations, plus collectable allocations whose evaluation is already
 * gone. Returns the events to append; the apply checks each object again.
 */
export function collectGarbage(
  tables: Projections["tables"],
  nowMs: number,
  thresholds: GcThresholds,
  reason: GarbageCollected["Reason"],
): GarbageCollected[] {
  const evalIDs: string[] = [];
  const allocIDs: string[] = [];
  for (const e of tables.evals.all()) {
    if (!isTerminalEvalStatus(e.Status)) continue;
    const threshold = e.Type === "batch" ? thresholds.batchEvalMs : thresholds.evalMs;
    if (e.ModifyTime / 1e6 > nowMs - threshold) continue;
    const allocs = tables.allocs.by("eval", e.ID);
    if (!allocs.every(isCollectable)) continue;
    evalIDs.push(e.ID);
    for (const a of allocs) allocIDs.push(a.ID);
  }
  for (const a of tables.allocs.all()) {
    if (!tables.evals.has(a.EvalID) && isCollectable(a) && a.ModifyTime / 1e6 <= nowMs - thresholds.evalMs) {
      allocIDs.push(a.ID);
    }
  }
  const events: GarbageCollected[] = [];
  // Allocations first: an evaluation is removed only once its allocations are.
  for (let i = 0; i < allocIDs.length; i += MAX_PER_EVENT) {
    events.push({ Reason: reason, EvalIDs: [], AllocIDs: allocIDs.slice(i, i + MAX_PER_EVENT) });
  }
  for (let i = 0; i < evalIDs.length; i += MAX_PER_EVENT) {
    events.push({ Reason: reason, EvalIDs: evalIDs.slice(i, i + MAX_PER_EVENT), AllocIDs: [] });
  }
  return events;
}
