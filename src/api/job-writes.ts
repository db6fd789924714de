import { randomUUID } from "node:crypto";
import { jobKey } from "../../projections/evals.ts";
import { enforceIndexRefusal, type JobRow, nonexistentNamespace } from "../../projections/jobs.ts";
import { currentSchedulerConfig } from "../../projections/scheduler-config.ts";
import { type EvaluationSpec, newEvaluation } from "../../streams/evals.ts";
import type { JobDeregistered, JobRegistered, JobSpec } from "../../streams/jobs.ts";
import type { AuthenticatedIdentity } from "../auth/authenticate.ts";
import { canonicalizeJob, JobShapeError } from "../jobs/canonicalize.ts";
import { JOB_MAX_PRIORITY, JOB_MIN_PRIORITY, validateJob } from "../jobs/validate.ts";
import { ApiError } from "./api-error.ts";
import { commit } from "./commit.ts";
import type { ApiContext } from "./context.ts";
import { specChanged } from "./job-views.ts";

/** Nomad's api.JobRegisterRequest (WriteRequest fields embedded). */
export interface RegisterBody {
  Job?: unknown;
  EnforceIndex?: boolean;
  JobModifyIndex?: number;
  PolicyOverride?: boolean;
  PreserveCounts?: boolean;
  EvalPriority?: number;
  Namespace?: string;
}

export const registerBodySchema = {
  type: ["object", "null"],
  additionalProperties: false,
  properties: {
    Job: {},
    EnforceIndex: { type: "boolean" },
    JobModifyIndex: { type: "integer", minimum: 0 },
    PolicyOverride: { type: "boolean" },
    PreserveCounts: { type: "boolean" },
    EvalPriority: { type: "integer" },
    Submission: {},
    Region: { type: "string" },
    Namespace: { type: "string" },
    SecretID: { type: "string" },
    AuthToken: { type: "string" },
    IdempotencyToken: { type: "string" },
  },
} as const;

export const REJECT_REGISTRATION =
  "Job registration, dispatch, and scale are disabled by the scheduler configuration";

export interface RegisterAnswer {
  EvalID: string;
  EvalCreateIndex: number;
  JobModifyIndex: number;
  Warnings: string;
  Index: number;
}

/** Nomad's JobDeregisterResponse, without its QueryMeta. */
export interface DeregisterAnswer {
  EvalID: string;
  EvalCreateIndex: number;
  JobModifyIndex: number;
  VolumeEvalID: string;
  VolumeEvalIndex: number;
  Index: number;
}

/**
 * The job a register or plan request carries, canonicalized and validated
 * (the first check): 400 with Nomad's message for anything wrong.
 */
export function jobFromRequest(
  ctx: ApiContext,
  body: RegisterBody | null | undefined,
  pathID: string | undefined,
  queryNamespace: string | undefined,
): JobSpec {
  if (body === undefined || body === null) throw ApiError.badRequest("Request body is empty");
  if (body.Job === undefined || body.Job === null) throw ApiError.badRequest("Job must be specified");
  const raw = body.Job as Record<string, unknown>;
  if (typeof raw !== "object" || Array.isArray(raw)) throw ApiError.badRequest("Job must be an object");
  if (raw.ID === undefined || raw.ID === null) throw ApiError.badRequest("Job ID hasn't been provided");
  if (pathID !== undefined && raw.ID !== pathID) throw ApiError.badRequest("Job ID does not match name");
  const namespace =
    (typeof raw.Namespace === "string" && raw.Namespace) || queryNamespace || body.Namespace || "default";
  let job: JobSpec;
  const ignored: string[] = [];
  try {
    job = canonicalizeJob({ ...raw, Namespace: namespace }, ignored);
  } catch (err) {
    if (err instanceof JobShapeError) throw ApiError.badRequest(err.message);
    throw err;
  }
  // Fields Nomad 1.5 does not know are dropped, as its decoder drops them.
  if (ignored.length > 0) ctx.logger.debug({ fields: ignored, job: job.ID }, "ignored unknown job fields");
  const invalid = validateJob(job);
  if (invalid) throw ApiError.badRequest(invalid);
  if (!ctx.tables.namespaces.has(job.Namespace))
    throw ApiError.badRequest(nonexistentNamespace(job.Namespace));
  return job;
}

/**
 * Nomad's Job.Register: a new version (with its evaluation, in one record),
 * or — when nothing in the spec changed — only a new evaluation, as Nomad
 * writes it.
 */
export async function registerJob(
  ctx: ApiContext,
  identity: AuthenticatedIdentity,
  body: RegisterBody,
  submitted: JobSpec,
): Promise<RegisterAnswer> {
  if (!identity.allows(submitted.Namespace, "submit-job")) throw ApiError.forbidden();
  if (
    currentSchedulerConfig(ctx.tables.schedulerConfig).RejectJobRegistration &&
    !identity.allows("*", "management")
  ) {
    throw ApiError.forbidden(REJECT_REGISTRATION);
  }
  const evalPriority = body.EvalPriority ?? 0;
  if (evalPriority !== 0 && (evalPriority < JOB_MIN_PRIORITY || evalPriority > JOB_MAX_PRIORITY)) {
    throw ApiError.badRequest(`eval priority must be between [${JOB_MIN_PRIORITY}, ${JOB_MAX_PRIORITY}]`);
  }
  const existing = ctx.tables.jobs.get(jobKey(submitted.Namespace, submitted.ID));
  if (body.EnforceIndex) {
    const refusal = enforceIndexRefusal(body.JobModifyIndex ?? 0, existing);
    if (refusal) throw ApiError.conflict(refusal);
  }
  let job = submitted;
  if (body.PreserveCounts && existing) {
    job = {
      ...job,
      TaskGroups: job.TaskGroups.map((tg) => {
        const before = existing.TaskGroups.find((g) => g.Name === tg.Name);
        return before ? { ...tg, Count: before.Count } : tg;
      }),
    };
  }
  if (existing && existing.Type !== job.Type && !existing.Stop) {
    throw ApiError.badRequest(`cannot update job from type "${existing.Type}" to "${job.Type}"`);
  }
  const now = ctx.clock.now();
  const needsEval = job.Periodic === null && job.ParameterizedJob === null;
  const evaluation = needsEval ? registerEval(job, evalPriority, now, existing) : null;

  if (existing && !specChanged(existing, job)) {
    // Nothing changed: Nomad submits only the evaluation, against the stored version.
    if (!evaluation)
      return {
        EvalID: "",
        EvalCreateIndex: 0,
        JobModifyIndex: existing.JobModifyIndex,
        Warnings: "",
        Index: existing.ModifyIndex,
      };
    const index = await commit(ctx, identity, [
      {
        type: "EvaluationsUpserted",
        v: 1,
        data: { Evals: [{ ...evaluation, JobModifyIndex: existing.JobModifyIndex }] },
      },
    ]);
    return {
      EvalID: evaluation.ID,
      EvalCreateIndex: index,
      JobModifyIndex: existing.JobModifyIndex,
      Warnings: "",
      Index: index,
    };
  }
  const data: JobRegistered = {
    Job: job,
    Eval: evaluation,
    EnforceIndex: body.EnforceIndex ?? false,
    JobModifyIndex: body.JobModifyIndex ?? 0,
  };
  const index = await commit(ctx, identity, [{ type: "JobRegistered", v: 1, data }]);
  return {
    EvalID: evaluation?.ID ?? "",
    EvalCreateIndex: evaluation ? index : 0,
    JobModifyIndex: index,
    Warnings: "",
    Index: index,
  };
}

function registerEval(
  job: JobSpec,
  evalPriority: number,
  nowMs: number,
  existing: JobRow | undefined,
): EvaluationSpec {
  return newEvaluation({
    ID: randomUUID(),
    Namespace: job.Namespace,
    Priority: evalPriority || job.Priority,
    Type: job.Type,
    TriggeredBy: "job-register",
    JobID: job.ID,
    JobModifyIndex: existing?.JobModifyIndex ?? 0,
    CreateTime: nowMs * 1e6,
  });
}

/** Nomad's Job.Deregister: stop (a new version with Stop) or purge, with the evaluation that stops its allocations. */
export async function deregisterJob(
  ctx: ApiContext,
  identity: AuthenticatedIdentity,
  namespace: string,
  jobID: string,
  purge: boolean,
  evalPriority: number,
): Promise<DeregisterAnswer> {
  if (!identity.allows(namespace, "submit-job")) throw ApiError.forbidden();
  const job = ctx.tables.jobs.get(jobKey(namespace, jobID));
  if (!job) throw ApiError.notFound("job not found");
  const now = ctx.clock.now();
  // Nomad (1.5) gives the deregister evaluation the service type whatever the job's.
  const evaluation =
    job.Periodic === null && job.ParameterizedJob === null
      ? newEvaluation({
          ID: randomUUID(),
          Namespace: namespace,
          Priority: evalPriority || job.Priority,
          Type: "service",
          TriggeredBy: "job-deregister",
          JobID: jobID,
          CreateTime: now * 1e6,
        })
      : null;
  const data: JobDeregistered = { Namespace: namespace, JobID: jobID, Purge: purge, Eval: evaluation };
  const index = await commit(ctx, identity, [{ type: "JobDeregistered", v: 1, data }]);
  return {
    EvalID: evaluation?.ID ?? "",
    EvalCreateIndex: evaluation ? index : 0,
    JobModifyIndex: index,
    VolumeEvalID: "",
    VolumeEvalIndex: 0,
    Index: index,
  };
}
