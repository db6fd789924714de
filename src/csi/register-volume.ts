import type { CSIPluginRow } from "../../projections/csi-plugins.ts";
import type { CSIVolumeRow } from "../../projections/csi-volumes.ts";
import {
  CSI_ACCESS_MODES,
  CSI_ATTACHMENT_MODES,
  type CSIAccessMode,
  type CSIAttachmentMode,
  type CSIMountOptions,
  type CSITopology,
  type CSITopologyRequest,
  type CSIVolumeCapability,
  type CSIVolumeSpec,
} from "../../streams/csi.ts";

/**
 * A volume as a register or create request gives it: the user fields, and
 * its Secrets in clear (they are sealed before anything is written; see
 * src/csi/volume-secrets.ts). Provider fields come from the plugin.
 */
export type VolumeInput = Omit<CSIVolumeSpec, "SealedSecrets" | "Provider" | "ProviderVersion"> & {
  readonly Secrets: Readonly<Record<string, string>> | null;
};

type Loose = Readonly<Record<string, unknown>>;

const str = (v: unknown): string => (typeof v === "string" ? v : "");
const num = (v: unknown): number => (typeof v === "number" && Number.isFinite(v) ? v : 0);

function stringMap(v: unknown): Readonly<Record<string, string>> | null {
  if (typeof v !== "object" || v === null || Array.isArray(v)) return null;
  const out: Record<string, string> = {};
  for (const k of Object.keys(v).sort()) {
    const value = (v as Loose)[k];
    if (typeof value === "string") out[k] = value;
  }
  return out;
}

function topologies(v: unknown): CSITopology[] | null {
  if (!Array.isArray(v)) return null;
  return v.map((t) => ({ Segments: stringMap((t as Loose | null)?.Segments) ?? {} }));
}

function topologyRequest(v: unknown): CSITopologyRequest | null {
  if (typeof v !== "object" || v === null) return null;
  return { Required: topologies((v as Loose).Required), Preferred: topologies((v as Loose).Preferred) };
}

function mountOptions(v: unknown): CSIMountOptions | null {
  if (typeof v !== "object" || v === null) return null;
  const flags = (v as Loose).MountFlags;
  return {
    FSType: str((v as Loose).FSType),
    MountFlags: Array.isArray(flags) ? flags.filter((f): f is string => typeof f === "string") : null,
  };
}

/**
 * The volume of a request body (Nomad's api.CSIVolume, as the CLI and
 * Terraform send it), with Nomad's defaults: the namespace of the request
 * when the volume names none. Fields the server owns (claims, modes,
 * indexes, plugin health) are ignored, as Nomad's Merge ignores them.
 */
export function volumeInput(raw: Loose, namespace: string): VolumeInput {
  const caps = Array.isArray(raw.RequestedCapabilities) ? raw.RequestedCapabilities : [];
  return {
    ID: str(raw.ID),
    Name: str(raw.Name),
    ExternalID: str(raw.ExternalID),
    Namespace: str(raw.Namespace) || namespace,
    PluginID: str(raw.PluginID),
    RequestedCapabilities: caps.map((c: Loose | null) => ({
      AccessMode: str(c?.AccessMode) as CSIAccessMode,
      AttachmentMode: str(c?.AttachmentMode) as CSIAttachmentMode,
    })),
    Topologies: topologies(raw.Topologies),
    RequestedTopologies: topologyRequest(raw.RequestedTopologies),
    MountOptions: mountOptions(raw.MountOptions),
    Parameters: stringMap(raw.Parameters),
    Context: stringMap(raw.Context),
    Capacity: num(raw.Capacity),
    RequestedCapacityMin: num(raw.RequestedCapacityMin),
    RequestedCapacityMax: num(raw.RequestedCapacityMax),
    CloneID: str(raw.CloneID),
    SnapshotID: str(raw.SnapshotID),
    Secrets: stringMap(raw.Secrets),
  };
}

/** Nomad's CSIVolume.Validate, with its words, and the capability enums the CLI checks. */
export function volumeInvalid(v: VolumeInput): string | undefined {
  const errs: string[] = [];
  if (v.ID === "") errs.push("missing volume id");
  if (v.PluginID === "") errs.push("missing plugin id");
  if (v.Namespace === "") errs.push("missing namespace");
  if (v.SnapshotID !== "" && v.CloneID !== "") errs.push("only one of snapshot_id and clone_id is allowed");
  if (v.RequestedCapabilities.length === 0) errs.push("must include at least one capability block");
  for (const c of v.RequestedCapabilities) {
    if (!CSI_ACCESS_MODES.includes(c.AccessMode) || c.AccessMode === "")
      errs.push(`invalid access mode ${JSON.stringify(c.AccessMode)}`);
    if (!CSI_ATTACHMENT_MODES.includes(c.AttachmentMode) || c.AttachmentMode === "")
      errs.push(`invalid attachment mode ${JSON.stringify(c.AttachmentMode)}`);
  }
  for (const t of v.RequestedTopologies?.Required ?? []) {
    if (Object.keys(t.Segments).length === 0) errs.push("required topology is missing segments field");
  }
  for (const t of v.RequestedTopologies?.Preferred ?? []) {
    if (Object.keys(t.Segments).length === 0) errs.push("preferred topology is missing segments field");
  }
  return errs.length > 0 ? `validation: ${errs.join(", ")}` : undefined;
}

/** Go's multierror text, which Nomad returns for Merge. */
function multiError(errs: readonly string[]): string {
  const n = errs.length;
  return `${n} error${n === 1 ? "" : "s"} occurred:\n${errs.map((e) => `\t* ${e}`).join("\n")}\n\n`;
}

const sameSegments = (a: CSITopology, b: CSITopology) => {
  const ka = Object.keys(a.Segments);
  return ka.length === Object.keys(b.Segments).length && ka.every((k) => a.Segments[k] === b.Segments[k]);
};

const sameMap = (a: Readonly<Record<string, string>> | null, b: Readonly<Record<string, string>> | null) => {
  const ka = Object.keys(a ?? {});
  return ka.length === Object.keys(b ?? {}).length && ka.every((k) => a?.[k] === b?.[k]);
};

/**
 * Nomad's CSIVolume.Merge (seed 004): `other`, a register or create
 * request, merged onto the stored volume without touching the fields Nomad
 * controls; immutable user fields give errors. Returns the merged input, or
 * Nomad's multierror text.
 */
export function mergeVolume(v: CSIVolumeRow, other: VolumeInput): VolumeInput | string {
  const errs: string[] = [];
  if (v.Name !== other.Name && other.Name !== "") errs.push("volume name cannot be updated");
  if (v.ExternalID !== other.ExternalID && other.ExternalID !== "")
    errs.push("volume external ID cannot be updated");
  if (v.PluginID !== other.PluginID) errs.push("volume plugin ID cannot be updated");
  if (v.CloneID !== other.CloneID && other.CloneID !== "") errs.push("volume clone ID cannot be updated");
  if (v.SnapshotID !== other.SnapshotID && other.SnapshotID !== "")
    errs.push("volume snapshot ID cannot be updated");
  let { RequestedCapacityMin, RequestedCapacityMax } = v;
  if (v.Capacity !== 0) {
    if (other.RequestedCapacityMax < v.Capacity || other.RequestedCapacityMin > v.Capacity) {
      errs.push("volume requested capacity update was not compatible with existing capacity");
    } else {
      RequestedCapacityMin = other.RequestedCapacityMin;
      RequestedCapacityMax = other.RequestedCapacityMax;
    }
  }
  let RequestedCapabilities: readonly CSIVolumeCapability[] = other.RequestedCapabilities;
  if (v.AccessMode !== "" || v.AttachmentMode !== "") {
    const ok = other.RequestedCapabilities.some(
      (c) => c.AccessMode === v.AccessMode && c.AttachmentMode === v.AttachmentMode,
    );
    if (!ok) {
      errs.push("volume requested capabilities update was not compatible with existing capability in use");
      RequestedCapabilities = v.RequestedCapabilities;
    }
  }
  let RequestedTopologies = v.RequestedTopologies;
  if ((v.Topologies?.length ?? 0) > 0) {
    const existing = v.Topologies ?? [];
    if (other.RequestedTopologies === null) {
      if (v.RequestedTopologies !== null)
        errs.push("volume topology request update was not compatible with existing topology");
    } else {
      const fits = (ts: readonly CSITopology[] | null) =>
        (ts ?? []).every((t) => existing.some((e) => sameSegments(t, e)));
      if (!fits(other.RequestedTopologies.Required)) {
        errs.push("volume topology requirement update was not compatible with existing topology");
      } else if (!fits(other.RequestedTopologies.Preferred)) {
        errs.push("volume topology preference update was not compatible with existing topology");
      } else {
        RequestedTopologies = other.RequestedTopologies;
      }
    }
  } else {
    RequestedTopologies = other.RequestedTopologies ?? v.RequestedTopologies;
  }
  if (
    other.Parameters &&
    Object.keys(other.Parameters).length > 0 &&
    !sameMap(v.Parameters, other.Parameters)
  ) {
    errs.push("volume parameters cannot be updated");
  }
  if (errs.length > 0) return multiError(errs);
  return {
    ID: v.ID,
    Name: v.Name,
    ExternalID: v.ExternalID,
    Namespace: v.Namespace,
    PluginID: v.PluginID,
    RequestedCapabilities,
    Topologies: v.Topologies,
    RequestedTopologies,
    // Mount options may change while the volume is unused (an in-use one is refused anyway).
    MountOptions: other.MountOptions,
    Parameters: v.Parameters,
    // Mutable, used by the controller's validation.
    Context: other.Context,
    Capacity: v.Capacity,
    RequestedCapacityMin,
    RequestedCapacityMax,
    CloneID: v.CloneID,
    SnapshotID: v.SnapshotID,
    // Secrets may be replaced freely.
    Secrets: other.Secrets,
  };
}

const READER_ONLY: ReadonlySet<CSIAccessMode> = new Set([
  "single-node-reader-only",
  "multi-node-reader-only",
]);

/** A controller capability flag of a fingerprint (Nomad's CSIControllerInfo). */
const supports = (
  info: { readonly ControllerInfo: Readonly<Record<string, unknown>> | null },
  flag: string,
) => info.ControllerInfo?.[flag] === true;

/**
 * Nomad's pluginValidateVolume, and chronomad's stand-in for the
 * controller's ValidateVolumeCapabilities (Nomad's controllerValidateVolume
 * asks a controller plugin over RPC; chronomad's clients serve no such call,
 * so it checks what the controllers' fingerprints say they can do): a
 * reader-only access mode needs a controller that supports read-only
 * attach (CSI's PUBLISH_READONLY) when the plugin requires a controller.
 */
export function pluginRefusal(v: VolumeInput, plugin: CSIPluginRow | undefined): string | undefined {
  if (!plugin) return `no CSI plugin named: ${v.PluginID} could be found`;
  if (plugin.ControllerRequired && plugin.ControllersHealthy < 1) {
    return `no healthy controllers for CSI plugin: ${v.PluginID}`;
  }
  if (plugin.ControllerRequired) {
    const healthy = Object.values(plugin.Controllers).filter((c) => c.Healthy);
    for (const c of v.RequestedCapabilities) {
      if (READER_ONLY.has(c.AccessMode) && !healthy.some((h) => supports(h, "SupportsReadOnlyAttach"))) {
        return `CSI plugin ${v.PluginID} cannot serve access mode ${c.AccessMode}: no healthy controller supports read-only attach`;
      }
    }
  }
  return undefined;
}

/** Nomad's Create check: a healthy controller with the CREATE_DELETE_VOLUME capability. */
export function createRefusal(v: VolumeInput, plugin: CSIPluginRow | undefined): string | undefined {
  const refusal = pluginRefusal(v, plugin);
  if (refusal || !plugin) return refusal;
  const healthy = Object.values(plugin.Controllers).filter((c) => c.Healthy);
  if (!healthy.some((c) => supports(c, "SupportsCreateDelete"))) {
    return `CSI plugin ${v.PluginID} does not support creating volumes: no healthy controller supports CREATE_DELETE_VOLUME`;
  }
  return undefined;
}

/**
 * What chronomad records for a created volume, in place of the
 * controller's CreateVolume answer (Nomad copies ExternalID, Capacity,
 * Context and Topologies from it): the ExternalID given, else the volume's
 * ID; the requested minimum capacity (else the maximum), which is what a
 * controller honouring the range may provision; the required topologies.
 */
export function asCreated(v: VolumeInput): VolumeInput {
  return {
    ...v,
    ExternalID: v.ExternalID || v.ID,
    Capacity: v.Capacity || v.RequestedCapacityMin || v.RequestedCapacityMax,
    Topologies:
      v.Topologies && v.Topologies.length > 0 ? v.Topologies : (v.RequestedTopologies?.Required ?? null),
  };
}

/** Nomad's Register for a new volume without Topologies: they are the required ones it asked for. */
export function withRequestedTopologies(v: VolumeInput): VolumeInput {
  if (v.Topologies && v.Topologies.length > 0) return v;
  if (!v.RequestedTopologies) return v;
  return { ...v, Topologies: v.RequestedTopologies.Required };
}
