import type { FastifyPluginAsync } from "fastify";
import { firstValueFrom, race, timer } from "rxjs";
import { currentLeadership } from "../../../projections/leadership.ts";
import { parseBlockingParams } from "../blocking-query.ts";
import type { ApiContext } from "../context.ts";
import { textQuery } from "../request-schemas.ts";

/**
 * `GET /v1/operator/state-hash[?index=N&wait=D]`: a digest of every table at
 * this server's applied index, with that index and the leadership epoch it
 * holds. Servers (or replays) at the same Index must give the same Hash:
 * that is how an operator, or a test, checks that servers agree. With
 * `?index=N` the answer waits (up to `wait`, as a blocking query) until the
 * server has applied record N. chronomad's own endpoint; Nomad has none.
 */
export const operatorStatePlugin: FastifyPluginAsync<ApiContext> = async (app, ctx) => {
  const query = textQuery("index", "wait");
  app.get("/v1/operator/state-hash", { schema: { querystring: query } }, async (request) => {
    const { minIndex, waitMs } = parseBlockingParams(request.query as Record<string, unknown>);
    if (minIndex > ctx.store.appliedIndex) {
      await firstValueFrom(race(ctx.store.waitFor(minIndex), timer(waitMs), ctx.closing$), {
        defaultValue: undefined,
      });
    }
    // Index and hash are read in one turn of the event loop: no record can
    // be applied between them.
    const leadership = currentLeadership(ctx.tables.leadership);
    return {
      Index: ctx.store.appliedIndex,
      Hash: ctx.store.hash(),
      LeadershipEpoch: leadership?.Epoch ?? 0,
      Leader: leadership?.ServerName ?? "",
    };
  });
};
