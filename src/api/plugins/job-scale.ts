import { randomUUID } from "node:crypto";
import type { FastifyPluginAsync } from "fastify";
import type { AllocRow } from "../../../projections/allocs.ts";
import { latestDeployment } from "../../../projections/deployments.ts";
import { jobKey } from "../../../projections/evals.ts";
import { scaleCountRefusal, scaleRefusals } from "../../../projections/job-version-changes.ts";
import type { JobRow } from "../../../projections/jobs.ts";
import type { ScalingEvent } from "../../../projections/scaling.ts";
import { currentSchedulerConfig } from "../../../projections/scheduler-config.ts";
import { isTerminalAlloc } from "../../../streams/allocs.ts";
import { isDeploymentActive } from "../../../streams/deployments.ts";
import { newEvaluation } from "../../../streams/evals.ts";
import type { JobScaled } from "../../../streams/job-scaling.ts";
import { ApiError } from "../api-error.ts";
import { blockingQuery } from "../blocking-query.ts";
import { commit } from "../commit.ts";
import type { ApiContext } from "../context.ts";
import { REJECT_REGISTRATION } from "../job-writes.ts";
import { refuseOtherMethods } from "../refuse-other-methods.ts";
import { COMMON_READ_PARAMS, idParam, textQuery, WRITE_REQUEST_FIELDS } from "../request-schemas.ts";
import { requestNamespace, writeAnswer } from "../write-answer.ts";

/** Nomad's api.ScalingRequest. */
const scaleBody = {
  type: ["object", "null"],
  additionalProperties: false,
  properties: {
    Count: { type: ["integer", "null"] },
    Target: { type: ["object", "null"], additionalProperties: { type: "string" } },
    Message: { type: "string" },
    Error: { type: "boolean" },
    Meta: { type: ["object", "null"] },
    PolicyOverride: { type: "boolean" },
    JobModifyIndex: { type: "integer", minimum: 0 },
    ...WRITE_REQUEST_FIELDS,
  },
} as const;

interface ScaleBody {
  Count?: number | null;
  Target?: Record<string, string> | null;
  Message?: string;
  Error?: boolean;
  Meta?: Record<string, unknown> | null;
}

const readQuery = textQuery("namespace", ...COMMON_READ_PARAMS);
const writeQuery = textQuery("namespace", "region");

/** Nomad's TaskGroupScaleStatus. */
interface GroupScaleStatus {
  Desired: number;
  Placed: number;
  Running: number;
  Healthy: number;
  Unhealthy: number;
  Events: readonly ScalingEvent[] | null;
}

/**
 * `/v1/job/:id/scale`: the scale status of a job's groups (desired counts,
 * what is placed, running and healthy, the recent scaling events), and
 * scaling actions (Nomad's Job.Scale): with a count, a new job version and
 * its evaluation; without, an event for the record only.
 */
export const jobScalePlugin: FastifyPluginAsync<ApiContext> = async (app, ctx) => {
  app.get(
    "/v1/job/:id/scale",
    { schema: { params: idParam, querystring: readQuery } },
    async (request, reply) => {
      const namespace = requestNamespace(request.query);
      const { identity } = request;
      if (!identity.allows(namespace, "read-job") && !identity.allows(namespace, "read-job-scaling")) {
        throw ApiError.forbidden();
      }
      const { id } = request.params as { id: string };
      const key = jobKey(namespace, id);
      const { jobs, scalingEvents, allocs } = request.view.tables;
      const watches = [
        { table: "jobs", key },
        { table: "scaling_events", key },
        { table: "allocs", index: "job", value: key },
      ];
      const body = await blockingQuery(ctx, request, reply, watches, () => {
        const job = jobs.get(key);
        if (!job) return { index: 0, body: null };
        const events = scalingEvents.get(key);
        const { groups, allocsIndex } = scaleStatusGroups(job, allocs.by("job", key), events?.ScalingEvents);
        return {
          index: Math.max(job.ModifyIndex, events?.ModifyIndex ?? 0, allocsIndex),
          body: {
            JobID: job.ID,
            Namespace: job.Namespace,
            JobCreateIndex: job.CreateIndex,
            JobModifyIndex: job.ModifyIndex,
            JobStopped: job.Stop,
            TaskGroups: groups,
          },
        };
      });
      if (!body) throw ApiError.notFound("job not found");
      return body;
    },
  );

  app.route({
    method: ["PUT", "POST"],
    url: "/v1/job/:id/scale",
    schema: { params: idParam, body: scaleBody, querystring: writeQuery },
    handler: async (request, reply) => {
      const { id } = request.params as { id: string };
      // `/v1/job//scale`: Nomad's client gets a 400 for it.
      if (id === "") throw ApiError.badRequest("missing job ID for scaling action");
      const body = (request.body ?? {}) as ScaleBody;
      const target = body.Target ?? {};
      if (target.Job && target.Job !== id) throw ApiError.badRequest("job ID in payload did not match URL");
      const namespace = requestNamespace(request.query);
      const { identity } = request;
      if (!identity.allows(namespace, "scale-job") && !identity.allows(namespace, "submit-job")) {
        throw ApiError.forbidden();
      }
      if (
        currentSchedulerConfig(ctx.tables.schedulerConfig).RejectJobRegistration &&
        !identity.allows("*", "management")
      ) {
        throw ApiError.forbidden(REJECT_REGISTRATION);
      }
      const count = body.Count ?? null;
      checkScaleRequest(namespace, target, count, body.Error === true);
      const job = ctx.tables.jobs.get(jobKey(namespace, id));
      if (!job) throw ApiError.notFound(scaleRefusals.jobNotFound(id));
      if (job.Type === "system") throw ApiError.badRequest(`cannot scale jobs of type "system"`);
      const groupName = target.Group ?? "";
      const group = job.TaskGroups.find((g) => g.Name === groupName);
      if (!group) throw ApiError.badRequest(scaleRefusals.groupMissing(groupName));
      let evaluation = null;
      if (count !== null) {
        const refusal = scaleCountRefusal(group, count);
        if (refusal) throw ApiError.badRequest(refusal);
        const deployment = latestDeployment(ctx.tables.deployments, namespace, id);
        if (
          deployment &&
          isDeploymentActive(deployment.Status) &&
          deployment.JobCreateIndex === job.CreateIndex
        ) {
          throw ApiError.badRequest("job scaling blocked due to active deployment");
        }
        if (job.Periodic === null && job.ParameterizedJob === null) {
          evaluation = newEvaluation({
            ID: randomUUID(),
            Namespace: namespace,
            Priority: job.Priority,
            Type: job.Type,
            TriggeredBy: "job-scaling",
            JobID: id,
            CreateTime: ctx.clock.now() * 1e6,
          });
        }
      }
      const data: JobScaled = {
        Namespace: namespace,
        JobID: id,
        TaskGroup: groupName,
        Count: count,
        PreviousCount: group.Count,
        Message: body.Message ?? "",
        Error: body.Error === true,
        Meta: body.Meta ?? null,
        Eval: evaluation,
      };
      const index = await commit(ctx, identity, [{ type: "JobScaled", v: 1, data }]);
      return writeAnswer(ctx, reply, {
        EvalID: evaluation?.ID ?? "",
        EvalCreateIndex: evaluation ? index : 0,
        // Without a count the job is untouched: its JobModifyIndex stands.
        JobModifyIndex: count === null ? job.JobModifyIndex : index,
        Warnings: "",
        Index: index,
      });
    },
  });

  refuseOtherMethods(app, "/v1/job/:id/scale", ["GET", "PUT", "POST"]);
};

/** Nomad's JobScaleRequest.Validate. */
function checkScaleRequest(
  namespace: string,
  target: Readonly<Record<string, string>>,
  count: number | null,
  error: boolean,
): void {
  if (target.Namespace && target.Namespace !== namespace) {
    throw ApiError.badRequest("namespace in payload did not match header");
  }
  if (!target.Group) throw ApiError.badRequest("missing task group name for scaling action");
  if (count !== null) {
    if (count < 0) throw ApiError.badRequest("scaling action count can't be negative");
    if (error) throw ApiError.badRequest("scaling action should not contain count if error is true");
  }
}

/**
 * Nomad's ScaleStatus counts over the current instance's allocations:
 * canaries and terminal allocations are left out; health is the deployment
 * health the client reported.
 */
function scaleStatusGroups(
  job: JobRow,
  allocs: readonly AllocRow[],
  events: Readonly<Record<string, readonly ScalingEvent[]>> | undefined,
): { groups: Record<string, GroupScaleStatus>; allocsIndex: number } {
  const groups: Record<string, GroupScaleStatus> = {};
  for (const tg of job.TaskGroups) {
    groups[tg.Name] = {
      Desired: tg.Count,
      Placed: 0,
      Running: 0,
      Healthy: 0,
      Unhealthy: 0,
      Events: events?.[tg.Name] ?? null,
    };
  }
  let allocsIndex = 0;
  for (const a of allocs) {
    if ((a.Job?.CreateIndex ?? job.CreateIndex) !== job.CreateIndex) continue;
    if (a.DeploymentStatus?.Canary === true || isTerminalAlloc(a)) continue;
    const g = groups[a.TaskGroup];
    if (!g) continue;
    g.Placed++;
    if (a.ClientStatus === "running") g.Running++;
    const healthy = a.DeploymentStatus?.Healthy;
    if (healthy === true) g.Healthy++;
    else if (healthy === false) g.Unhealthy++;
    allocsIndex = Math.max(allocsIndex, a.ModifyIndex);
  }
  return { groups, allocsIndex };
}
