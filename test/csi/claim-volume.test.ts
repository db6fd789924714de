import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { CSIVolumeRow } from "../../projections/csi-volumes.ts";
import {
  applyClaims,
  type ClaimAlloc,
  type ClaimLookups,
  claimVolume,
  ERR_CSI_ATTACHMENT_MODE,
  ERR_CSI_VOLUME_MAX_CLAIMS,
  ERR_CSI_VOLUME_UNSCHEDULABLE,
  withPastClaims,
} from "../../src/csi/claim-volume.ts";
import {
  CSI_CLAIM_GC,
  CSI_CLAIM_READ,
  CSI_CLAIM_STATE_NODE_DETACHED,
  CSI_CLAIM_STATE_READY_TO_FREE,
  CSI_CLAIM_STATE_TAKEN,
  CSI_CLAIM_STATE_UNPUBLISHING,
  CSI_CLAIM_WRITE,
  type CSIAccessMode,
  type CSIClaimMode,
  type CSIClaimState,
  type CSIVolumeClaim,
} from "../../streams/csi.ts";

function volume(fields: Partial<CSIVolumeRow> = {}): CSIVolumeRow {
  return {
    ID: "vol",
    Name: "vol",
    ExternalID: "ext-vol",
    Namespace: "default",
    PluginID: "ebs",
    Provider: "ebs.csi",
    ProviderVersion: "1.0",
    RequestedCapabilities: [{ AccessMode: "single-node-writer", AttachmentMode: "file-system" }],
    Topologies: null,
    RequestedTopologies: null,
    MountOptions: null,
    Parameters: null,
    Context: null,
    Capacity: 0,
    RequestedCapacityMin: 0,
    RequestedCapacityMax: 0,
    CloneID: "",
    SnapshotID: "",
    SealedSecrets: null,
    AccessMode: "",
    AttachmentMode: "",
    ReadClaims: {},
    WriteClaims: {},
    PastClaims: {},
    CreateIndex: 1,
    ModifyIndex: 1,
    ...fields,
  };
}

const claim = (
  AllocationID: string,
  Mode: CSIClaimMode,
  State: CSIClaimState = CSI_CLAIM_STATE_TAKEN,
  fields: Partial<CSIVolumeClaim> = {},
): CSIVolumeClaim => ({
  AllocationID,
  NodeID: `node-of-${AllocationID}`,
  ExternalNodeID: "",
  Mode,
  AccessMode: "single-node-writer",
  AttachmentMode: "file-system",
  State,
  ...fields,
});

const alloc = (ID: string, JobID = `job-of-${ID}`, terminal = false): ClaimAlloc => ({
  ID,
  Namespace: "default",
  JobID,
  NodeID: `node-of-${ID}`,
  terminal,
});

function lookups(allocs: ClaimAlloc[], schedulable = true): ClaimLookups {
  const byID = new Map(allocs.map((a) => [a.ID, a]));
  return { schedulable, alloc: (id) => byID.get(id) };
}

const ok = (r: CSIVolumeRow | string): CSIVolumeRow => {
  if (typeof r === "string") throw new Error(r);
  return r;
};

describe("claimVolume (Nomad's CSIVolume.Claim)", () => {
  it("gives the first write claim and sets the volume's modes from it", () => {
    const a = alloc("a1");
    const v = ok(claimVolume(volume(), claim("a1", CSI_CLAIM_WRITE), a, lookups([a])));
    expect(Object.keys(v.WriteClaims)).toEqual(["a1"]);
    expect(v.AccessMode).toBe("single-node-writer");
    expect(v.AttachmentMode).toBe("file-system");
  });

  it("refuses a second writer of another job on a single-node-writer volume", () => {
    const [a, b] = [alloc("a1"), alloc("b1")];
    const v = ok(claimVolume(volume(), claim("a1", CSI_CLAIM_WRITE), a, lookups([a, b])));
    expect(claimVolume(v, claim("b1", CSI_CLAIM_WRITE), b, lookups([a, b]))).toBe(ERR_CSI_VOLUME_MAX_CLAIMS);
    // And a reader: single-node-writer has no free read claim while written.
    expect(claimVolume(v, claim("b1", CSI_CLAIM_READ), b, lookups([a, b]))).toBe(ERR_CSI_VOLUME_MAX_CLAIMS);
  });

  it("lets a new allocation of the writer's own job through (a job's next version)", () => {
    const [a, b] = [alloc("a1", "web"), alloc("a2", "web")];
    const v = ok(claimVolume(volume(), claim("a1", CSI_CLAIM_WRITE), a, lookups([a, b])));
    const w = ok(claimVolume(v, claim("a2", CSI_CLAIM_WRITE), b, lookups([a, b])));
    expect(Object.keys(w.WriteClaims).sort()).toEqual(["a1", "a2"]);
  });

  it("is a no-op for a claim already held, even once the allocation is gone", () => {
    const a = alloc("a1");
    const v = ok(claimVolume(volume(), claim("a1", CSI_CLAIM_WRITE), a, lookups([a])));
    expect(claimVolume(v, claim("a1", CSI_CLAIM_WRITE), undefined, lookups([]))).toBe(v);
  });

  it("needs the allocation, a schedulable volume, and the same attachment mode", () => {
    const a = alloc("a1");
    expect(claimVolume(volume(), claim("a1", CSI_CLAIM_WRITE), undefined, lookups([]))).toBe(
      "allocation missing: a1",
    );
    expect(claimVolume(volume(), claim("a1", CSI_CLAIM_WRITE), a, lookups([a], false))).toBe(
      ERR_CSI_VOLUME_UNSCHEDULABLE,
    );
    const block = volume({ AttachmentMode: "block-device", AccessMode: "multi-node-multi-writer" });
    expect(claimVolume(block, claim("a1", CSI_CLAIM_WRITE), a, lookups([a]))).toBe(ERR_CSI_ATTACHMENT_MODE);
  });

  it("never gives a write claim on a reader-only volume, nor on an unclaimed one that cannot be written", () => {
    const a = alloc("a1");
    const ro = volume({ AccessMode: "multi-node-reader-only", AttachmentMode: "file-system" });
    expect(claimVolume(ro, claim("a1", CSI_CLAIM_WRITE), a, lookups([a]))).toBe(ERR_CSI_VOLUME_UNSCHEDULABLE);
    const roCaps = volume({
      RequestedCapabilities: [{ AccessMode: "single-node-reader-only", AttachmentMode: "file-system" }],
    });
    expect(claimVolume(roCaps, claim("a1", CSI_CLAIM_WRITE), a, lookups([a]))).toBe(
      ERR_CSI_VOLUME_UNSCHEDULABLE,
    );
  });

  it("keeps a release checkpoint in PastClaims, and frees the claim and the modes at ready-to-free", () => {
    const a = alloc("a1");
    const v = ok(claimVolume(volume(), claim("a1", CSI_CLAIM_WRITE), a, lookups([a])));
    const detached = ok(
      claimVolume(v, claim("a1", CSI_CLAIM_WRITE, CSI_CLAIM_STATE_NODE_DETACHED), a, lookups([a])),
    );
    expect(detached.PastClaims.a1?.State).toBe(CSI_CLAIM_STATE_NODE_DETACHED);
    expect(Object.keys(detached.WriteClaims)).toEqual(["a1"]);
    const freed = ok(
      claimVolume(detached, claim("a1", CSI_CLAIM_WRITE, CSI_CLAIM_STATE_READY_TO_FREE), a, lookups([a])),
    );
    expect(freed.WriteClaims).toEqual({});
    expect(freed.PastClaims).toEqual({});
    expect(freed.AccessMode).toBe("");
    expect(freed.AttachmentMode).toBe("");
  });

  it("turns a claim of a collected or terminal allocation into an unpublishing past claim", () => {
    const a = alloc("a1");
    const v = ok(claimVolume(volume(), claim("a1", CSI_CLAIM_WRITE), a, lookups([a])));
    expect(withPastClaims(v, lookups([a]).alloc)).toBe(v);
    for (const gone of [lookups([]), lookups([alloc("a1", "job-of-a1", true)])]) {
      const d = withPastClaims(v, gone.alloc);
      expect(d.PastClaims.a1).toMatchObject({
        AllocationID: "a1",
        NodeID: "node-of-a1",
        Mode: CSI_CLAIM_WRITE,
        State: CSI_CLAIM_STATE_UNPUBLISHING,
      });
    }
  });

  it("applies a batch in order; a GC claim changes nothing; one failure fails the batch", () => {
    const [a, b] = [alloc("a1"), alloc("b1")];
    const l = lookups([a, b]);
    const gc = claim("", CSI_CLAIM_GC, CSI_CLAIM_STATE_UNPUBLISHING);
    const v = ok(applyClaims(volume(), [claim("a1", CSI_CLAIM_WRITE), gc], l));
    expect(Object.keys(v.WriteClaims)).toEqual(["a1"]);
    expect(
      applyClaims(
        v,
        [claim("a1", CSI_CLAIM_WRITE, CSI_CLAIM_STATE_READY_TO_FREE), claim("b1", CSI_CLAIM_WRITE)],
        l,
      ),
    ).toMatchObject({ WriteClaims: { b1: {} } });
    expect(applyClaims(volume(), [claim("a1", CSI_CLAIM_WRITE), claim("b1", CSI_CLAIM_WRITE)], l)).toBe(
      ERR_CSI_VOLUME_MAX_CLAIMS,
    );
  });
});

const ACCESS: CSIAccessMode[] = [
  "single-node-reader-only",
  "single-node-writer",
  "multi-node-reader-only",
  "multi-node-single-writer",
  "multi-node-multi-writer",
];

describe("claimVolume properties", () => {
  // Steps over four live allocations, each of its own job, claiming and releasing in any order.
  const step = fc.record({
    alloc: fc.integer({ min: 0, max: 3 }),
    mode: fc.constantFrom<CSIClaimMode>(CSI_CLAIM_READ, CSI_CLAIM_WRITE),
    state: fc.constantFrom<CSIClaimState>(
      CSI_CLAIM_STATE_TAKEN,
      CSI_CLAIM_STATE_TAKEN,
      CSI_CLAIM_STATE_NODE_DETACHED,
      CSI_CLAIM_STATE_READY_TO_FREE,
    ),
  });
  const allocs = [0, 1, 2, 3].map((i) => alloc(`a${i}`));
  const l = lookups(allocs);

  it("never holds two writers of different live jobs on a single-writer volume, nor adds a reader beside a single-node writer", () => {
    fc.assert(
      fc.property(fc.constantFrom(...ACCESS), fc.array(step, { maxLength: 30 }), (access, steps) => {
        let v = volume({ RequestedCapabilities: [{ AccessMode: access, AttachmentMode: "file-system" }] });
        for (const s of steps) {
          const c = claim(`a${s.alloc}`, s.mode, s.state, { AccessMode: access });
          const next = claimVolume(v, c, allocs[s.alloc], l);
          if (typeof next === "string") continue;
          const before = v;
          v = next;
          const writers = Object.keys(v.WriteClaims).length;
          const readers = Object.keys(v.ReadClaims).length;
          if (access === "single-node-writer" || access === "multi-node-single-writer")
            expect(writers).toBeLessThanOrEqual(1);
          // Nomad's HasFreeReadClaims: no new reader beside a single-node writer (a writer may join readers).
          const newReader =
            s.mode === CSI_CLAIM_READ &&
            s.state === CSI_CLAIM_STATE_TAKEN &&
            !(c.AllocationID in before.ReadClaims);
          if (access === "single-node-writer" && newReader)
            expect(Object.keys(before.WriteClaims).length).toBe(0);
          if (access === "single-node-reader-only") expect(readers).toBeLessThanOrEqual(1);
          if (access.endsWith("reader-only")) expect(writers).toBe(0);
          // An allocation holds at most one current claim.
          for (const id of Object.keys(v.WriteClaims)) expect(Object.hasOwn(v.ReadClaims, id)).toBe(false);
          // Modes are set while anything is claimed, unset once nothing is.
          const none = writers + readers + Object.keys(v.PastClaims).length === 0;
          if (none) expect(v.AccessMode).toBe("");
          else if (writers + readers > 0) expect(v.AccessMode).toBe(access);
        }
      }),
    );
  });

  it("frees every claim of an allocation at ready-to-free, whatever came before", () => {
    fc.assert(
      fc.property(fc.array(step, { maxLength: 20 }), fc.integer({ min: 0, max: 3 }), (steps, which) => {
        let v = volume({
          RequestedCapabilities: [{ AccessMode: "multi-node-multi-writer", AttachmentMode: "file-system" }],
        });
        for (const s of steps) {
          const next = claimVolume(
            v,
            claim(`a${s.alloc}`, s.mode, s.state, { AccessMode: "multi-node-multi-writer" }),
            allocs[s.alloc],
            l,
          );
          if (typeof next !== "string") v = next;
        }
        const id = `a${which}`;
        const freed = ok(
          claimVolume(v, claim(id, CSI_CLAIM_WRITE, CSI_CLAIM_STATE_READY_TO_FREE), undefined, l),
        );
        for (const m of [freed.ReadClaims, freed.WriteClaims, freed.PastClaims])
          expect(Object.hasOwn(m, id)).toBe(false);
      }),
    );
  });
});
