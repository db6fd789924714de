import { randomUUID } from "node:crypto";
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from "fastify";
import { promotionShortfall } from "../../../projections/deployment-writes.ts";
import type { DeploymentRow } from "../../../projections/deployments.ts";
import { jobKey } from "../../../projections/evals.ts";
import { goTime } from "../../../projections/go-time.ts";
import {
  DEPLOYMENT_FAILED_ALLOCATIONS,
  DEPLOYMENT_FAILED_BY_USER,
  DEPLOYMENT_PAUSED,
  DEPLOYMENT_RUNNING,
  type DeploymentAllocHealthSet,
  type DeploymentPromoted,
  type DeploymentStatusUpdated,
  isDeploymentActive,
  noRollbackTargetDescription,
} from "../../../streams/deployments.ts";
import { type EvaluationSpec, newEvaluation } from "../../../streams/evals.ts";
import { failureDrafts } from "../../services/deployment-decisions.ts";
import type { Draft } from "../../store/writer.ts";
import { ApiError } from "../api-error.ts";
import { commit } from "../commit.ts";
import type { ApiContext } from "../context.ts";
import { refuseOtherMethods } from "../refuse-other-methods.ts";
import { idParam, textQuery, WRITE_REQUEST_FIELDS } from "../request-schemas.ts";

const writeQuery = textQuery("namespace", "region");

const stringList = { type: ["array", "null"], items: { type: "string" } } as const;

/** Nomad's DeploymentPauseRequest, DeploymentPromoteRequest and DeploymentAllocHealthRequest bodies. */
const pauseBody = {
  type: ["object", "null"],
  properties: { DeploymentID: { type: "string" }, Pause: { type: "boolean" }, ...WRITE_REQUEST_FIELDS },
} as const;
const promoteBody = {
  type: ["object", "null"],
  properties: {
    DeploymentID: { type: "string" },
    All: { type: "boolean" },
    Groups: stringList,
    ...WRITE_REQUEST_FIELDS,
  },
} as const;
const healthBody = {
  type: ["object", "null"],
  properties: {
    DeploymentID: { type: "string" },
    HealthyAllocationIDs: stringList,
    UnhealthyAllocationIDs: stringList,
    ...WRITE_REQUEST_FIELDS,
  },
} as const;

/** Nomad's DeploymentUpdateResponse. */
interface UpdateAnswer {
  EvalID: string;
  EvalCreateIndex: number;
  DeploymentModifyIndex: number;
  RevertedJobVersion: number | null;
  Index: number;
}

// Nomad's structs errors for a deployment that is no longer active.
const TERMINAL = {
  fail: "can't fail terminal deployment",
  pause: "can't pause terminal deployment",
  resume: "can't resume terminal deployment",
  promote: "can't promote terminal deployment",
  health: "can't set health of allocations for a terminal deployment",
} as const;

/**
 * `/v1/deployment/{fail,pause,promote,allocation-health}/:id`: Nomad's
 * Deployment.Fail, Pause, Promote and SetAllocHealth. Each is checked here
 * against the current tables (a 4xx and nothing written), then written as
 * one deployment record with the evaluation Nomad creates; its apply checks
 * again (projections/deployment-writes.ts).
 */
export const deploymentUpdatesPlugin: FastifyPluginAsync<ApiContext> = async (app, ctx) => {
  /** Nomad's RPC order: the deployment is looked up, then submit-job in its namespace, then it must be active. */
  const target = (request: FastifyRequest, id: string, terminal: string): DeploymentRow => {
    const d = ctx.tables.deployments.get(id);
    if (!d) throw ApiError.notFound("deployment not found");
    if (!request.identity.allows(d.Namespace, "submit-job")) throw ApiError.forbidden();
    if (!isDeploymentActive(d.Status)) throw ApiError.badRequest(terminal);
    return d;
  };

  const evaluation = (d: DeploymentRow): EvaluationSpec => {
    const job = ctx.tables.jobs.get(jobKey(d.Namespace, d.JobID));
    return newEvaluation({
      ID: randomUUID(),
      Namespace: d.Namespace,
      Priority: d.EvalPriority || job?.Priority || 50,
      Type: job?.Type ?? "service",
      TriggeredBy: "deployment-watcher",
      JobID: d.JobID,
      JobModifyIndex: job?.JobModifyIndex ?? 0,
      DeploymentID: d.ID,
      CreateTime: ctx.clock.now() * 1e6,
    });
  };

  /** Writes the records; the deployment's is the first, the evaluation rides with the last. */
  const write = async (
    request: FastifyRequest,
    reply: FastifyReply,
    drafts: readonly Draft[],
    evalID: string,
    revertedTo: number | undefined,
  ): Promise<UpdateAnswer> => {
    const index = await commit(ctx, request.identity, drafts);
    reply.header("X-Nomad-Index", String(index));
    return {
      EvalID: evalID,
      EvalCreateIndex: evalID === "" ? 0 : index,
      DeploymentModifyIndex: index - (drafts.length - 1),
      RevertedJobVersion: revertedTo ?? null,
      Index: index,
    };
  };

  const checkBodyID = (body: { DeploymentID?: string } | null | undefined, id: string) => {
    if (!body?.DeploymentID) throw ApiError.badRequest("DeploymentID must be specified");
    if (body.DeploymentID !== id) throw ApiError.badRequest("Deployment ID does not match");
  };

  app.route({
    method: ["PUT", "POST"],
    url: "/v1/deployment/fail/:id",
    schema: { params: idParam, querystring: writeQuery },
    handler: async (request, reply) => {
      const { id } = request.params as { id: string };
      const d = target(request, id, TERMINAL.fail);
      const e = evaluation(d);
      const rollback = Object.values(d.TaskGroups).some((g) => g.AutoRevert);
      const failed = failureDrafts(ctx.tables, d, DEPLOYMENT_FAILED_BY_USER, rollback, e);
      return write(request, reply, failed.drafts, e.ID, failed.revertedTo);
    },
  });

  app.route({
    method: ["PUT", "POST"],
    url: "/v1/deployment/pause/:id",
    schema: { params: idParam, querystring: writeQuery, body: pauseBody },
    handler: async (request, reply) => {
      const { id } = request.params as { id: string };
      const body = request.body as { DeploymentID?: string; Pause?: boolean } | null;
      checkBodyID(body, id);
      const pause = body?.Pause === true;
      const d = target(request, id, pause ? TERMINAL.pause : TERMINAL.resume);
      // Resumed: running again, an evaluation moves it on (Nomad's PauseDeployment).
      const e = pause ? null : evaluation(d);
      const data: DeploymentStatusUpdated = {
        DeploymentID: d.ID,
        Status: pause ? "paused" : "running",
        StatusDescription: pause ? DEPLOYMENT_PAUSED : DEPLOYMENT_RUNNING,
        Eval: e,
      };
      return write(request, reply, [{ type: "DeploymentStatusUpdated", v: 1, data }], e?.ID ?? "", undefined);
    },
  });

  app.route({
    method: ["PUT", "POST"],
    url: "/v1/deployment/promote/:id",
    schema: { params: idParam, querystring: writeQuery, body: promoteBody },
    handler: async (request, reply) => {
      const { id } = request.params as { id: string };
      const body = request.body as { DeploymentID?: string; All?: boolean; Groups?: string[] | null } | null;
      checkBodyID(body, id);
      const d = target(request, id, TERMINAL.promote);
      const req = { All: body?.All === true, Groups: body?.Groups ?? null };
      const short = promotionShortfall(d, ctx.tables.allocs, req);
      if (short.length > 0) throw ApiError.badRequest(multiError(short));
      const e = evaluation(d);
      const data: DeploymentPromoted = { DeploymentID: d.ID, ...req, Eval: e };
      return write(request, reply, [{ type: "DeploymentPromoted", v: 1, data }], e.ID, undefined);
    },
  });

  app.route({
    method: ["PUT", "POST"],
    url: "/v1/deployment/allocation-health/:id",
    schema: { params: idParam, querystring: writeQuery, body: healthBody },
    handler: async (request, reply) => {
      const { id } = request.params as { id: string };
      const body = request.body as {
        DeploymentID?: string;
        HealthyAllocationIDs?: string[] | null;
        UnhealthyAllocationIDs?: string[] | null;
      } | null;
      checkBodyID(body, id);
      const healthy = body?.HealthyAllocationIDs ?? [];
      const unhealthy = body?.UnhealthyAllocationIDs ?? [];
      if (healthy.length + unhealthy.length === 0)
        throw ApiError.badRequest("must specify at least one healthy/unhealthy allocation ID");
      const d = target(request, id, TERMINAL.health);
      for (const allocID of [...healthy, ...unhealthy]) {
        const a = ctx.tables.allocs.get(allocID);
        if (!a) throw ApiError.badRequest(`unknown alloc "${allocID}"`);
        if (a.DeploymentID !== d.ID)
          throw ApiError.badRequest(`alloc "${allocID}" is not part of deployment "${d.ID}"`);
      }
      const e = evaluation(d);
      let drafts: Draft[];
      let revertedTo: number | undefined;
      const set = (
        update: DeploymentAllocHealthSet["DeploymentUpdate"],
        evalOf: EvaluationSpec | null,
      ): Draft => ({
        type: "DeploymentAllocHealthSet",
        v: 1,
        data: {
          DeploymentID: d.ID,
          HealthyAllocationIDs: healthy,
          UnhealthyAllocationIDs: unhealthy,
          Timestamp: goTime(ctx.clock.now()),
          DeploymentUpdate: update,
          Eval: evalOf,
        } satisfies DeploymentAllocHealthSet,
      });
      if (unhealthy.length === 0) drafts = [set(null, e)];
      else {
        // Nomad's SetAllocHealth: the deployment fails, and reverts if an unhealthy allocation's group says so.
        const rollback = unhealthy.some((allocID) => {
          const a = ctx.tables.allocs.get(allocID);
          return a !== undefined && d.TaskGroups[a.TaskGroup]?.AutoRevert === true;
        });
        const failed = failureDrafts(ctx.tables, d, DEPLOYMENT_FAILED_ALLOCATIONS, rollback, e);
        // Without a stable version, Nomad's SetAllocHealth says only why it failed.
        const description =
          failed.description === noRollbackTargetDescription(DEPLOYMENT_FAILED_ALLOCATIONS)
            ? DEPLOYMENT_FAILED_ALLOCATIONS
            : failed.description;
        const update = { DeploymentID: d.ID, Status: "failed" as const, StatusDescription: description };
        const reverting = failed.drafts.length > 1;
        drafts = [set(update, reverting ? null : e), ...failed.drafts.slice(1)];
        revertedTo = failed.revertedTo;
      }
      return write(request, reply, drafts, e.ID, revertedTo);
    },
  });

  for (const sub of ["fail", "pause", "promote", "allocation-health"])
    refuseOtherMethods(app, `/v1/deployment/${sub}/:id`, ["PUT", "POST"]);
};

/** hashicorp/go-multierror's format, which Nomad's answer carries. */
function multiError(errors: readonly string[]): string {
  const head = errors.length === 1 ? "1 error occurred:" : `${errors.length} errors occurred:`;
  return `${head}\n${errors.map((e) => `\t* ${e}`).join("\n")}\n\n`;
}
