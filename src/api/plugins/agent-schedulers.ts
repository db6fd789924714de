import type { FastifyPluginAsync } from "fastify";
import {
  isValidWorkerPool,
  MAX_SCHEDULERS,
  type WorkerPoolConfig,
} from "../../services/scheduler/worker-pool.ts";
import { ApiError } from "../api-error.ts";
import type { ApiContext } from "../context.ts";
import { refuseOtherMethods } from "../refuse-other-methods.ts";

/** api.AgentSchedulerWorkerConfigRequest; Nomad ignores the server_id a GET answer round-trips with. */
const configBody = {
  type: ["object", "null"],
  additionalProperties: false,
  properties: {
    num_schedulers: { type: "integer" },
    enabled_schedulers: { type: ["array", "null"], items: { type: "string" } },
    server_id: { type: "string" },
  },
} as const;

interface ConfigBody {
  num_schedulers?: number;
  enabled_schedulers?: string[] | null;
}

/**
 * `/v1/agent/schedulers` and `/v1/agent/schedulers/config`: this server's
 * scheduler workers, as Nomad's AgentSchedulerWorker* endpoints. Only the
 * leader runs workers here (followers schedule nothing), so a follower lists
 * none; a change applies to this server alone and lasts until it restarts,
 * as in Nomad.
 */
export const agentSchedulersPlugin: FastifyPluginAsync<ApiContext> = async (app, ctx) => {
  const pool = ctx.schedulers;

  app.get("/v1/agent/schedulers", async (request) => {
    if (!request.identity.allows("", "agent:read")) throw ApiError.forbidden();
    return {
      server_id: ctx.config.serverName,
      schedulers: pool.workersInfo().map((w) => ({
        id: w.ID,
        enabled_schedulers: w.EnabledSchedulers,
        started: new Date(w.Started).toISOString(),
        status: w.Status,
        workload_status: w.WorkloadStatus,
      })),
    };
  });
  refuseOtherMethods(app, "/v1/agent/schedulers", ["GET"]);

  const url = "/v1/agent/schedulers/config";
  app.get(url, async (request) => {
    if (!request.identity.allows("", "agent:read")) throw ApiError.forbidden();
    return answer(ctx.config.serverName, pool.workerConfig());
  });
  app.route({
    method: ["PUT", "POST"],
    url,
    schema: { body: configBody },
    // Nomad words a malformed body "Invalid request: <decoder error>".
    attachValidation: true,
    handler: async (request) => {
      if (!request.identity.allows("", "agent:write")) throw ApiError.forbidden();
      if (request.validationError)
        throw ApiError.badRequest(`Invalid request: ${request.validationError.message}`);
      const body = request.body as ConfigBody | null | undefined;
      if (body === undefined) throw ApiError.badRequest("Invalid request: EOF");
      const wanted: WorkerPoolConfig = {
        NumSchedulers: body?.num_schedulers ?? 0,
        EnabledSchedulers: body?.enabled_schedulers ?? [],
      };
      if (!isValidWorkerPool(wanted)) throw ApiError.badRequest("Invalid request");
      if (wanted.NumSchedulers > MAX_SCHEDULERS) {
        throw ApiError.badRequest(
          `Invalid request: num_schedulers is ${wanted.NumSchedulers}, more than the ${MAX_SCHEDULERS} a chronomad server runs`,
        );
      }
      return answer(ctx.config.serverName, pool.setWorkerConfig(wanted));
    },
  });
  refuseOtherMethods(app, url, ["GET", "PUT", "POST"]);
};

function answer(serverID: string, config: WorkerPoolConfig) {
  return {
    server_id: serverID,
    num_schedulers: config.NumSchedulers,
    enabled_schedulers: config.EnabledSchedulers,
  };
}
