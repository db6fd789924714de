import { describe, expect, it } from "vitest";
import { computeInProcess } from "../../../src/services/scheduler/worker.ts";
import { CSI_CLAIM_WRITE } from "../../../streams/csi.ts";
import {
  claimsUpdated,
  csiInfo,
  volumeClaim,
  volumeSpec,
  volumesRegistered,
} from "../../projections/csi-fixtures.ts";
import { planApplyWorld } from "./plan-apply-world.ts";

const PLUGIN = { CSINodePlugins: { ebs: csiInfo("ebs", "node", { RequiresControllerPlugin: false }) } };

const writes = (source: string, accessMode = "single-node-writer") => ({
  Volumes: {
    data: {
      Name: "data",
      Type: "csi",
      Source: source,
      AccessMode: accessMode,
      AttachmentMode: "file-system",
    },
  },
});

/** Two nodes that run the plugin, a volume, and two jobs that write it, each computed before either applies. */
async function race(accessMode = "single-node-writer") {
  const w = await planApplyWorld(volumesRegistered(volumeSpec("data")));
  await w.addNode("n1", PLUGIN);
  await w.addNode("n2", PLUGIN);
  const a = await w.register("a", undefined, writes("data", accessMode));
  const b = await w.register("b", undefined, writes("data", accessMode));
  const passA = computeInProcess(w.rt, a, 0);
  const passB = computeInProcess(w.rt, b, 0);
  expect(passA.outcome.plan.placements).toHaveLength(1);
  expect(passB.outcome.plan.placements).toHaveLength(1);
  return { w, a, b, passA, passB };
}

describe("CSI volume writers, checked again at apply", () => {
  it("refuses the second of two plans computed at once that place writers of one single-writer volume", async () => {
    const { w, b, passA, passB } = await race();
    expect((await w.submit(passA)).fullCommit).toBe(true);
    const second = await w.submit(passB);
    expect(second).toMatchObject({ fullCommit: false, progress: false });
    const placedA = w.m.tables.allocs.by("job", "default\u0000a")[0]!;
    const refusal = w.m.tables.planRefusals.by("eval", b.ID)[0];
    expect(refusal?.Nodes[0]?.Reason).toBe(
      `CSI volume data has exhausted its available writer claims: allocation ${placedA.ID} writes it`,
    );
    expect(w.m.tables.allocs.by("job", "default\u0000b")).toHaveLength(0);

    // Computed again, the pass sees the writer and places nothing, with Nomad's reason.
    const again = computeInProcess(w.rt, b, 1);
    expect(again.outcome.plan.placements).toEqual([]);
    expect(again.outcome.failedTGAllocs?.g?.ConstraintFiltered).toEqual({
      "CSI volume data has exhausted its available writer claims": 2,
    });
  });

  it("refuses a plan computed before another job's allocation claimed the volume", async () => {
    const { w, passA, passB } = await race();
    expect((await w.submit(passA)).fullCommit).toBe(true);
    const placedA = w.m.tables.allocs.by("job", "default\u0000a")[0]!;
    const [claimed] = await w.m.write(
      claimsUpdated("data", volumeClaim(placedA.ID, placedA.NodeID, CSI_CLAIM_WRITE)),
    );
    expect(claimed?.status).toBe("applied");
    expect((await w.submit(passB)).fullCommit).toBe(false);
  });

  it("lets both through for a multi-node-multi-writer volume", async () => {
    const { w, passA, passB } = await race("multi-node-multi-writer");
    expect((await w.submit(passA)).fullCommit).toBe(true);
    expect((await w.submit(passB)).fullCommit).toBe(true);
  });
});
