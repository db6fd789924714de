import type { FastifyPluginAsync } from "fastify";
import { volumeClaimGcDrafts } from "../../csi/volume-claim-gc.ts";
import { collectGarbage, gcDrafts } from "../../gc/collect-garbage.ts";
import { collectableRootKeys, rootKeyDeleteDrafts } from "../../gc/collect-root-keys.ts";
import { ApiError } from "../api-error.ts";
import { commit } from "../commit.ts";
import type { ApiContext } from "../context.ts";
import { refuseOtherMethods } from "../refuse-other-methods.ts";

/**
 * `PUT /v1/system/gc`: collect now, whatever their age, every finished job,
 * evaluation and allocation Nomad's force GC would, and every root key that
 * is neither active nor rekeying and that nothing uses; and, as Nomad's
 * force GC runs csi-volume-claim-gc, wake the volume watcher of every
 * volume with claims to free.
 */
export const systemPlugin: FastifyPluginAsync<ApiContext> = async (app, ctx) => {
  app.put("/v1/system/gc", async (request, reply) => {
    if (!request.identity.allows("*", "management")) throw ApiError.forbidden();
    const nowMs = ctx.clock.now();
    const events = await collectGarbage(ctx.tables, { nowMs });
    // Nomad's force-gc runs the root key GC too, without rotating (#15009).
    const keys = collectableRootKeys(ctx.tables, { nowMs });
    const drafts = [...volumeClaimGcDrafts(ctx.tables), ...gcDrafts(events), ...rootKeyDeleteDrafts(keys)];
    if (drafts.length > 0) {
      const index = await commit(ctx, request.identity, drafts);
      reply.header("X-Nomad-Index", String(index));
    }
    return reply.send();
  });

  // Nomad recomputes job summaries from the allocations here, to repair
  // drift between its incrementally kept summaries and the allocations.
  // chronomad's summaries are a projection: the jobs projection folds every
  // allocation change into its job's summary in the same apply, in log
  // order, and replaying the log rebuilds them byte for byte (the replay
  // test hashes the tables). They cannot drift, so there is nothing to
  // reconcile and nothing is written.
  const reconcile = "/v1/system/reconcile/summaries";
  app.put(reconcile, async (request, reply) => {
    if (!request.identity.allows("*", "management")) throw ApiError.forbidden();
    return reply.send();
  });
  refuseOtherMethods(app, reconcile, ["PUT"]);
};
