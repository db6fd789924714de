import type { FastifyPluginAsync } from "fastify";
import type { JobSpec } from "../../../streams/jobs.ts";
import { canonicalizeJob, JobShapeError } from "../../jobs/canonicalize.ts";
import { formatErrors } from "../../jobs/multierror.ts";
import { jobValidationErrors } from "../../jobs/validate.ts";
import { ApiError } from "../api-error.ts";
import type { ApiContext } from "../context.ts";
import { refuseOtherMethods } from "../refuse-other-methods.ts";
import { textQuery, WRITE_REQUEST_FIELDS } from "../request-schemas.ts";

/** Nomad's api.JobValidateRequest. */
const validateBody = {
  type: ["object", "null"],
  additionalProperties: false,
  properties: {
    Job: {},
    ...WRITE_REQUEST_FIELDS,
  },
} as const;

/**
 * `PUT/POST /v1/validate/job` (Nomad's Job.Validate): the job with Nomad's
 * defaults, checked as a register checks it, nothing written. A job that
 * fails validation is a 200 listing the errors; only a body that is not a
 * job is a 400. Driver configs are not checked (Nomad does not either, yet
 * says it did: DriverConfigValidated is true).
 */
export const validatePlugin: FastifyPluginAsync<ApiContext> = async (app) => {
  app.route({
    method: ["PUT", "POST"],
    url: "/v1/validate/job",
    schema: { body: validateBody, querystring: textQuery("namespace", "region") },
    handler: async (request) => {
      const raw = (request.body as { Job?: unknown } | null | undefined)?.Job;
      if (raw === undefined || raw === null) throw ApiError.badRequest("Job must be specified");
      let job: JobSpec;
      try {
        job = canonicalizeJob(raw);
      } catch (err) {
        if (err instanceof JobShapeError) throw ApiError.badRequest(err.message);
        throw err;
      }
      if (!request.identity.allows(job.Namespace, "read-job")) throw ApiError.forbidden();
      const errors = jobValidationErrors(job);
      return {
        DriverConfigValidated: true,
        ValidationErrors: errors.length > 0 ? errors : null,
        Error: errors.length > 0 ? formatErrors(errors) : "",
        Warnings: "",
      };
    },
  });
  refuseOtherMethods(app, "/v1/validate/job", ["PUT", "POST"]);
};
