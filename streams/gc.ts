import { type Envelope, schemas } from "./event-schema.ts";

/** A job as garbage collection names it: job IDs are unique per namespace only. */
export interface GcJobRef {
  readonly Namespace: string;
  readonly ID: string;
}

/**
 * Terminal evaluations and allocations, and finished jobs, removed from the
 * live tables (Nomad's eval reap and job reap, the core GC). The apply
 * removes only what is still collectable then: allocations first, then
 * evaluations left without allocations, then jobs left without either. The
 * audit history of every object is kept.
 */
export interface GarbageCollected {
  /** "forced" (PUT /v1/system/gc) or "periodic" (the leader's core GC). */
  readonly Reason: "forced" | "periodic";
  readonly EvalIDs: readonly string[];
  readonly AllocIDs: readonly string[];
  /** Since v2: the jobs to delete (Nomad's job GC purges them). */
  readonly Jobs: readonly GcJobRef[];
}

export type GcEvent = Envelope<"GarbageCollected", GarbageCollected>;

export const GARBAGE_COLLECTED_VERSION = 2;

export const gcSchemas = schemas({
  type: "GarbageCollected",
  version: GARBAGE_COLLECTED_VERSION,
  // v1 collected evaluations and allocations only.
  upcast: { 1: (data) => ({ ...(data as object), Jobs: [] }) },
});
