import { randomUUID } from "node:crypto";
import { jobKey } from "../../projections/evals.ts";
import { isParameterized } from "../../projections/job-children.ts";
import {
  enforceIndexRefusal,
  type JobRow,
  nonexistentNamespace,
  nonexistentNodePool,
} from "../../projections/jobs.ts";
import { currentSchedulerConfig } from "../../projections/scheduler-config.ts";
import { type EvaluationSpec, newEvaluation } from "../../streams/evals.ts";
import {
  JOB_REGISTERED_VERSION,
  type JobDeregistered,
  type JobRegistered,
  type JobSpec,
  type JobSubmission,
} from "../../streams/jobs.ts";
import type { AuthenticatedIdentity } from "../auth/authenticate.ts";
import { canonicalizeJob, JobShapeError } from "../jobs/canonicalize.ts";
import { assignScalingPolicyIDs, systemJobScalingRefusal } from "../jobs/scaling-policy.ts";
import { specChanged } from "../jobs/spec-changed.ts";
import { JOB_MAX_PRIORITY, JOB_MIN_PRIORITY, validateJob } from "../jobs/validate.ts";
import { ApiError } from "./api-error.ts";
import { commit } from "./commit.ts";
import type { ApiContext } from "./context.ts";
import { acceptedSubmission, mergeWarnings, submissionSchema } from "./job-submission-input.ts";
import { WRITE_REQUEST_FIELDS } from "./request-schemas.ts";

/** Nomad's api.JobRegisterRequest (WriteRequest fields embedded). */
export interface RegisterBody {
  Job?: unknown;
  EnforceIndex?: boolean;
  JobModifyIndex?: number;
  PolicyOverride?: boolean;
  PreserveCounts?: boolean;
  PreserveResources?: boolean;
  EvalPriority?: number;
  Namespace?: string;
  Submission?: JobSubmission | null;
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
    PreserveResources: { type: "boolean" },
    EvalPriority: { type: "integer" },
    Submission: submissionSchema,
    ...WRITE_REQUEST_FIELDS,
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
    // Copied, then assigned: the order a spread would give, without V8's slow
    // path for a literal that adds a key after a spread.
    const input: Record<string, unknown> = Object.assign({}, raw);
    input.Namespace = namespace;
    job = canonicalizeJob(input, ignored);
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
  if (job.NodePool && !ctx.tables.nodePools.has(job.NodePool))
    throw ApiError.badRequest(nonexistentNodePool(job.ID, job.NodePool));
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
  /** Job.Revert: the reverted-to version's source, instead of the body's. */
  options: { readonly submission?: JobSubmission | null } = {},
): Promise<RegisterAnswer> {
  if (!identity.allows(submitted.Namespace, "submit-job")) throw ApiError.forbidden();
  if (mountsCsiVolumes(submitted) && !allowCsiMount(identity, submitted.Namespace))
    throw ApiError.forbidden();
  if (
    currentSchedulerConfig(ctx.tables.schedulerConfig).RejectJobRegistration &&
    !identity.allows("*", "management")
  ) {
    throw ApiError.forbidden(REJECT_REGISTRATION);
  }
  // 0 (what `nomad job run` sends when no -eval-priority is given) means "the job's own".
  const evalPriority = body.EvalPriority ?? 0;
  if (evalPriority !== 0) checkEvalPriority(evalPriority);
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
  if (body.PreserveResources && existing) job = withResourcesOf(existing, job);
  if (existing && existing.Type !== job.Type && !existing.Stop) {
    throw ApiError.badRequest(`cannot update job from type "${existing.Type}" to "${job.Type}"`);
  }
  const systemScaling = systemJobScalingRefusal(job);
  if (systemScaling) throw ApiError.badRequest(systemScaling);
  job = assignScalingPolicyIDs(job, existing, randomUUID);
  const source =
    options.submission !== undefined
      ? { submission: options.submission }
      : acceptedSubmission(body.Submission);
  const warnings = mergeWarnings(source.warning ? [source.warning] : []);
  const now = ctx.clock.now();
  // Nomad evaluates the children of periodic and parameterized jobs, never the job itself.
  const needsEval = job.Periodic === null && !isParameterized(job);
  const evaluation = needsEval ? registerEval(job, evalPriority, now, existing) : null;

  if (existing && !specChanged(existing, job)) {
    // Nothing changed: Nomad submits only the evaluation, against the stored version.
    if (!evaluation)
      return {
        EvalID: "",
        EvalCreateIndex: 0,
        JobModifyIndex: existing.JobModifyIndex,
        Warnings: warnings,
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
      Warnings: warnings,
      Index: index,
    };
  }
  const data: JobRegistered = {
    Job: job,
    Eval: evaluation,
    EnforceIndex: body.EnforceIndex ?? false,
    JobModifyIndex: body.JobModifyIndex ?? 0,
    Submission: source.submission,
  };
  const index = await commit(ctx, identity, [{ type: "JobRegistered", v: JOB_REGISTERED_VERSION, data }]);
  return {
    EvalID: evaluation?.ID ?? "",
    EvalCreateIndex: evaluation ? index : 0,
    JobModifyIndex: index,
    Warnings: warnings,
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

/** Nomad's HTTP agent checks an eval priority override before the RPC (validateEvalPriorityOpt). */
function checkEvalPriority(priority: number): void {
  if (priority < JOB_MIN_PRIORITY || priority > JOB_MAX_PRIORITY) {
    throw ApiError.badRequest(
      `Eval priority must be between ${JOB_MIN_PRIORITY} and ${JOB_MAX_PRIORITY} inclusively`,
    );
  }
}

/**
 * `?eval_priority=` of a deregister, read as Nomad's handler reads it: a Go
 * int (strconv.Atoi); 0 or below is no override — `nomad job stop` always
 * sends the parameter, 0 when -eval-priority is not given.
 */
export function evalPriorityParam(text: string | undefined): number {
  if (text === undefined || text === "") return 0;
  const atoi = (why: string) =>
    ApiError.badRequest(
      `Failed to parse value of "eval_priority" (${text}) as a int: strconv.Atoi: parsing ${JSON.stringify(text)}: ${why}`,
    );
  if (!/^[+-]?[0-9]+$/.test(text)) throw atoi("invalid syntax");
  const value = BigInt(text);
  if (value > INT64_MAX || value < INT64_MIN) throw atoi("value out of range");
  if (value <= 0n) return 0;
  // A huge value loses precision here, but stays far past 100 and is refused.
  const priority = Number(value);
  checkEvalPriority(priority);
  return priority;
}

const INT64_MAX = (1n << 63n) - 1n;
const INT64_MIN = -(1n << 63n);

/**
 * Nomad's Job.Deregister: stop (a new version with Stop) or purge, with the
 * evaluation that stops its allocations. A job that does not exist is no
 * error: Nomad answers an empty response and writes nothing.
 */
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
  if (!job) {
    return {
      EvalID: "",
      EvalCreateIndex: 0,
      JobModifyIndex: 0,
      VolumeEvalID: "",
      VolumeEvalIndex: 0,
      Index: 0,
    };
  }
  const now = ctx.clock.now();
  // Nomad (1.5) gives the deregister evaluation the service type whatever the job's.
  const evaluation =
    job.Periodic === null && !isParameterized(job)
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

/**
 * Register's PreserveResources: every task that the running version has too
 * (same group, same name) keeps that version's resources, so a job file
 * re-submitted does not undo resources changed by the operator since.
 */
function withResourcesOf(existing: JobSpec, job: JobSpec): JobSpec {
  return {
    ...job,
    TaskGroups: job.TaskGroups.map((tg) => {
      const before = existing.TaskGroups.find((g) => g.Name === tg.Name);
      if (!before) return tg;
      return {
        ...tg,
        Tasks: tg.Tasks.map((task) => {
          const old = before.Tasks.find((t) => t.Name === task.Name);
          return old ? { ...task, Resources: old.Resources } : task;
        }),
      };
    }),
  };
}

function mountsCsiVolumes(job: JobSpec): boolean {
  return job.TaskGroups.some((tg) => Object.values(tg.Volumes ?? {}).some((v) => v?.Type === "csi"));
}

/** Nomad's allowCSIMount, asked on Job.Register for a job with CSI volumes: plugin read and csi-mount-volume. */
function allowCsiMount(identity: AuthenticatedIdentity, namespace: string): boolean {
  return identity.allows("", "plugin:read") && identity.allows(namespace, "csi-mount-volume");
}
