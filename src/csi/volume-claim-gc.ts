import type { AllocRow } from "../../projections/allocs.ts";
import { type CSIVolumeRow, claimAlloc } from "../../projections/csi-volumes.ts";
import { CSI_CLAIM_GC, CSI_CLAIM_STATE_UNPUBLISHING } from "../../streams/csi.ts";
import type { Table } from "../store/table.ts";
import type { Draft } from "../store/writer.ts";
import { withPastClaims } from "./claim-volume.ts";
import { claimsDraft } from "./unpublish.ts";

/**
 * Nomad's csi-volume-claim-gc core job: every volume with claims to free
 * once its claims are resolved (past claims, and claims of allocations that
 * ended or were collected) gets a claim in mode gc without an allocation.
 * It changes nothing but the volume's ModifyIndex (and stores the past
 * claims resolved on read), which wakes the volume watcher: the release
 * itself is the watcher's, never called from the GC.
 */
export function volumeClaimGcDrafts(tables: {
  readonly csiVolumes: Table<CSIVolumeRow>;
  readonly allocs: Table<AllocRow>;
}): Draft[] {
  const drafts: Draft[] = [];
  for (const v of tables.csiVolumes.all()) {
    const resolved = withPastClaims(v, (id) => claimAlloc(tables.allocs.get(id)));
    if (Object.keys(resolved.PastClaims).length === 0) continue;
    drafts.push(
      claimsDraft(v.Namespace, v.ID, [
        {
          AllocationID: "",
          NodeID: "",
          ExternalNodeID: "",
          Mode: CSI_CLAIM_GC,
          AccessMode: "",
          AttachmentMode: "",
          State: CSI_CLAIM_STATE_UNPUBLISHING,
        },
      ]),
    );
  }
  return drafts;
}
