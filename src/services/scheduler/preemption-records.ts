import type { AllocRow } from "../../../projections/allocs.ts";
import type { AllocPlacement, AllocPreemption, PreemptionEval } from "../../../streams/allocs.ts";

/**
 * The preemption fields of the plan record that carries `chunk`: the
 * evictions its placements make (a preemption travels with its placement,
 * so apply decides both on the same node part) and one evaluation per job
 * they evict from, as Nomad's plan applier creates them.
 */
export function preemptionFields(
  preemptions: ReadonlyMap<string, { readonly alloc: AllocRow; readonly by: string }>,
  chunk: readonly AllocPlacement[],
  newID: () => string,
): { Preemptions?: AllocPreemption[]; PreemptionEvals?: PreemptionEval[] } {
  const placed = new Set(chunk.map((p) => p.ID));
  const out: AllocPreemption[] = [];
  const evals = new Map<string, PreemptionEval>();
  for (const { alloc, by } of preemptions.values()) {
    if (!placed.has(by)) continue;
    out.push({ ID: alloc.ID, PreemptedByAllocation: by });
    const key = `${alloc.Namespace}\u0000${alloc.JobID}`;
    if (!evals.has(key)) evals.set(key, { ID: newID(), Namespace: alloc.Namespace, JobID: alloc.JobID });
  }
  if (out.length === 0) return {};
  return { Preemptions: out, PreemptionEvals: [...evals.values()] };
}
