import type { Projection } from "../src/store/projection.ts";
import type { Table } from "../src/store/table.ts";
import type { AllocEvent } from "../streams/allocs.ts";
import { newEvaluation } from "../streams/evals.ts";
import type { AllocRow } from "./allocs.ts";
import { type EvaluationRow, jobKey } from "./evals.ts";
import type { JobRow } from "./jobs.ts";

export interface PreemptionEvalTables {
  readonly evals: Table<EvaluationRow>;
  readonly allocs: Table<AllocRow>;
  readonly jobs: Table<JobRow>;
}

/**
 * The evaluations a plan record creates for the jobs it preempts (Nomad's
 * plan applier puts them in the same Raft entry as the plan), so the
 * evicted allocations are placed again elsewhere. Applied after the
 * allocations projection: an evaluation is created only for a job that
 * lost an allocation to this record (its node part may have been refused)
 * and that still exists, with the job's current type and priority. The
 * table belongs to the evals projection; this one only adds rows to it.
 */
export function preemptionEvalsProjection(tables: PreemptionEvalTables) {
  const { evals, allocs, jobs } = tables;
  const projection: Projection = {
    name: "preemption-evals",
    version: 1,
    tables: [],
    reads: ["evals", "allocs", "jobs"],
    handles: new Set(["AllocsPlanApplied"]),
    evolve(ctx, event) {
      const { data } = event as Extract<AllocEvent, { type: "AllocsPlanApplied" }>;
      if (ctx.rejected || !data.PreemptionEvals || !data.Preemptions) return;
      const evicted = new Set<string>();
      for (const d of data.Preemptions) {
        const a = allocs.get(d.ID);
        if (a?.ModifyIndex === ctx.index && a.PreemptedByAllocation === d.PreemptedByAllocation) {
          evicted.add(jobKey(a.Namespace, a.JobID));
        }
      }
      const nowNs = event.at * 1e6;
      for (const e of data.PreemptionEvals) {
        const key = jobKey(e.Namespace, e.JobID);
        const job = jobs.get(key);
        if (!job || !evicted.has(key) || evals.has(e.ID)) continue;
        const spec = newEvaluation({
          ID: e.ID,
          Namespace: e.Namespace,
          Priority: job.Priority,
          Type: job.Type,
          TriggeredBy: "preemption",
          JobID: e.JobID,
          CreateTime: nowNs,
        });
        ctx.put(evals, {
          CreateIndex: ctx.index,
          ModifyIndex: ctx.index,
          RelatedEvals: null,
          LeaderACL: "",
          ...spec,
        });
      }
    },
  };
  return { projection };
}
