import type { FastifyPluginAsync } from "fastify";
import type { ApiContext } from "../context.ts";

/** `/v1/status/*`: who leads, who serves. */
export const statusPlugin: FastifyPluginAsync<ApiContext> = async (app, ctx) => {
  // A bare JSON string, as Nomad answers; fastify would send a string as text.
  app.get("/v1/status/leader", async (_request, reply) =>
    reply.type("application/json").send(JSON.stringify(ctx.leadership.leaderAddress())),
  );
  app.get("/v1/status/peers", async () => ctx.leadership.peers());
};
