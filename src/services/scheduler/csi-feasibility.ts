import type { AllocRow } from "../../../projections/allocs.ts";
import { requestedVolumeID, singleWriter } from "../../../projections/csi-volume-writers.ts";
import type { NodeRow } from "../../../projections/nodes.ts";
import { allocTaskGroup, isTerminalAlloc } from "../../../streams/allocs.ts";
import type { TaskGroupSpec, VolumeRequest } from "../../../streams/jobs.ts";
import type { AllocMetric } from "./metrics.ts";

// Nomad's filter reasons (scheduler/feasible.go, 1.6).
export const CSI_PLUGIN_MISSING = (plugin: string, node: string) =>
  `CSI plugin ${plugin} is missing from client ${node}`;
export const CSI_PLUGIN_UNHEALTHY = (plugin: string, node: string) =>
  `CSI plugin ${plugin} is unhealthy on client ${node}`;
export const CSI_PLUGIN_MAX_VOLUMES = (plugin: string, node: string) =>
  `CSI plugin ${plugin} has the maximum number of volumes on client ${node}`;
export const CSI_VOLUMES_LOOKUP_FAILED = "CSI volume lookup failed";
export const CSI_VOLUME_NOT_FOUND = (id: string) => `missing CSI Volume ${id}`;
export const CSI_VOLUME_NO_READ = (id: string) =>
  `CSI volume ${id} is unschedulable or has exhausted its available reader claims`;
export const CSI_VOLUME_NO_WRITE = (id: string) => `CSI volume ${id} is unschedulable or is read-only`;
export const CSI_VOLUME_IN_USE = (id: string) => `CSI volume ${id} has exhausted its available writer claims`;
export const CSI_VOLUME_GCD_ALLOCATION = (id: string, alloc: string) =>
  `CSI volume ${id} has exhausted its available writer claims and is claimed by a garbage collected allocation ${alloc}; waiting for claim to be released`;
export const CSI_TOPOLOGY = "did not meet topology requirement";

/** Nomad's CSITopology. */
export interface CsiTopology {
  readonly Segments: Readonly<Record<string, string>> | null;
}

/** What the check reads of a volume row (csi_volumes). */
export interface CsiVolumeView {
  readonly ID: string;
  readonly Namespace: string;
  readonly PluginID: string;
  /** The mode its claims set; "" while nothing claims it. */
  readonly AccessMode: string;
  readonly RequestedCapabilities: readonly { readonly AccessMode: string }[] | null;
  readonly Topologies: readonly CsiTopology[] | null;
  /** By allocation ID. */
  readonly WriteClaims: Readonly<Record<string, unknown>> | null;
}

/** What the check reads of a plugin row (csi_plugins): its health, for the volume's Schedulable. */
export interface CsiPluginView {
  readonly ControllerRequired: boolean;
  readonly ControllersHealthy: number;
  readonly NodesHealthy: number;
}

/** The tables the check reads, narrowed to what it needs. */
export interface CsiView {
  volume(namespace: string, id: string): CsiVolumeView | undefined;
  plugin(id: string): CsiPluginView | undefined;
  alloc(id: string): AllocRow | undefined;
  allocsOnNode(nodeID: string): Iterable<AllocRow>;
  /** The live allocations that ask to write the volume (claimed or not yet). */
  writers(namespace: string, id: string): readonly AllocRow[];
}

/** A node's fingerprint of one CSI plugin (Nomad's CSIInfo, the fields read here). */
interface NodePluginInfo {
  readonly Healthy?: boolean;
  readonly NodeInfo?: {
    readonly MaxVolumes?: number;
    readonly AccessibleTopology?: CsiTopology | null;
  } | null;
}

/** One request of the group, resolved for the allocation being placed. */
interface Wanted {
  readonly id: string;
  readonly readOnly: boolean;
  readonly accessMode: string;
  /** What the volume's verdict is cached under. */
  readonly key: string;
}

/** What a volume says whatever the node: undefined when it is fine, else Nomad's reason. */
interface VolumeVerdict {
  readonly volume: CsiVolumeView | undefined;
  readonly refusal: string | undefined;
}

/**
 * Nomad's CSIVolumeChecker for one evaluation. For each `csi` volume the
 * group asks for (with per_alloc, `source[index]`): the volume exists in the
 * job's namespace, the node runs its node plugin healthy and below the
 * plugin's MaxVolumes, the node sees the volume's topology, and the volume
 * has the claim the request needs. As in Nomad a write claim held by an
 * allocation of the same job does not block (a replacement takes over its
 * predecessor's volume); one held by a live allocation of another job does;
 * one held by an allocation that is gone or terminal gives a reason of its
 * own, since the volume watcher will free it.
 *
 * The verdict depends on the node, so it is never cached by computed class
 * (Nomad runs it among the "available" checks, outside the class cache).
 * What does not depend on the node — the volume, its plugin's health, its
 * claims — is worked out once per volume for the evaluation, and the
 * volumes a node already mounts once per node, so a check per node costs a
 * few map lookups.
 */
export class CsiFeasibility {
  private readonly verdicts = new Map<string, VolumeVerdict>();
  private readonly mounted = new Map<string, ReadonlyMap<string, number>>();
  /** The requests of the last group and allocation checked: a placement checks many nodes for one. */
  private last: { tg: TaskGroupSpec; allocName: string; wanted: readonly Wanted[] } | undefined;

  constructor(
    private readonly view: CsiView,
    private readonly namespace: string,
    private readonly jobID: string,
  ) {}

  /** Whether the group asks for any CSI volume (the fast path: nothing to check). */
  static asksFor(tg: TaskGroupSpec): boolean {
    const volumes = tg.Volumes;
    if (!volumes) return false;
    for (const name in volumes) if (volumes[name]?.Type === "csi") return true;
    return false;
  }

  /** Checks `node` for an allocation of `tg` named `allocName`, counting a refusal in `metric`. */
  feasible(node: NodeRow, tg: TaskGroupSpec, allocName: string, metric: AllocMetric): boolean {
    let last = this.last;
    if (last?.tg !== tg || last.allocName !== allocName) {
      last = { tg, allocName, wanted: wantedOf(tg, allocName) };
      this.last = last;
    }
    const refusal = this.refusal(node, last.wanted);
    if (refusal === undefined) return true;
    metric.filterNode(node.NodeClass, refusal);
    return false;
  }

  /** Nomad's isFeasible: the reason the node cannot take the volumes, or undefined. */
  refusal(node: NodeRow, wanted: readonly Wanted[]): string | undefined {
    if (wanted.length === 0) return undefined;
    const plugins = (node.CSINodePlugins ?? {}) as Readonly<Record<string, NodePluginInfo | undefined>>;
    for (const w of wanted) {
      const verdict = this.volumeVerdict(w);
      const vol = verdict.volume;
      if (!vol) return verdict.refusal;
      const plugin = plugins[vol.PluginID];
      if (!plugin) return CSI_PLUGIN_MISSING(vol.PluginID, node.ID);
      if (plugin.Healthy !== true) return CSI_PLUGIN_UNHEALTHY(vol.PluginID, node.ID);
      // A plugin that gives no limit has none (Nomad's client turns 0 into MaxInt64).
      const max = plugin.NodeInfo?.MaxVolumes ?? Number.POSITIVE_INFINITY;
      if (max !== Number.POSITIVE_INFINITY && (this.mountedOn(node.ID).get(vol.PluginID) ?? 0) >= max)
        return CSI_PLUGIN_MAX_VOLUMES(vol.PluginID, node.ID);
      if (vol.Topologies && vol.Topologies.length > 0) {
        if (!matchFound(plugin.NodeInfo?.AccessibleTopology ?? null, vol.Topologies)) return CSI_TOPOLOGY;
      }
      if (verdict.refusal !== undefined) return verdict.refusal;
    }
    return undefined;
  }

  private volumeVerdict(w: Wanted): VolumeVerdict {
    let verdict = this.verdicts.get(w.key);
    if (!verdict) {
      verdict = this.judge(w);
      this.verdicts.set(w.key, verdict);
    }
    return verdict;
  }

  private judge(w: Wanted): VolumeVerdict {
    const volume = this.view.volume(this.namespace, w.id);
    if (!volume) return { volume, refusal: CSI_VOLUME_NOT_FOUND(w.id) };
    const plugin = this.view.plugin(volume.PluginID);
    const schedulable =
      plugin !== undefined &&
      plugin.NodesHealthy > 0 &&
      (!plugin.ControllerRequired || plugin.ControllersHealthy > 0);
    if (w.readOnly) {
      // Nomad 1.6 checks only that the volume can be read: reader claims are the client's to take.
      return { volume, refusal: schedulable ? undefined : CSI_VOLUME_NO_READ(volume.ID) };
    }
    if (!schedulable || !writeSchedulable(volume)) return { volume, refusal: CSI_VOLUME_NO_WRITE(volume.ID) };
    if (!hasFreeWriteClaims(volume)) {
      for (const allocID of Object.keys(volume.WriteClaims ?? {}).sort()) {
        const a = this.view.alloc(allocID);
        if (!a) return { volume, refusal: CSI_VOLUME_GCD_ALLOCATION(volume.ID, allocID) };
        if (a.Namespace === this.namespace && a.JobID === this.jobID) continue;
        // Terminal: the watcher releases the claim (it is a past claim on read), as for a collected allocation.
        if (isTerminalAlloc(a)) return { volume, refusal: CSI_VOLUME_GCD_ALLOCATION(volume.ID, allocID) };
        return { volume, refusal: CSI_VOLUME_IN_USE(volume.ID) };
      }
    }
    // Beyond Nomad: a live writer of another job whose claim the client has not taken yet.
    if (singleWriter(volume.AccessMode, w.accessMode)) {
      for (const a of this.view.writers(this.namespace, w.id)) {
        if (a.Namespace !== this.namespace || a.JobID !== this.jobID)
          return { volume, refusal: CSI_VOLUME_IN_USE(volume.ID) };
      }
    }
    return { volume, refusal: undefined };
  }

  /**
   * Nomad's CSIVolumesByNodeID counted by plugin: the volumes of the
   * allocations on the node that are to run or running.
   */
  private mountedOn(nodeID: string): ReadonlyMap<string, number> {
    const known = this.mounted.get(nodeID);
    if (known) return known;
    let counts: Map<string, number> | undefined;
    let seen: Set<string> | undefined;
    for (const a of this.view.allocsOnNode(nodeID)) {
      if (a.DesiredStatus !== "run" && a.ClientStatus !== "running") continue;
      const volumes = allocTaskGroup(a)?.Volumes as
        | Readonly<Record<string, VolumeRequest>>
        | null
        | undefined;
      if (!volumes) continue;
      for (const name in volumes) {
        const v = volumes[name];
        if (v?.Type !== "csi") continue;
        const id = requestedVolumeID(v, a.Name);
        const key = `${a.Namespace}\u0000${id}`;
        seen ??= new Set();
        if (seen.has(key)) continue;
        seen.add(key);
        const vol = this.view.volume(a.Namespace, id);
        if (!vol) continue;
        counts ??= new Map();
        counts.set(vol.PluginID, (counts.get(vol.PluginID) ?? 0) + 1);
      }
    }
    this.mounted.set(nodeID, counts ?? NONE_MOUNTED);
    return counts ?? NONE_MOUNTED;
  }
}

/** The group's CSI requests for the allocation named `allocName`, in name order. */
export function wantedOf(tg: TaskGroupSpec, allocName: string): Wanted[] {
  const volumes = tg.Volumes;
  if (!volumes) return [];
  const out: Wanted[] = [];
  for (const name of Object.keys(volumes).sort()) {
    const v = volumes[name]!;
    if (v.Type !== "csi") continue;
    const id = requestedVolumeID(v, allocName);
    const readOnly = v.ReadOnly === true;
    const accessMode = v.AccessMode ?? "";
    out.push({ id, readOnly, accessMode, key: `${readOnly ? "r" : "w"}\u0000${accessMode}\u0000${id}` });
  }
  return out;
}

const NONE_MOUNTED: ReadonlyMap<string, number> = new Map();

const WRITER_MODES: ReadonlySet<string> = new Set([
  "single-node-writer",
  "multi-node-single-writer",
  "multi-node-multi-writer",
]);

/** Nomad's WriteSchedulable, less plugin health: the mode allows writers (an unclaimed volume: one of its capabilities does). */
export function writeSchedulable(v: CsiVolumeView): boolean {
  if (WRITER_MODES.has(v.AccessMode)) return true;
  if (v.AccessMode === "") return (v.RequestedCapabilities ?? []).some((c) => WRITER_MODES.has(c.AccessMode));
  return false;
}

/** Nomad's HasFreeWriteClaims. */
export function hasFreeWriteClaims(v: CsiVolumeView): boolean {
  switch (v.AccessMode) {
    case "single-node-writer":
    case "multi-node-single-writer":
      return Object.keys(v.WriteClaims ?? {}).length === 0;
    case "multi-node-multi-writer":
    case "":
      return true;
    default:
      return false;
  }
}

/** Nomad's CSITopology.MatchFound: the node's topology equals one of the volume's. */
export function matchFound(t: CsiTopology | null, of: readonly CsiTopology[]): boolean {
  if (!t || of.length === 0) return false;
  const mine = t.Segments ?? {};
  const keys = Object.keys(mine);
  return of.some((o) => {
    const other = o?.Segments ?? {};
    return Object.keys(other).length === keys.length && keys.every((k) => other[k] === mine[k]);
  });
}
