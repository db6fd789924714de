import { allocTaskGroup, isTerminalAlloc } from "../streams/allocs.ts";
import type { VolumeRequest } from "../streams/jobs.ts";
import type { AllocRow } from "./allocs.ts";

/**
 * Who writes a CSI volume, for the scheduler's check and the plan's second
 * check at apply. In Nomad the client claims a volume when its allocation
 * starts, so two plans computed at once may each place a writer of a
 * single-writer volume nobody has claimed yet. Here the live allocations
 * that ask to write a volume are indexed (allocs table, `csi_write`), and a
 * placement is refused while another job's live allocation writes the
 * volume, whether or not its claim has reached the server yet.
 */

/** Nomad's VolumeRequest.VolumeID: the volume an allocation named `allocName` asks for (Source, `[index]` appended with per_alloc). */
export function requestedVolumeID(v: Pick<VolumeRequest, "Source" | "PerAlloc">, allocName: string): string {
  if (!v.PerAlloc) return v.Source;
  const open = allocName.lastIndexOf("[");
  return open >= 0 ? v.Source + allocName.slice(open) : v.Source;
}

/** The key a volume is indexed under (csi_volumes' primary key). */
export const volumeWriterKey = (namespace: string, id: string) => `${namespace}\u0000${id}`;

/** The CSI volumes a live allocation asks to write: the allocs table's `csi_write` index. */
export function writtenVolumeKeys(a: AllocRow): string[] | undefined {
  const volumes = allocTaskGroup(a)?.Volumes as Readonly<Record<string, VolumeRequest | null>> | undefined;
  if (!volumes || isTerminalAlloc(a)) return undefined;
  let keys: string[] | undefined;
  for (const name in volumes) {
    const v = volumes[name];
    if (v?.Type !== "csi" || v.ReadOnly === true) continue;
    keys ??= [];
    keys.push(volumeWriterKey(a.Namespace, requestedVolumeID(v, a.Name)));
  }
  return keys;
}

/** Whether a volume takes one writer only: its claimed mode, or while unclaimed the mode asked for. */
export function singleWriter(volumeMode: string, requestMode: string): boolean {
  const mode = volumeMode === "" ? requestMode : volumeMode;
  return mode === "single-node-writer" || mode === "multi-node-single-writer";
}

/** What the check reads of a volume row. */
export interface WrittenVolume {
  readonly AccessMode: string;
  readonly WriteClaims: Readonly<Record<string, unknown>> | null;
}

/**
 * The allocation (by ID) of another job that holds or will take the write
 * claim of a single-writer volume, or undefined when the job may write it:
 * a write claim held by anything but the job's own allocations, or a live
 * allocation of another job asking to write it. `leaving`: allocations the
 * plan stops.
 */
export function otherWriter(
  volume: WrittenVolume,
  key: string,
  requestMode: string,
  namespace: string,
  jobID: string,
  allocs: { get(id: string): AllocRow | undefined; by(index: string, value: string): readonly AllocRow[] },
  leaving?: ReadonlySet<string>,
): string | undefined {
  if (!singleWriter(volume.AccessMode, requestMode)) return undefined;
  for (const id of Object.keys(volume.WriteClaims ?? {}).sort()) {
    const a = allocs.get(id);
    if (!a || a.Namespace !== namespace || a.JobID !== jobID) return id;
  }
  for (const a of allocs.by("csi_write", key)) {
    if (a.Namespace === namespace && a.JobID === jobID) continue;
    if (!leaving?.has(a.ID)) return a.ID;
  }
  return undefined;
}
