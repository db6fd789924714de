import type { FastifyPluginAsync } from "fastify";
import { collectGarbage, FORCED_GC } from "../../gc/collect-garbage.ts";
import { ApiError } from "../api-error.ts";
import { commit } from "../commit.ts";
import type { ApiContext } from "../context.ts";

/** `PUT /v1/system/gc`: collect every terminal evaluation and allocation now, as Nomad's force GC. */
export const systemPlugin: FastifyPluginAsync<ApiContext> = async (app, ctx) => {
  app.put("/v1/system/gc", async (request, reply) => {
    if (!request.identity.allows("*", "management")) throw ApiError.forbidden();
    const events = collectGarbage(ctx.tables, ctx.clock.now(), FORCED_GC, "forced");
    if (events.length > 0) {
      const index = await commit(
        ctx,
        request.identity,
        events.map((data) => ({ type: "GarbageCollected", v: 1, data })),
      );
      reply.header("X-Nomad-Index", String(index));
    }
    return reply.send();
  });
};
