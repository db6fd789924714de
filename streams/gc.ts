import { type Envelope, schemas } from "./event-schema.ts";

/**
 * Terminal evaluations and allocations removed from the live tables (Nomad's
 * eval reap). The apply removes only what is still terminal then; the audit
 * history of every object is kept.
 */
export interface GarbageCollected {
  /** "forced" (PUT /v1/system/gc) or "periodic" (the leader's core GC). */
  readonly Reason: "forced" | "periodic";
  readonly EvalIDs: readonly string[];
  readonly AllocIDs: readonly string[];
}

export type GcEvent = Envelope<"GarbageCollected", GarbageCollected>;

export const gcSchemas = schemas({ type: "GarbageCollected", version: 1 });
