import type { FastifyPluginAsync } from "fastify";
import { submissionKey, submissionView } from "../../../projections/job-submissions.ts";
import { ApiError } from "../api-error.ts";
import { blockingQuery } from "../blocking-query.ts";
import type { ApiContext } from "../context.ts";
import { refuseOtherMethods } from "../refuse-other-methods.ts";
import { COMMON_READ_PARAMS, idParam, textQuery } from "../request-schemas.ts";
import { requestNamespace } from "../write-answer.ts";

const readQuery = textQuery("namespace", "version", ...COMMON_READ_PARAMS);

/**
 * `GET /v1/job/:id/submission?version=N`: the jobspec a job version was
 * submitted with (Nomad's Job.GetJobSubmission), indexed by the register
 * that created the version. Versions submitted without one have none.
 */
export const jobSubmissionPlugin: FastifyPluginAsync<ApiContext> = async (app, ctx) => {
  app.get(
    "/v1/job/:id/submission",
    { schema: { params: idParam, querystring: readQuery } },
    async (request, reply) => {
      const version = parseUint((request.query as { version?: string }).version);
      if (version === undefined)
        throw ApiError.badRequest("Unable to parse job submission version parameter");
      const namespace = requestNamespace(request.query);
      if (!request.identity.allows(namespace, "read-job")) throw ApiError.forbidden();
      const { id } = request.params as { id: string };
      const key = submissionKey(namespace, id, version);
      const { jobSubmissions } = request.view.tables;
      const body = await blockingQuery(ctx, request, reply, [{ table: "job_submissions", key }], () => {
        const row = jobSubmissions.get(key);
        return { index: row?.JobModifyIndex ?? 0, body: row ? submissionView(row) : null };
      });
      if (!body) throw ApiError.notFound("job source not found");
      return body;
    },
  );
  refuseOtherMethods(app, "/v1/job/:id/submission", ["GET"]);
};

/** Go's strconv.ParseUint(s, 10, 64), within what a version can be here. */
function parseUint(text: string | undefined): number | undefined {
  if (text === undefined || !/^[0-9]+$/.test(text)) return undefined;
  const n = Number(text);
  return Number.isSafeInteger(n) ? n : undefined;
}
