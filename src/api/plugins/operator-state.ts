import type { FastifyPluginAsync } from "fastify";
import { firstValueFrom, race, timer } from "rxjs";
import { currentLeadership } from "../../../projections/leadership.ts";
import { parseBlockingParams } from "../blocking-query.ts";
import type { ApiContext } from "../context.ts";
import { COMMON_READ_PARAMS, textQuery } from "../request-schemas.ts";

/**
 * `GET /v1/operator/state-hash[?index=N&wait=D | ?at_index=N]`: a digest of
 * every table at this server's applied index, with that index and the
 * leadership epoch it holds. Servers (or replays) at the same Index must give
 * the same Hash: that is how an operator, or a test, checks that servers
 * agree. With `?index=N` the answer waits (up to `wait`, as a blocking query)
 * until the server has applied record N; with `?at_index=N` it is the digest
 * of the tables as of record N, at once (the past does not change), which a
 * fresh replay of the same log up to N must match. chronomad's own endpoint;
 * Nomad has none.
 */
export const operatorStatePlugin: FastifyPluginAsync<ApiContext> = async (app, ctx) => {
  const query = textQuery(...COMMON_READ_PARAMS);
  app.get("/v1/operator/state-hash", { schema: { querystring: query } }, async (request) => {
    const { minIndex, waitMs } = parseBlockingParams(request.query as Record<string, unknown>);
    const { store, tables, atIndex } = request.view;
    if (atIndex === undefined && minIndex > store.appliedIndex) {
      await firstValueFrom(race(ctx.store.waitFor(minIndex), timer(waitMs), ctx.closing$), {
        defaultValue: undefined,
      });
    }
    // Index and hash are read in one turn of the event loop: no record can
    // be applied between them.
    const leadership = currentLeadership(tables.leadership);
    return {
      Index: store.appliedIndex,
      Hash: store.hash(),
      LeadershipEpoch: leadership?.Epoch ?? 0,
      Leader: leadership?.ServerName ?? "",
    };
  });
};
