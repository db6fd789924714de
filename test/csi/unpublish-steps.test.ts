import { describe, expect, it } from "vitest";
import { advance, nextStep, remainingSteps } from "../../src/csi/unpublish-steps.ts";
import {
  CSI_CLAIM_STATE_CONTROLLER_DETACHED,
  CSI_CLAIM_STATE_NODE_DETACHED,
  CSI_CLAIM_STATE_READY_TO_FREE,
  CSI_CLAIM_STATE_TAKEN,
  CSI_CLAIM_STATE_UNPUBLISHING,
} from "../../streams/csi.ts";
import { volumeClaim } from "../projections/csi-fixtures.ts";

const withController = { controllerDetach: true };
const noController = { controllerDetach: false };

describe("the unpublish state machine's steps (Nomad's CSIVolume.Unpublish dispatch)", () => {
  it("walks taken or unpublishing through node and controller detach to release", () => {
    for (const start of [CSI_CLAIM_STATE_TAKEN, CSI_CLAIM_STATE_UNPUBLISHING] as const) {
      expect(remainingSteps(start, withController)).toEqual(["node-detach", "controller-detach", "release"]);
      expect(remainingSteps(start, noController)).toEqual(["node-detach", "release"]);
    }
  });

  it("resumes from a checkpoint: node-detached skips the node, controller-detached and ready-to-free only release", () => {
    expect(nextStep(CSI_CLAIM_STATE_NODE_DETACHED, withController)).toBe("controller-detach");
    expect(nextStep(CSI_CLAIM_STATE_NODE_DETACHED, noController)).toBe("release");
    expect(remainingSteps(CSI_CLAIM_STATE_CONTROLLER_DETACHED, withController)).toEqual(["release"]);
    expect(remainingSteps(CSI_CLAIM_STATE_READY_TO_FREE, withController)).toEqual(["release"]);
  });

  it("checkpoints each step in the state it reached, keeping the claim's mode (the GC sentinel mode included)", () => {
    const c = volumeClaim("a1", "n1", 2, CSI_CLAIM_STATE_UNPUBLISHING);
    expect(advance(c, "node-detach")).toEqual({ ...c, State: CSI_CLAIM_STATE_NODE_DETACHED });
    expect(advance(c, "controller-detach")).toEqual({ ...c, State: CSI_CLAIM_STATE_CONTROLLER_DETACHED });
    expect(advance(c, "release")).toEqual({ ...c, State: CSI_CLAIM_STATE_READY_TO_FREE });
    expect(c.State).toBe(CSI_CLAIM_STATE_UNPUBLISHING);
  });
});
