import type { FastifyPluginAsync } from "fastify";
import { claimAlloc, csiVolumeKey } from "../../../projections/csi-volumes.ts";
import { isTerminalAlloc } from "../../../streams/allocs.ts";
import { CSI_CLAIM_GC, CSI_CLAIM_STATE_UNPUBLISHING, type CSIVolumeClaim } from "../../../streams/csi.ts";
import { withPastClaims } from "../../csi/claim-volume.ts";
import { ApiError } from "../api-error.ts";
import { runUnpublish } from "../client-rpc/csi-claims.ts";
import { commit } from "../commit.ts";
import type { ApiContext } from "../context.ts";
import { forwardToLeader } from "../forward-to-leader.ts";
import { refuseOtherMethods } from "../refuse-other-methods.ts";
import { idParam, textQuery } from "../request-schemas.ts";

const detachQuery = textQuery("namespace", "region", "node");

/**
 * `DELETE /v1/volume/csi/:id/detach?node=` (Nomad's csiVolumeDetach,
 * `nomad volume detach <vol> <node>`): CSIVolume.Unpublish with a claim of
 * no allocation in mode gc for the node, which detaches and frees every past
 * claim of the volume on that node (claims of allocations that ended or were
 * collected). Answers once they are freed, or with the step that failed.
 * Runs the leader's unpublish workflow: a follower passes the call on.
 */
export const csiVolumeDetachPlugin: FastifyPluginAsync<ApiContext> = async (app, ctx) => {
  app.delete(
    "/v1/volume/csi/:id/detach",
    { schema: { params: idParam, querystring: detachQuery } },
    async (request, reply) => {
      const { id } = request.params as { id: string };
      const query = request.query as Record<string, string | undefined>;
      const nodeID = query.node ?? "";
      if (nodeID === "") throw ApiError.badRequest("detach requires node ID");
      const namespace = query.namespace || "default";
      const { identity } = request;
      // Nomad's CSIVolume.Unpublish: csi-mount-volume in the namespace, and plugin read.
      if (!identity.allows(namespace, "csi-mount-volume") || !identity.allows("", "plugin:read")) {
        throw ApiError.forbidden();
      }
      if (!ctx.leadership.isLeader()) return forwardToLeader(ctx, request, reply);
      const volume = ctx.tables.csiVolumes.get(csiVolumeKey(namespace, id));
      if (!volume) throw ApiError.notFound(`volume not found: ${id}`);
      const resolved = withPastClaims(volume, (a) => claimAlloc(ctx.tables.allocs.get(a)));
      const past = Object.values(resolved.PastClaims).filter((c) => c.NodeID === nodeID);
      if (past.length === 0) {
        const live = [...Object.values(volume.ReadClaims), ...Object.values(volume.WriteClaims)]
          .filter((c) => c.NodeID === nodeID)
          .filter((c) => {
            const a = ctx.tables.allocs.get(c.AllocationID);
            return a !== undefined && !isTerminalAlloc(a);
          })
          .map((c) => c.AllocationID);
        if (live.length > 0) {
          throw ApiError.conflict(
            `volume ${id} is in use on node ${nodeID} by allocation${live.length > 1 ? "s" : ""} ${live.sort().join(", ")}: stop ${live.length > 1 ? "them" : "it"} first`,
          );
        }
        throw ApiError.badRequest(`node ${nodeID} holds no claim on volume ${id}`);
      }
      const claim: CSIVolumeClaim = {
        AllocationID: "",
        NodeID: nodeID,
        ExternalNodeID: "",
        Mode: CSI_CLAIM_GC,
        AccessMode: "",
        AttachmentMode: "",
        State: CSI_CLAIM_STATE_UNPUBLISHING,
      };
      await runUnpublish(ctx, volume, claim, (drafts) => commit(ctx, identity, drafts));
      reply.header("X-Nomad-Index", String(Math.max(1, ctx.tables.csiVolumes.index)));
      return reply.send();
    },
  );
  refuseOtherMethods(app, "/v1/volume/csi/:id/detach", ["DELETE"]);
};
