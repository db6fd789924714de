import type { JobType, TaskGroupSpec, TaskSpec, VolumeRequest } from "../../streams/jobs.ts";
import { formatErrors } from "./multierror.ts";

export { requestedVolumeID } from "../../projections/csi-volume-writers.ts";

const PROPAGATION_MODES: ReadonlySet<string> = new Set(["", "private", "host-to-task", "bidirectional"]);

/**
 * Nomad 1.6's VolumeRequest.Validate for each of a group's volumes, as
 * TaskGroup.Validate reports them. Go walks the map in no order; name order
 * is used here so the message is the same each time.
 */
export function volumeRequestErrors(jobType: JobType, tg: TaskGroupSpec): string[] {
  const volumes = tg.Volumes ?? {};
  const canaries = tg.Update?.Canary ?? 0;
  const errors: string[] = [];
  for (const name of Object.keys(volumes).sort()) {
    const err = volumeRequestError(volumes[name]!, jobType, tg.Count, canaries);
    if (err) errors.push(`Task group volume validation for ${name} failed: ${err}`);
  }
  return errors;
}

/** Nomad's VolumeRequest.Validate: its error text, or undefined for a valid request. */
export function volumeRequestError(
  v: VolumeRequest,
  jobType: string,
  count: number,
  canaries: number,
): string | undefined {
  if (v.Type !== "host" && v.Type !== "csi") return `volume has unrecognized type ${v.Type}`;
  const errors: string[] = [];
  if (v.Source === "") errors.push("volume has an empty source");
  if (v.PerAlloc) {
    if (jobType === "system" || jobType === "sysbatch")
      errors.push("volume cannot be per_alloc for system or sysbatch jobs");
    if (canaries > 0) errors.push("volume cannot be per_alloc when canaries are in use");
  }
  if (v.Type === "host") {
    if (v.AttachmentMode !== "") errors.push("host volumes cannot have an attachment mode");
    if (v.AccessMode !== "") errors.push("host volumes cannot have an access mode");
    if (v.MountOptions !== null) errors.push("host volumes cannot have mount options");
  } else {
    if (v.AttachmentMode === "") errors.push("CSI volumes must have an attachment mode");
    else if (v.AttachmentMode === "block-device" && v.MountOptions !== null)
      errors.push("block devices cannot have mount options");
    const several = count > 1 && !v.PerAlloc;
    switch (v.AccessMode) {
      case "":
        errors.push("CSI volumes must have an access mode");
        break;
      case "single-node-reader-only":
        if (!v.ReadOnly) errors.push(`${v.AccessMode} volumes must be read-only`);
        if (several) errors.push(`volume with ${v.AccessMode} access mode allows only one reader`);
        break;
      case "single-node-writer":
        if (several) errors.push(`volume with ${v.AccessMode} access mode allows only one reader or writer`);
        break;
      case "multi-node-reader-only":
        if (!v.ReadOnly) errors.push(`${v.AccessMode} volumes must be read-only`);
        break;
      case "multi-node-single-writer":
        if (!v.ReadOnly && several)
          errors.push(`volume with ${v.AccessMode} access mode allows only one writer`);
        break;
    }
  }
  return errors.length > 0 ? formatErrors(errors) : undefined;
}

/** Nomad's Task.Validate on volume mounts: a known propagation mode, and a volume its group defines. */
export function volumeMountErrors(t: TaskSpec, tg: TaskGroupSpec): string[] {
  const errors: string[] = [];
  (t.VolumeMounts ?? []).forEach((vm, i) => {
    if (!PROPAGATION_MODES.has(vm.PropagationMode))
      errors.push(`Volume Mount (${i}) has an invalid propagation mode: "${vm.PropagationMode}"`);
    if (vm.Volume === "") errors.push(`Volume Mount (${i}) references an empty volume`);
    else if (!Object.hasOwn(tg.Volumes ?? {}, vm.Volume))
      errors.push(`Volume Mount (${i}) references undefined volume ${vm.Volume}`);
  });
  return errors;
}
