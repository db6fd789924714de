/*
 * Nomad's csi_hook for a simulated allocation (client/allocrunner/csi_hook.go):
 * Prerun claims each CSI volume of the group (CSIVolume.Claim, read or write
 * as the volume block asks), Postrun releases them (CSIVolume.Unpublish with
 * the claim in state unpublishing; the server then asks the node plugin, and
 * the controller plugin, to detach, and frees the claim).
 */

/** A group's `volume` block of type csi, as the allocation's job carries it. */
export interface SimCSIVolume {
  /** The volume's ID: its source, with the allocation's index suffix when per_alloc. */
  readonly VolumeID: string;
  readonly ReadOnly: boolean;
  readonly AccessMode: string;
  readonly AttachmentMode: string;
}

/** Nomad's CSIVolumeClaimMode values. */
const CLAIM_READ = 0;
const CLAIM_WRITE = 1;
/** Nomad's CSIVolumeClaimStateUnpublishing: the client has stopped using it. */
const STATE_UNPUBLISHING = 4;

type Json = Record<string, unknown>;

/** The csi volumes of a task group (Nomad's TaskGroup.Volumes), `[index]` appended to per_alloc sources (AllocSuffix). */
export function csiVolumesOf(group: Json | undefined, allocName: string): SimCSIVolume[] {
  const volumes = group?.Volumes;
  if (volumes === null || typeof volumes !== "object") return [];
  const suffix = /\[\d+\]$/.exec(allocName)?.[0] ?? "";
  const out: SimCSIVolume[] = [];
  for (const raw of Object.values(volumes as Json)) {
    const v = raw as Json | null;
    if (v?.Type !== "csi" || typeof v.Source !== "string") continue;
    out.push({
      VolumeID: v.PerAlloc === true ? `${v.Source}${suffix}` : v.Source,
      ReadOnly: v.ReadOnly === true,
      AccessMode: typeof v.AccessMode === "string" ? v.AccessMode : "",
      AttachmentMode: typeof v.AttachmentMode === "string" ? v.AttachmentMode : "",
    });
  }
  return out;
}

/** The node's two volume calls; each resolves with the server's error text, "" on success. */
export interface VolumeCalls {
  claim(namespace: string, body: Json): Promise<string>;
  unpublish(namespace: string, body: Json): Promise<string>;
}

/** What a runner's csi hook needs from its node. */
export interface NodeVolumes {
  readonly nodeID: string;
  readonly calls: VolumeCalls;
}

/** One allocation's csi hook. */
export class AllocVolumes {
  private claimed: SimCSIVolume[] = [];
  private chain: Promise<void> = Promise.resolve();
  /** The last error a call answered, for tests and logs. */
  lastError = "";

  constructor(
    private readonly alloc: {
      readonly ID: string;
      readonly Namespace: string;
      readonly CSIVolumes: readonly SimCSIVolume[];
    },
    private readonly host: NodeVolumes,
  ) {}

  get volumes(): readonly SimCSIVolume[] {
    return this.alloc.CSIVolumes;
  }

  /** Prerun: claims every volume of the group, one after another. */
  claim(): Promise<void> {
    for (const v of this.alloc.CSIVolumes) {
      this.queue(async () => {
        const error = await this.host.calls.claim(this.alloc.Namespace, {
          VolumeID: v.VolumeID,
          AllocationID: this.alloc.ID,
          NodeID: this.host.nodeID,
          Claim: v.ReadOnly ? CLAIM_READ : CLAIM_WRITE,
          AccessMode: v.AccessMode,
          AttachmentMode: v.AttachmentMode,
          State: 0,
          Namespace: this.alloc.Namespace,
        });
        if (error === "") this.claimed.push(v);
        else this.lastError = error;
      });
    }
    return this.chain;
  }

  /** Postrun: unpublishes what Prerun claimed. */
  release(): Promise<void> {
    const claimed = this.claimed;
    this.claimed = [];
    for (const v of claimed) {
      this.queue(async () => {
        const error = await this.host.calls.unpublish(this.alloc.Namespace, {
          VolumeID: v.VolumeID,
          Claim: {
            AllocationID: this.alloc.ID,
            NodeID: this.host.nodeID,
            Mode: v.ReadOnly ? CLAIM_READ : CLAIM_WRITE,
            AccessMode: v.AccessMode,
            AttachmentMode: v.AttachmentMode,
            State: STATE_UNPUBLISHING,
          },
          Namespace: this.alloc.Namespace,
        });
        if (error !== "") this.lastError = error;
      });
    }
    return this.chain;
  }

  /** Resolves once every call queued so far is answered. */
  settled(): Promise<void> {
    return this.chain;
  }

  private queue(call: () => Promise<void>): void {
    this.chain = this.chain.then(call).catch(() => undefined);
  }
}
