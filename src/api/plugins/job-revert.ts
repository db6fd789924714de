import type { FastifyPluginAsync } from "fastify";
import { jobKey } from "../../../projections/evals.ts";
import { submissionKey } from "../../../projections/job-submissions.ts";
import { versionNotFound } from "../../../projections/job-version-changes.ts";
import { versionKey } from "../../../projections/jobs.ts";
import type { JobStabilitySet } from "../../../streams/jobs.ts";
import { revertSpecOf } from "../../jobs/revert-spec.ts";
import { ApiError } from "../api-error.ts";
import { commit } from "../commit.ts";
import type { ApiContext } from "../context.ts";
import { registerJob } from "../job-writes.ts";
import { refuseOtherMethods } from "../refuse-other-methods.ts";
import { idParam, textQuery, WRITE_REQUEST_FIELDS } from "../request-schemas.ts";
import { requestNamespace, writeAnswer } from "../write-answer.ts";

/** Nomad's JobRevertRequest. */
const revertBody = {
  type: ["object", "null"],
  additionalProperties: false,
  properties: {
    JobID: { type: "string" },
    JobVersion: { type: "integer", minimum: 0 },
    EnforcePriorVersion: { type: ["integer", "null"], minimum: 0 },
    ConsulToken: { type: "string" },
    VaultToken: { type: "string" },
    ...WRITE_REQUEST_FIELDS,
  },
} as const;

/** Nomad's JobStabilityRequest. */
const stableBody = {
  type: ["object", "null"],
  additionalProperties: false,
  properties: {
    JobID: { type: "string" },
    JobVersion: { type: "integer", minimum: 0 },
    Stable: { type: "boolean" },
    ...WRITE_REQUEST_FIELDS,
  },
} as const;

const writeQuery = textQuery("namespace", "region");

interface RevertBody {
  JobID?: string;
  JobVersion?: number;
  EnforcePriorVersion?: number | null;
  Namespace?: string;
}

interface StableBody {
  JobID?: string;
  JobVersion?: number;
  Stable?: boolean;
  Namespace?: string;
}

/**
 * `/v1/job/:id/revert` (Nomad's Job.Revert: the spec of an earlier version
 * registered again as a new version, with its source) and
 * `/v1/job/:id/stable` (Job.Stable: a version marked stable or not).
 */
export const jobRevertPlugin: FastifyPluginAsync<ApiContext> = async (app, ctx) => {
  app.route({
    method: ["PUT", "POST"],
    url: "/v1/job/:id/revert",
    schema: { params: idParam, body: revertBody, querystring: writeQuery },
    handler: async (request, reply) => {
      const { id } = request.params as { id: string };
      const body = (request.body ?? {}) as RevertBody;
      checkJobID(body.JobID, id);
      const namespace = requestNamespace(request.query, body);
      if (!request.identity.allows(namespace, "submit-job")) throw ApiError.forbidden();
      const current = ctx.tables.jobs.get(jobKey(namespace, id));
      if (!current) throw ApiError.notFound(`job "${id}" not found`);
      const version = body.JobVersion ?? 0;
      if (version === current.Version) throw ApiError.badRequest("can't revert to current version");
      const target = ctx.tables.jobVersions.get(versionKey(namespace, id, version));
      if (!target) throw ApiError.notFound(versionNotFound(id, namespace, version));
      const enforce = body.EnforcePriorVersion ?? null;
      if (enforce !== null && current.Version !== enforce) {
        throw ApiError.conflict(`Current job has version ${current.Version}; enforcing version ${enforce}`);
      }
      const submission = ctx.tables.jobSubmissions.get(submissionKey(namespace, id, version));
      const answer = await registerJob(
        ctx,
        request.identity,
        { EnforceIndex: enforce !== null, JobModifyIndex: current.JobModifyIndex },
        revertSpecOf(target),
        {
          submission: submission
            ? {
                Source: submission.Source,
                Format: submission.Format,
                VariableFlags: submission.VariableFlags,
                Variables: submission.Variables,
              }
            : null,
        },
      );
      reply.header("X-Nomad-KnownLeader", String(ctx.leadership.leaderAddress() !== ""));
      reply.header("X-Nomad-LastContact", "0");
      return writeAnswer(ctx, reply, answer);
    },
  });

  app.route({
    method: ["PUT", "POST"],
    url: "/v1/job/:id/stable",
    schema: { params: idParam, body: stableBody, querystring: writeQuery },
    handler: async (request, reply) => {
      const { id } = request.params as { id: string };
      const body = (request.body ?? {}) as StableBody;
      checkJobID(body.JobID, id);
      const namespace = requestNamespace(request.query, body);
      if (!request.identity.allows(namespace, "submit-job")) throw ApiError.forbidden();
      const version = body.JobVersion ?? 0;
      // The versions of a purged job stay as history, but Nomad's are gone with it.
      if (
        !ctx.tables.jobs.has(jobKey(namespace, id)) ||
        !ctx.tables.jobVersions.has(versionKey(namespace, id, version))
      ) {
        throw ApiError.notFound(versionNotFound(id, namespace, version));
      }
      const data: JobStabilitySet = {
        Namespace: namespace,
        JobID: id,
        Version: version,
        Stable: body.Stable === true,
      };
      const index = await commit(ctx, request.identity, [{ type: "JobStabilitySet", v: 1, data }]);
      reply.header("X-Nomad-Index", String(index));
      return { Index: index };
    },
  });

  for (const sub of ["revert", "stable"]) refuseOtherMethods(app, `/v1/job/:id/${sub}`, ["PUT", "POST"]);
};

/** Nomad's agent checks: the body names the job the path does. */
function checkJobID(bodyID: string | undefined, pathID: string): void {
  if (!bodyID) throw ApiError.badRequest("JobID must be specified");
  if (bodyID !== pathID) throw ApiError.badRequest("Job ID does not match");
}
