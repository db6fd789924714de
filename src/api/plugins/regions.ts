import type { FastifyPluginAsync } from "fastify";
import { REGION } from "../../cluster/server-members.ts";
import type { ApiContext } from "../context.ts";
import { refuseOtherMethods } from "../refuse-other-methods.ts";
import { textQuery } from "../request-schemas.ts";

/** `GET /v1/regions`: the regions this server knows of; a chronomad cluster is one region. */
export const regionsPlugin: FastifyPluginAsync<ApiContext> = async (app) => {
  app.get("/v1/regions", { schema: { querystring: textQuery("region", "stale") } }, async () => [REGION]);
  refuseOtherMethods(app, "/v1/regions", ["GET"]);
};
