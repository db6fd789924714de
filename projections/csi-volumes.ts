import { applyClaims, type ClaimAlloc, type ClaimLookups, volumeInUse } from "../src/csi/claim-volume.ts";
import type { ApplyContext, Projection, Refusal } from "../src/store/projection.ts";
import { Table } from "../src/store/table.ts";
import { isTerminalAlloc } from "../streams/allocs.ts";
import {
  type CSIAccessMode,
  type CSIAttachmentMode,
  type CSIEvent,
  type CSIVolumeClaim,
  type CSIVolumeClaimsUpdated,
  type CSIVolumeSpec,
  type CSIVolumesDeregistered,
  type CSIVolumesRegistered,
  MAX_CLAIMS_PER_EVENT,
} from "../streams/csi.ts";
import type { AllocRow } from "./allocs.ts";
import { type CSIPluginRow, pluginSchedulable } from "./csi-plugins.ts";
import type { NamespaceRow } from "./namespaces.ts";

/**
 * Nomad's CSIVolume as stored: the registered spec, the server-owned claim
 * state, and the indexes. ReadAllocs / WriteAllocs are the keys of
 * ReadClaims / WriteClaims (Nomad keeps both in step); plugin health is
 * resolved on read (src/csi/denormalize.ts). Secrets are only ever sealed.
 */
export interface CSIVolumeRow extends CSIVolumeSpec {
  /** Set by the first claim, reset when the last claim is freed. */
  readonly AccessMode: CSIAccessMode;
  readonly AttachmentMode: CSIAttachmentMode;
  readonly ReadClaims: Readonly<Record<string, CSIVolumeClaim>>;
  readonly WriteClaims: Readonly<Record<string, CSIVolumeClaim>>;
  /** Claims being released, by allocation ID, at their last checkpoint. */
  readonly PastClaims: Readonly<Record<string, CSIVolumeClaim>>;
  readonly CreateIndex: number;
  readonly ModifyIndex: number;
}

export type CSIVolumeTable = Table<CSIVolumeRow>;

/** The primary key: Nomad's unique (Namespace, ID) index. */
export const csiVolumeKey = (namespace: string, id: string) => `${namespace}\u0000${id}`;

/**
 * Nomad's namespace delete refusal while the namespace holds a CSI volume
 * (state store DeleteNamespaces names the first one), or undefined.
 */
export function namespaceVolumesRefusal(volumes: CSIVolumeTable, namespace: string): string | undefined {
  for (const v of volumes.withPrefix(csiVolumeKey(namespace, ""))) {
    return (
      `namespace ${JSON.stringify(namespace)} contains at least one CSI volume ${JSON.stringify(v.ID)}. ` +
      "All CSI volumes in namespace must be deleted before it can be deleted"
    );
  }
  return undefined;
}

/** Nomad's words, which clients match. */
export const VOLUME_NOT_FOUND = "volume not found";
export const VOLUME_IN_USE = "volume in use";
export const VOLUME_IDENTITY = "volume identity cannot be updated";
export const VOLUME_UPDATE_IN_USE = "volume cannot be updated while in use";

export interface CSIVolumeDeps {
  readonly namespaces: Table<NamespaceRow>;
  readonly plugins: Table<CSIPluginRow>;
  readonly allocs: Table<AllocRow>;
}

/** What the claim logic reads of the tables, for a volume of plugin `pluginID`. */
export function claimLookups(
  deps: Pick<CSIVolumeDeps, "plugins" | "allocs">,
  pluginID: string,
): ClaimLookups {
  return {
    schedulable: pluginSchedulable(deps.plugins.get(pluginID)),
    alloc: (id) => claimAlloc(deps.allocs.get(id)),
  };
}

export function claimAlloc(a: AllocRow | undefined): ClaimAlloc | undefined {
  if (!a) return undefined;
  return { ID: a.ID, Namespace: a.Namespace, JobID: a.JobID, NodeID: a.NodeID, terminal: isTerminalAlloc(a) };
}

/**
 * Nomad's UpsertCSIVolume checks for one volume as the writer merged it
 * (src/csi/register-volume.ts): the namespace exists; a stored volume keeps
 * its identity (ExternalID, PluginID, Provider) and is not in use. The
 * handler asks first; apply asks again, since a claim may have come between.
 */
export function registerRefusal(
  spec: CSIVolumeSpec,
  existing: CSIVolumeRow | undefined,
  deps: Pick<CSIVolumeDeps, "namespaces" | "allocs">,
): Refusal | undefined {
  if (!deps.namespaces.has(spec.Namespace)) {
    return { code: 400, reason: `volume ${spec.ID} is in nonexistent namespace ${spec.Namespace}` };
  }
  if (!existing) return undefined;
  if (
    existing.ExternalID !== spec.ExternalID ||
    existing.PluginID !== spec.PluginID ||
    existing.Provider !== spec.Provider
  ) {
    return { code: 400, reason: `${VOLUME_IDENTITY}: ${spec.ID}` };
  }
  if (volumeInUse(existing)) return { code: 409, reason: VOLUME_UPDATE_IN_USE };
  return undefined;
}

/**
 * Nomad's CSIVolumeDeregister checks for one volume: it exists; in use, it
 * goes only with force and when every claiming allocation is collected or
 * terminal (volSafeToForce).
 */
export function deregisterRefusal(
  existing: CSIVolumeRow | undefined,
  id: string,
  force: boolean,
  allocs: Table<AllocRow>,
): Refusal | undefined {
  if (!existing) return { code: 404, reason: `${VOLUME_NOT_FOUND}: ${id}` };
  if (!volumeInUse(existing)) return undefined;
  if (force && safeToForce(existing, allocs)) return undefined;
  return { code: 409, reason: `${VOLUME_IN_USE}: ${id}` };
}

function safeToForce(v: CSIVolumeRow, allocs: Table<AllocRow>): boolean {
  for (const claims of [v.ReadClaims, v.WriteClaims]) {
    for (const id of Object.keys(claims)) {
      const a = allocs.get(id);
      if (a && !isTerminalAlloc(a)) return false;
    }
  }
  return true;
}

/** Why a claim record cannot apply as the tables stand, or undefined. */
export function claimsRefusal(
  data: CSIVolumeClaimsUpdated,
  existing: CSIVolumeRow | undefined,
): Refusal | undefined {
  if (!Array.isArray(data.Claims) || data.Claims.length === 0 || data.Claims.length > MAX_CLAIMS_PER_EVENT) {
    return { code: 400, reason: `a claim record holds 1 to ${MAX_CLAIMS_PER_EVENT} claims` };
  }
  if (!existing) return { code: 404, reason: `${VOLUME_NOT_FOUND}: ${data.VolumeID}` };
  return undefined;
}

/**
 * Nomad's csi_volumes table (nomad/state/state_store.go UpsertCSIVolume,
 * CSIVolumeDeregister, CSIVolumeClaim).
 *
 * A register keeps the stored volume's claims, modes and CreateIndex (the
 * record carries only user fields). A claim record applies its claims in
 * order to the denormalized volume (src/csi/claim-volume.ts) and always
 * bumps the ModifyIndex, as Nomad's: an empty GC claim is how the volume
 * watcher is woken. Nothing here follows allocations: a claim whose
 * allocation is gone is resolved on read, and freed by the watcher.
 */
export function csiVolumesProjection(deps: CSIVolumeDeps) {
  const volumes = new Table<CSIVolumeRow>({
    name: "csi_volumes",
    key: (v) => csiVolumeKey(v.Namespace, v.ID),
    indexes: {
      plugin: (v) => v.PluginID,
      // The nodes holding a claim: `GET /v1/volumes?node_id=`.
      node: (v) => claimNodes(v),
    },
  });

  const register = (ctx: ApplyContext, data: CSIVolumesRegistered) => {
    if (!Array.isArray(data.Volumes) || data.Volumes.length === 0)
      return ctx.reject(400, "Volumes must be a list");
    const seen = new Set<string>();
    for (const spec of data.Volumes) {
      const key = csiVolumeKey(spec.Namespace, spec.ID);
      if (seen.has(key)) return ctx.reject(400, `volume ${spec.ID} is listed twice`);
      seen.add(key);
      const refusal = registerRefusal(spec, volumes.get(key), deps);
      if (refusal) return ctx.reject(refusal.code, refusal.reason);
    }
    for (const spec of data.Volumes) {
      const existing = volumes.get(csiVolumeKey(spec.Namespace, spec.ID));
      ctx.put(volumes, {
        ...specFields(spec),
        AccessMode: existing?.AccessMode ?? "",
        AttachmentMode: existing?.AttachmentMode ?? "",
        ReadClaims: existing?.ReadClaims ?? {},
        WriteClaims: existing?.WriteClaims ?? {},
        PastClaims: existing?.PastClaims ?? {},
        CreateIndex: existing?.CreateIndex ?? ctx.index,
        ModifyIndex: ctx.index,
      });
    }
  };

  const deregister = (ctx: ApplyContext, data: CSIVolumesDeregistered) => {
    if (!Array.isArray(data.VolumeIDs)) return ctx.reject(400, "VolumeIDs must be a list");
    for (const id of data.VolumeIDs) {
      const refusal = deregisterRefusal(
        volumes.get(csiVolumeKey(data.Namespace, id)),
        id,
        data.Force === true,
        deps.allocs,
      );
      if (refusal) return ctx.reject(refusal.code, refusal.reason);
    }
    for (const id of data.VolumeIDs) ctx.delete(volumes, csiVolumeKey(data.Namespace, id));
  };

  const claim = (ctx: ApplyContext, data: CSIVolumeClaimsUpdated) => {
    const existing = volumes.get(csiVolumeKey(data.Namespace, data.VolumeID));
    const refusal = claimsRefusal(data, existing);
    if (refusal || !existing) return ctx.reject(refusal?.code ?? 404, refusal?.reason ?? VOLUME_NOT_FOUND);
    const next = applyClaims(existing, data.Claims, claimLookups(deps, existing.PluginID));
    if (typeof next === "string") return ctx.reject(claimErrorCode(next), next);
    ctx.put(volumes, { ...next, ModifyIndex: ctx.index });
  };

  const projection: Projection = {
    name: "csi_volumes",
    version: 1,
    tables: [volumes],
    reads: ["namespaces", "csi_plugins", "allocs"],
    handles: new Set(["CSIVolumesRegistered", "CSIVolumesDeregistered", "CSIVolumeClaimsUpdated"]),
    evolve(ctx, event) {
      const e = event as CSIEvent;
      if (e.type === "CSIVolumesRegistered") return register(ctx, e.data);
      if (e.type === "CSIVolumesDeregistered") return deregister(ctx, e.data);
      return claim(ctx, e.data);
    },
  };
  return { projection, volumes };
}

/** The HTTP-like code of a claim error: a missing allocation is the caller's; a conflict is the volume's. */
export function claimErrorCode(reason: string): number {
  return reason.startsWith("allocation missing") ? 404 : 409;
}

/** The stored user fields of `spec`: its fields only, whatever else a record carries. */
function specFields(s: CSIVolumeSpec): CSIVolumeSpec {
  return {
    ID: s.ID,
    Name: s.Name,
    ExternalID: s.ExternalID,
    Namespace: s.Namespace,
    PluginID: s.PluginID,
    Provider: s.Provider,
    ProviderVersion: s.ProviderVersion,
    RequestedCapabilities: s.RequestedCapabilities,
    Topologies: s.Topologies,
    RequestedTopologies: s.RequestedTopologies,
    MountOptions: s.MountOptions,
    Parameters: s.Parameters,
    Context: s.Context,
    Capacity: s.Capacity,
    RequestedCapacityMin: s.RequestedCapacityMin,
    RequestedCapacityMax: s.RequestedCapacityMax,
    CloneID: s.CloneID,
    SnapshotID: s.SnapshotID,
    SealedSecrets: s.SealedSecrets,
  };
}

/** The nodes of a volume's claims, current and past. */
export function claimNodes(v: Pick<CSIVolumeRow, "ReadClaims" | "WriteClaims" | "PastClaims">): string[] {
  const nodes = new Set<string>();
  for (const claims of [v.ReadClaims, v.WriteClaims, v.PastClaims]) {
    for (const c of Object.values(claims)) if (c.NodeID) nodes.add(c.NodeID);
  }
  return [...nodes].sort();
}
