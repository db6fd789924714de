import type { FastifyPluginAsync } from "fastify";
import { canonicalizeJob, JobShapeError } from "../../jobs/canonicalize.ts";
import { JobspecError } from "../../jobs/hcl/hcl-expressions.ts";
import { HclParser, HclSyntaxError } from "../../jobs/hcl/hcl-parser.ts";
import { parseJobspec } from "../../jobs/hcl/parse-jobspec.ts";
import { ApiError } from "../api-error.ts";
import type { ApiContext } from "../context.ts";
import { refuseOtherMethods } from "../refuse-other-methods.ts";
import { textQuery } from "../request-schemas.ts";
import { requestNamespace } from "../write-answer.ts";

/** Nomad's api.JobsParseRequest. */
const parseBody = {
  type: ["object", "null"],
  additionalProperties: false,
  properties: {
    JobHCL: { type: "string" },
    Variables: { type: "string" },
    Canonicalize: { type: "boolean" },
    HCLv1: { type: "boolean" },
    Region: { type: "string" },
    Namespace: { type: "string" },
    SecretID: { type: "string" },
    AuthToken: { type: "string" },
  },
} as const;

interface ParseBody {
  JobHCL?: string;
  Variables?: string;
  Canonicalize?: boolean;
  HCLv1?: boolean;
}

/**
 * The largest job spec (with its variables) parsed, in UTF-8 bytes. HCL's
 * WebAssembly parser takes seconds for a few hundred KiB; the largest real
 * job specs are tens of KiB, templates included.
 */
export const MAX_JOBSPEC_BYTES = 256 * 1024;

/**
 * `PUT/POST /v1/jobs/parse` (Nomad's JobsParseRequest): an HCL2 job spec to
 * the api.Job it describes, with Nomad's client-side defaults when
 * Canonicalize is set. HCL1 (`HCLv1`) is not parsed.
 */
export const jobParsePlugin: FastifyPluginAsync<ApiContext> = async (app) => {
  const parser = new HclParser({ timeoutMs: 60_000 });
  app.addHook("onClose", async () => parser.close());

  app.route({
    method: ["PUT", "POST"],
    url: "/v1/jobs/parse",
    schema: { body: parseBody, querystring: textQuery("namespace", "region") },
    handler: async (request) => {
      const namespace = requestNamespace(request.query);
      const { identity } = request;
      if (!identity.allows(namespace, "parse-job") && !identity.allows(namespace, "submit-job")) {
        throw ApiError.forbidden();
      }
      const body = (request.body ?? {}) as ParseBody;
      const hcl = body.JobHCL ?? "";
      if (hcl === "") throw ApiError.badRequest("Job spec is empty");
      if (body.HCLv1) {
        throw ApiError.badRequest(
          "HCL1 job specs are not supported: chronomad parses HCL2 only (set HCLv1 to false, or convert the job spec to HCL2)",
        );
      }
      const variables = body.Variables ?? "";
      const size = Buffer.byteLength(hcl) + Buffer.byteLength(variables);
      if (size > MAX_JOBSPEC_BYTES) {
        throw ApiError.badRequest(
          `job spec and variables are ${size} bytes; chronomad parses up to ${MAX_JOBSPEC_BYTES} bytes`,
        );
      }
      let job: Record<string, unknown>;
      try {
        job = await parseJobspec(parser, hcl, variables);
      } catch (err) {
        if (err instanceof JobspecError || err instanceof HclSyntaxError) {
          throw ApiError.badRequest(`Failed to parse job: ${err.message}`);
        }
        throw err;
      }
      if (!body.Canonicalize) return job;
      try {
        return canonicalizeJob(job);
      } catch (err) {
        if (err instanceof JobShapeError) throw ApiError.badRequest(`Failed to parse job: ${err.message}`);
        throw err;
      }
    },
  });
  refuseOtherMethods(app, "/v1/jobs/parse", ["PUT", "POST"]);
};
