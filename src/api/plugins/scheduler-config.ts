import type { FastifyPluginAsync } from "fastify";
import { currentSchedulerConfig } from "../../../projections/scheduler-config.ts";
import type { SchedulerConfigSet, SchedulerConfigSpec } from "../../../streams/scheduler-config.ts";
import { ApiError } from "../api-error.ts";
import { blockingQuery } from "../blocking-query.ts";
import { commit } from "../commit.ts";
import type { ApiContext } from "../context.ts";

/** api.SchedulerConfiguration as Nomad's clients send it; fields left out take Go's zero values. */
const configBody = {
  type: "object",
  additionalProperties: false,
  properties: {
    SchedulerAlgorithm: { type: "string" },
    PreemptionConfig: {
      type: ["object", "null"],
      additionalProperties: false,
      properties: {
        SystemSchedulerEnabled: { type: "boolean" },
        SysBatchSchedulerEnabled: { type: "boolean" },
        BatchSchedulerEnabled: { type: "boolean" },
        ServiceSchedulerEnabled: { type: "boolean" },
      },
    },
    MemoryOversubscriptionEnabled: { type: "boolean" },
    RejectJobRegistration: { type: "boolean" },
    PauseEvalBroker: { type: "boolean" },
    NodeLimitForFeasibilityChecks: { type: "integer", minimum: 0 },
    CreateIndex: { type: "integer" },
    ModifyIndex: { type: "integer" },
  },
} as const;

const configQuery = {
  type: "object",
  properties: { cas: { type: "string" }, index: { type: "string" }, wait: { type: "string" } },
} as const;

interface ConfigBody {
  SchedulerAlgorithm?: string;
  PreemptionConfig?: {
    SystemSchedulerEnabled?: boolean;
    SysBatchSchedulerEnabled?: boolean;
    BatchSchedulerEnabled?: boolean;
    ServiceSchedulerEnabled?: boolean;
  } | null;
  MemoryOversubscriptionEnabled?: boolean;
  RejectJobRegistration?: boolean;
  PauseEvalBroker?: boolean;
  NodeLimitForFeasibilityChecks?: number;
}

const CAS_REJECTED = 409;

/** `/v1/operator/scheduler/configuration`, as in Nomad. */
export const schedulerConfigPlugin: FastifyPluginAsync<ApiContext> = async (app, ctx) => {
  const table = ctx.tables.schedulerConfig;
  const url = "/v1/operator/scheduler/configuration";

  app.get(url, { schema: { querystring: configQuery } }, async (request, reply) => {
    if (!request.identity.allows("", "operator:read")) throw ApiError.forbidden();
    const { schedulerConfig } = request.view.tables;
    return blockingQuery(ctx, request, reply, [table.name], () => {
      const index = Math.max(1, schedulerConfig.index);
      return {
        index,
        body: {
          SchedulerConfig: currentSchedulerConfig(schedulerConfig),
          Index: index,
          LastContact: Math.round(ctx.leadership.lastContactMs() * 1e6),
          KnownLeader: ctx.leadership.leaderAddress() !== "",
          NextToken: "",
        },
      };
    });
  });

  for (const method of ["PUT", "POST"] as const) {
    app.route({
      method,
      url,
      schema: { body: configBody, querystring: configQuery },
      handler: async (request, reply) => {
        if (!request.identity.allows("", "operator:write")) throw ApiError.forbidden();
        const body = request.body as ConfigBody | undefined;
        if (body === undefined)
          throw ApiError.badRequest("Error parsing scheduler config: Request body is empty");
        const config = toSpec(body);
        const cas = parseCas((request.query as { cas?: string }).cas);
        // A stale CAS is answered without writing anything; a race lost
        // between here and the apply is rejected there and answered alike.
        if (cas !== undefined && cas !== currentSchedulerConfig(table).ModifyIndex) {
          reply.header("X-Nomad-Index", String(Math.max(1, table.index)));
          return { Updated: false, Index: Math.max(1, table.index) };
        }
        const data: SchedulerConfigSet = { Config: config, CAS: cas !== undefined, CASIndex: cas ?? 0 };
        let index: number;
        try {
          index = await commit(ctx, request.identity, [{ type: "SchedulerConfigSet", v: 1, data }]);
        } catch (err) {
          if (!(err instanceof ApiError && err.status === CAS_REJECTED)) throw err;
          reply.header("X-Nomad-Index", String(Math.max(1, table.index)));
          return { Updated: false, Index: Math.max(1, table.index) };
        }
        reply.header("X-Nomad-Index", String(index));
        return { Updated: true, Index: index };
      },
    });
  }
};

function toSpec(body: ConfigBody): SchedulerConfigSpec {
  const algorithm = body.SchedulerAlgorithm ?? "";
  if (algorithm !== "" && algorithm !== "binpack" && algorithm !== "spread") {
    throw ApiError.badRequest(`invalid scheduler algorithm: ${algorithm}`);
  }
  const p = body.PreemptionConfig ?? {};
  return {
    SchedulerAlgorithm: algorithm as SchedulerConfigSpec["SchedulerAlgorithm"],
    PreemptionConfig: {
      SystemSchedulerEnabled: p.SystemSchedulerEnabled ?? false,
      SysBatchSchedulerEnabled: p.SysBatchSchedulerEnabled ?? false,
      BatchSchedulerEnabled: p.BatchSchedulerEnabled ?? false,
      ServiceSchedulerEnabled: p.ServiceSchedulerEnabled ?? false,
    },
    MemoryOversubscriptionEnabled: body.MemoryOversubscriptionEnabled ?? false,
    RejectJobRegistration: body.RejectJobRegistration ?? false,
    PauseEvalBroker: body.PauseEvalBroker ?? false,
    NodeLimitForFeasibilityChecks: body.NodeLimitForFeasibilityChecks ?? 0,
  };
}

/** Nomad parses `?cas=` with strconv.ParseUint and reports its error. */
function parseCas(raw: string | undefined): number | undefined {
  if (raw === undefined) return undefined;
  if (!/^[0-9]+$/.test(raw) || !Number.isSafeInteger(Number(raw))) {
    throw ApiError.badRequest(
      `Error parsing cas value: strconv.ParseUint: parsing ${JSON.stringify(raw)}: invalid syntax`,
    );
  }
  return Number(raw);
}
