import type { FastifyPluginAsync } from "fastify";
import { ApiError } from "../api-error.ts";
import type { ApiContext } from "../context.ts";
import { textQuery } from "../request-schemas.ts";

/** What a caller of `/v1/agent/pprof/*` is told, and what to do instead. */
export const PPROF_REFUSAL =
  "chronomad does not serve Go runtime profiles: it runs on Node.js, whose V8 CPU and heap profiles " +
  "are not pprof profiles. Profile a server with Node's own tools instead: start it with " +
  "`node --cpu-prof` or `--heap-prof`, or send the signal set by `--heapsnapshot-signal`";

/**
 * `/v1/agent/pprof/<profile>`: refused with 501 (Not Implemented). Nomad
 * serves Go's runtime/pprof profiles here; serving V8's would need a
 * maintained pprof encoder (the npm package `pprof-format`, pure
 * JavaScript) that chronomad does not depend on yet. Nomad answers the bare
 * `/v1/agent/pprof/` with 404, and so does chronomad.
 */
export const agentPprofPlugin: FastifyPluginAsync<ApiContext> = async (app) => {
  app.get(
    "/v1/agent/pprof/:profile",
    {
      schema: {
        params: { type: "object", properties: { profile: { type: "string" } }, required: ["profile"] },
        querystring: textQuery("seconds", "debug", "gc", "node_id", "server_id", "region"),
      },
    },
    async (request) => {
      // Nomad has no index of profiles.
      if ((request.params as { profile: string }).profile === "") throw ApiError.notFound("Invalid method");
      if (!request.identity.allows("", "agent:write")) throw ApiError.forbidden();
      const query = request.query as { node_id?: string; server_id?: string };
      if (query.node_id && query.server_id) {
        throw ApiError.badRequest("Cannot target node and server simultaneously");
      }
      throw new ApiError(501, PPROF_REFUSAL);
    },
  );
};
