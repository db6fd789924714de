import type { CSIVolumeRow } from "../../projections/csi-volumes.ts";
import {
  CSI_CLAIM_READ,
  CSI_CLAIM_STATE_READY_TO_FREE,
  CSI_CLAIM_STATE_TAKEN,
  CSI_CLAIM_STATE_UNPUBLISHING,
  CSI_CLAIM_WRITE,
  type CSIAccessMode,
  type CSIVolumeClaim,
} from "../../streams/csi.ts";

/** Nomad's ErrCSIVolumeMaxClaims. */
export const ERR_CSI_VOLUME_MAX_CLAIMS = "volume max claims reached";
/** Nomad's ErrCSIVolumeUnschedulable. */
export const ERR_CSI_VOLUME_UNSCHEDULABLE = "volume is currently unschedulable";
export const ERR_CSI_ATTACHMENT_MODE = "cannot change attachment mode of claimed volume";

/** What a claim needs to know of an allocation. */
export interface ClaimAlloc {
  readonly ID: string;
  readonly Namespace: string;
  readonly JobID: string;
  readonly NodeID: string;
  /** Nomad's Allocation.TerminalStatus: server or client terminal. */
  readonly terminal: boolean;
}

/**
 * What the claim logic reads beyond the volume: Nomad denormalizes the
 * volume (plugin health, current allocations) before it claims.
 */
export interface ClaimLookups {
  /** Nomad's volume Schedulable, from its plugin (see pluginSchedulable). */
  readonly schedulable: boolean;
  /** The allocation of an ID as the tables stand; undefined once collected. */
  readonly alloc: (id: string) => ClaimAlloc | undefined;
}

type Claims = Readonly<Record<string, CSIVolumeClaim>>;

/**
 * Nomad's CSIVolume.Claim (nomad/structs/csi.go) on a volume already
 * denormalized (see withPastClaims): the volume after `claim`, or Nomad's
 * error text. Pure: the row given is not changed. `alloc` is the claiming
 * allocation (Nomad loads it only for a taken claim); `lookups` gives the
 * plugin health and the allocations of the write claims (a write claim
 * blocked only by allocations of the claimant's own job is let through, as
 * Nomad does for a job's new version).
 */
export function claimVolume(
  volume: CSIVolumeRow,
  claim: CSIVolumeClaim,
  alloc: ClaimAlloc | undefined,
  lookups: ClaimLookups,
): CSIVolumeRow | string {
  if (
    volume.AttachmentMode !== "" &&
    claim.AttachmentMode !== "" &&
    volume.AttachmentMode !== claim.AttachmentMode
  ) {
    return ERR_CSI_ATTACHMENT_MODE;
  }
  if (claim.State === CSI_CLAIM_STATE_TAKEN) {
    if (claim.Mode === CSI_CLAIM_READ) return claimRead(volume, claim, alloc, lookups);
    if (claim.Mode === CSI_CLAIM_WRITE) return claimWrite(volume, claim, alloc, lookups);
  }
  return claimRelease(volume, claim);
}

function claimRead(
  v: CSIVolumeRow,
  claim: CSIVolumeClaim,
  alloc: ClaimAlloc | undefined,
  lookups: ClaimLookups,
): CSIVolumeRow | string {
  if (Object.hasOwn(v.ReadClaims, claim.AllocationID)) return v;
  if (!alloc) return `allocation missing: ${claim.AllocationID}`;
  if (!lookups.schedulable) return ERR_CSI_VOLUME_UNSCHEDULABLE;
  if (!hasFreeReadClaims(v)) return ERR_CSI_VOLUME_MAX_CLAIMS;
  return {
    ...withModes(v, claim),
    ReadClaims: put(v.ReadClaims, claim),
    WriteClaims: without(v.WriteClaims, claim.AllocationID),
    PastClaims: without(v.PastClaims, claim.AllocationID),
  };
}

function claimWrite(
  v: CSIVolumeRow,
  claim: CSIVolumeClaim,
  alloc: ClaimAlloc | undefined,
  lookups: ClaimLookups,
): CSIVolumeRow | string {
  if (Object.hasOwn(v.WriteClaims, claim.AllocationID)) return v;
  if (!alloc) return `allocation missing: ${claim.AllocationID}`;
  if (!writeSchedulable(v, lookups.schedulable)) return ERR_CSI_VOLUME_UNSCHEDULABLE;
  if (!hasFreeWriteClaims(v)) {
    // Nomad lets a job's new allocation through when every live writer is of that same job.
    for (const id of Object.keys(v.WriteClaims)) {
      const a = lookups.alloc(id);
      if (a && (a.Namespace !== alloc.Namespace || a.JobID !== alloc.JobID)) return ERR_CSI_VOLUME_MAX_CLAIMS;
    }
  }
  return {
    ...withModes(v, claim),
    WriteClaims: put(v.WriteClaims, claim),
    ReadClaims: without(v.ReadClaims, claim.AllocationID),
    PastClaims: without(v.PastClaims, claim.AllocationID),
  };
}

/** Nomad's claimRelease: ready-to-free frees the claim, any other state is a checkpoint kept in PastClaims. */
function claimRelease(v: CSIVolumeRow, claim: CSIVolumeClaim): CSIVolumeRow {
  if (claim.State !== CSI_CLAIM_STATE_READY_TO_FREE) {
    return { ...v, PastClaims: put(v.PastClaims, claim) };
  }
  const id = claim.AllocationID;
  const ReadClaims = without(v.ReadClaims, id);
  const WriteClaims = without(v.WriteClaims, id);
  const PastClaims = without(v.PastClaims, id);
  const none = isEmpty(ReadClaims) && isEmpty(WriteClaims) && isEmpty(PastClaims);
  return {
    ...v,
    ReadClaims,
    WriteClaims,
    PastClaims,
    AccessMode: none ? "" : v.AccessMode,
    AttachmentMode: none ? "" : v.AttachmentMode,
  };
}

/** Nomad's HasFreeReadClaims. */
export function hasFreeReadClaims(
  v: Pick<CSIVolumeRow, "AccessMode" | "ReadClaims" | "WriteClaims">,
): boolean {
  switch (v.AccessMode) {
    case "single-node-reader-only":
      return isEmpty(v.ReadClaims);
    case "single-node-writer":
      return isEmpty(v.ReadClaims) && isEmpty(v.WriteClaims);
    default:
      // Unknown: nobody claims it yet. Multi-node modes: CSI sets no maximum of readers.
      return true;
  }
}

/** Nomad's HasFreeWriteClaims. */
export function hasFreeWriteClaims(v: Pick<CSIVolumeRow, "AccessMode" | "WriteClaims">): boolean {
  switch (v.AccessMode) {
    case "single-node-writer":
    case "multi-node-single-writer":
      return isEmpty(v.WriteClaims);
    case "multi-node-multi-writer":
    case "":
      return true;
    default:
      // Reader-only modes never grant a write claim.
      return false;
  }
}

const WRITER_MODES: ReadonlySet<CSIAccessMode> = new Set([
  "single-node-writer",
  "multi-node-single-writer",
  "multi-node-multi-writer",
]);

/**
 * Nomad's WriteSchedulable (chronomad records no ResourceExhausted): the
 * current access mode allows writers, or, unclaimed, one of the requested
 * capabilities does.
 */
export function writeSchedulable(
  v: Pick<CSIVolumeRow, "AccessMode" | "RequestedCapabilities">,
  schedulable: boolean,
): boolean {
  if (!schedulable) return false;
  if (WRITER_MODES.has(v.AccessMode)) return true;
  if (v.AccessMode !== "") return false;
  return v.RequestedCapabilities.some((c) => WRITER_MODES.has(c.AccessMode));
}

/**
 * Nomad's csiVolumeDenormalizeTxn, for the claims: a claim whose allocation
 * is collected or terminal, and that has no past claim yet, gets one in
 * state unpublishing with the claim's node and modes, so the watcher
 * releases it. Returns `v` itself when nothing changes.
 */
export function withPastClaims(v: CSIVolumeRow, alloc: (id: string) => ClaimAlloc | undefined): CSIVolumeRow {
  let past: Record<string, CSIVolumeClaim> | undefined;
  for (const claims of [v.ReadClaims, v.WriteClaims]) {
    for (const [id, current] of Object.entries(claims)) {
      if (Object.hasOwn(v.PastClaims, id) || (past && Object.hasOwn(past, id))) continue;
      const a = alloc(id);
      if (a && !a.terminal) continue;
      past ??= { ...v.PastClaims };
      past[id] = {
        AllocationID: id,
        NodeID: current.NodeID,
        ExternalNodeID: current.ExternalNodeID,
        Mode: current.Mode,
        AccessMode: current.AccessMode,
        AttachmentMode: current.AttachmentMode,
        State: CSI_CLAIM_STATE_UNPUBLISHING,
      };
    }
  }
  return past ? { ...v, PastClaims: past } : v;
}

/**
 * Nomad's state store CSIVolumeClaim for a batch of checkpoints: the volume
 * denormalized, then each claim in order (a claim without an AllocationID,
 * Nomad's GC claim, changes nothing). The caller stamps the ModifyIndex.
 * The first claim that fails fails the batch, with its error.
 */
export function applyClaims(
  volume: CSIVolumeRow,
  claims: readonly CSIVolumeClaim[],
  lookups: ClaimLookups,
): CSIVolumeRow | string {
  let v = withPastClaims(volume, lookups.alloc);
  for (const claim of claims) {
    if (claim.AllocationID === "") continue;
    const alloc = claim.State === CSI_CLAIM_STATE_TAKEN ? lookups.alloc(claim.AllocationID) : undefined;
    const next = claimVolume(v, claim, alloc, lookups);
    if (typeof next === "string") return next;
    v = next;
  }
  return v;
}

/** Nomad's setModesFromClaim: the first claim sets the volume's modes. */
function withModes(v: CSIVolumeRow, claim: CSIVolumeClaim): CSIVolumeRow {
  return {
    ...v,
    AccessMode: v.AccessMode === "" ? claim.AccessMode : v.AccessMode,
    AttachmentMode: v.AttachmentMode === "" ? claim.AttachmentMode : v.AttachmentMode,
  };
}

/** Nomad's InUse: any read or write claim (freed ones are gone from both). */
export function volumeInUse(v: Pick<CSIVolumeRow, "ReadClaims" | "WriteClaims">): boolean {
  return !isEmpty(v.ReadClaims) || !isEmpty(v.WriteClaims);
}

function put(claims: Claims, claim: CSIVolumeClaim): Claims {
  return { ...claims, [claim.AllocationID]: claim };
}

function without(claims: Claims, id: string): Claims {
  if (!Object.hasOwn(claims, id)) return claims;
  const out: Record<string, CSIVolumeClaim> = {};
  for (const [k, c] of Object.entries(claims)) if (k !== id) out[k] = c;
  return out;
}

function isEmpty(claims: Claims): boolean {
  for (const _ in claims) return false;
  return true;
}
