import { compileFilter, type Filter } from "../src/query/filter/index.ts";
import type { ApplyContext, Projection, Refusal } from "../src/store/projection.ts";
import { byCreateIndexThenId, Table } from "../src/store/table.ts";
import { DEPLOYMENT_WRITES, type DeploymentEvent } from "../streams/deployments.ts";
import type {
  EvalEvent,
  EvaluationSpec,
  EvaluationsDeleted,
  EvaluationsDeletedByFilter,
  EvaluationsUpserted,
} from "../streams/evals.ts";
import type { Actor, Envelope } from "../streams/event-schema.ts";
import type { JobScalingEvent } from "../streams/job-scaling.ts";
import type { JobEvent } from "../streams/jobs.ts";
import type { PeriodicEvent } from "../streams/periodic.ts";
import { deletable, recreatePage } from "./eval-delete-pages.ts";
import { type DeleteSafetyLookups, isEvalDeleteSafe, NO_JOBS } from "./eval-delete-safety.ts";
import { currentSchedulerConfig, type SchedulerConfigTable } from "./scheduler-config.ts";

/**
 * Nomad's Evaluation as the API shows it. RelatedEvals is filled only by
 * `GET /v1/evaluation/:id?related=true`; LeaderACL only ever lives in the
 * broker's memory. Both are stored empty so filters may name them, as they
 * may in Nomad.
 */
export type EvaluationRow = EvaluationSpec & {
  readonly RelatedEvals: null;
  readonly LeaderACL: string;
  readonly CreateIndex: number;
  readonly ModifyIndex: number;
};

/**
 * The audit record of one operator delete (by IDs, or every page of one
 * delete-by-filter): who, with what, how many the handler expected and how
 * many the applies actually deleted.
 */
export interface EvalDeleteRow {
  readonly ID: string;
  readonly By: Actor | null;
  /** Unix ms of the first record of the delete. */
  readonly StartedAt: number;
  /** "" for a delete by IDs. */
  readonly Filter: string;
  readonly EvalIDs: readonly string[] | null;
  readonly Pages: number;
  readonly Expected: number;
  readonly Deleted: number;
  readonly CreateIndex: number;
  readonly ModifyIndex: number;
}

export const BROKER_NOT_PAUSED = "eval broker is enabled; eval broker must be paused to delete evals";

/** Key of an (namespace, job) pair in secondary indexes. */
export const jobKey = (namespace: string, jobID: string) => `${namespace}\u0000${jobID}`;

export interface EvalsProjectionDeps {
  /** Deletes are allowed only while it says PauseEvalBroker; without one, never. */
  readonly schedulerConfig?: SchedulerConfigTable;
  /** Where delete-safety finds jobs and allocations (default: no jobs, so every job is gone). */
  readonly safety?: DeleteSafetyLookups;
  /** The projections whose tables `safety` reads. */
  readonly safetyReads?: readonly string[];
  /** The second validation of a deployment write (projections/deployment-writes.ts). */
  readonly deploymentGate?: (event: DeploymentEvent) => Refusal | undefined;
}

export function evalsProjection(deps: EvalsProjectionDeps = {}) {
  const evals = new Table<EvaluationRow>({
    name: "evals",
    key: (e) => e.ID,
    indexes: {
      namespace: (e) => e.Namespace,
      job: (e) => jobKey(e.Namespace, e.JobID),
      node: (e) => e.NodeID || undefined,
    },
    order: byCreateIndexThenId,
  });
  const evalDeletes = new Table<EvalDeleteRow>({ name: "eval_deletes", key: (d) => d.ID });
  const safety = deps.safety ?? NO_JOBS;
  const isSafe = (row: EvaluationRow) => isEvalDeleteSafe(row, safety);
  const brokerPaused = () =>
    deps.schedulerConfig !== undefined && currentSchedulerConfig(deps.schedulerConfig).PauseEvalBroker;

  // The pages of one delete carry the same filter; compiling is pure, so a
  // cache of the last one changes nothing but the time it takes.
  let compiled: Filter | undefined;
  const filterOf = (expression: string): Filter | undefined => {
    if (compiled?.expression === expression) return compiled;
    try {
      compiled = compileFilter(expression);
    } catch {
      return undefined;
    }
    return compiled;
  };

  const upsert = (ctx: ApplyContext, event: Envelope, data: EvaluationsUpserted) => {
    for (const spec of data.Evals) {
      const before = evals.get(spec.ID);
      ctx.put(evals, evaluationRow(spec, before?.CreateIndex ?? ctx.index, ctx.index));
      // Nomad (nestedUpsertEval): a successful evaluation makes the job's
      // blocked evaluations pointless, so they are canceled in the same apply.
      if (spec.Status === "complete" && isEmpty(spec.FailedTGAllocs)) {
        for (const blocked of evals.by("job", jobKey(spec.Namespace, spec.JobID))) {
          if (blocked.Status !== "blocked" || blocked.ID === spec.ID) continue;
          const canceled: EvaluationRow = {
            ...blocked,
            Status: "canceled",
            StatusDescription: `evaluation "${spec.ID}" successful`,
            ModifyTime: Math.max(event.at * 1e6, blocked.CreateTime + 1),
            ModifyIndex: ctx.index,
          };
          ctx.put(evals, canceled);
        }
      }
    }
  };

  const audit = (
    ctx: ApplyContext,
    event: Envelope,
    id: string,
    change: Pick<EvalDeleteRow, "Filter" | "EvalIDs" | "Expected" | "Deleted">,
  ) => {
    const before = evalDeletes.get(id);
    ctx.put(evalDeletes, {
      ID: id,
      By: before?.By ?? event.by ?? null,
      StartedAt: before?.StartedAt ?? event.at,
      Filter: change.Filter,
      EvalIDs: change.EvalIDs,
      Pages: (before?.Pages ?? 0) + 1,
      Expected: (before?.Expected ?? 0) + change.Expected,
      Deleted: (before?.Deleted ?? 0) + change.Deleted,
      CreateIndex: before?.CreateIndex ?? ctx.index,
      ModifyIndex: ctx.index,
    });
  };

  const deleteByID = (ctx: ApplyContext, event: Envelope, data: EvaluationsDeleted) => {
    if (data.UserInitiated && !brokerPaused()) return ctx.reject(400, BROKER_NOT_PAUSED);
    const present: string[] = [];
    for (const id of new Set(data.EvalIDs)) {
      const row = evals.get(id);
      if (!row) continue;
      if (data.UserInitiated && !isSafe(row)) return ctx.reject(400, `eval ${id} is not safe to delete`);
      present.push(id);
    }
    for (const id of present) ctx.delete(evals, id);
    // Nomad bumps the table index only when something went; a log index per
    // delete keeps blocking queries and the audit trail in step instead.
    ctx.touch(evals);
    if (data.UserInitiated) {
      audit(ctx, event, data.DeleteID, {
        Filter: "",
        EvalIDs: data.EvalIDs,
        Expected: data.EvalIDs.length,
        Deleted: present.length,
      });
    }
  };

  const deleteByFilter = (ctx: ApplyContext, event: Envelope, data: EvaluationsDeletedByFilter) => {
    if (!brokerPaused()) return ctx.reject(400, BROKER_NOT_PAUSED);
    const filter = filterOf(data.Filter);
    if (!filter) return ctx.reject(400, `invalid filter expression ${JSON.stringify(data.Filter)}`);
    if (!Number.isSafeInteger(data.PerPage) || data.PerPage < 1) {
      return ctx.reject(400, `invalid page size ${data.PerPage}`);
    }
    const page = recreatePage(evals, deletable(filter, isSafe), data.NextToken, data.LastToken, data.PerPage);
    if (!page) return ctx.reject(400, `invalid page tokens ${data.NextToken}..${data.LastToken}`);
    for (const row of page) ctx.delete(evals, row.ID);
    ctx.touch(evals);
    audit(ctx, event, data.DeleteID, {
      Filter: data.Filter,
      EvalIDs: null,
      Expected: data.Expected,
      Deleted: page.length,
    });
  };

  /**
   * A deployment write: of the projections that apply it, this one applies
   * first, so it makes the second validation for all of them; the
   * evaluation Nomad creates in the same entry follows.
   */
  const deploymentWrite = (ctx: ApplyContext, event: DeploymentEvent) => {
    const refusal = deps.deploymentGate?.(event);
    if (refusal) return ctx.reject(refusal.code, refusal.reason);
    const data = event.data;
    if (data.Eval) upsert(ctx, event as unknown as Envelope, { Evals: [data.Eval] });
  };

  const projection: Projection = {
    name: "evals",
    version: 2,
    tables: [evals, evalDeletes],
    reads: ["scheduler-config", ...(deps.safetyReads ?? [])],
    handles: new Set([
      "EvaluationsUpserted",
      "EvaluationsDeleted",
      "EvaluationsDeletedByFilter",
      "JobRegistered",
      "JobDeregistered",
      "JobScaled",
      "PeriodicJobLaunched",
      "JobDispatched",
      ...DEPLOYMENT_WRITES,
    ]),
    evolve(ctx, event) {
      if (DEPLOYMENT_WRITES.has(event.type)) return deploymentWrite(ctx, event as DeploymentEvent);
      const e = event as EvalEvent | JobEvent | JobScalingEvent | PeriodicEvent;
      switch (e.type) {
        case "EvaluationsUpserted":
          return upsert(ctx, e, e.data);
        case "JobRegistered":
        case "JobDeregistered":
        case "JobScaled":
        case "PeriodicJobLaunched":
        case "JobDispatched":
          // Nomad's FSM creates the job's evaluation in the job's own entry,
          // stamped with that entry's index; the jobs projection applies first
          // and may refuse the record.
          if (ctx.rejected || !e.data.Eval) return;
          return upsert(ctx, e, { Evals: [{ ...e.data.Eval, JobModifyIndex: ctx.index }] });
        case "EvaluationsDeleted":
          return deleteByID(ctx, e, e.data);
        case "EvaluationsDeletedByFilter":
          return deleteByFilter(ctx, e, e.data);
      }
    },
  };
  return { projection, evals, evalDeletes };
}

/**
 * The stored row: the fixed fields go first, then the spec (V8 builds an
 * object literal that adds keys after a spread on a slow path; see
 * `stamped`). A spec that is a row echoed back gets its fields overridden.
 */
function evaluationRow(spec: EvaluationSpec, CreateIndex: number, ModifyIndex: number): EvaluationRow {
  const row: EvaluationRow = { CreateIndex, ModifyIndex, RelatedEvals: null, LeaderACL: "", ...spec };
  if (
    row.CreateIndex === CreateIndex &&
    row.ModifyIndex === ModifyIndex &&
    row.RelatedEvals === null &&
    row.LeaderACL === ""
  ) {
    return row;
  }
  return { ...row, CreateIndex, ModifyIndex, RelatedEvals: null, LeaderACL: "" };
}

function isEmpty(map: Readonly<Record<string, unknown>> | null): boolean {
  return map === null || Object.keys(map).length === 0;
}
