import {
  CSI_CLAIM_STATE_CONTROLLER_DETACHED,
  CSI_CLAIM_STATE_NODE_DETACHED,
  CSI_CLAIM_STATE_READY_TO_FREE,
  type CSIClaimState,
  type CSIVolumeClaim,
} from "../../streams/csi.ts";

/**
 * The steps of Nomad's CSIVolume.Unpublish (nomad/csi_endpoint.go), a
 * checkpointed state machine: each step is done, then the claim is
 * checkpointed (a CSIVolumeClaimsUpdated) in the state it reached, so an
 * unpublish that stops anywhere (a client that never answers, a leader that
 * dies) resumes from its last checkpoint:
 *
 *   taken / unpublishing ──node detach──► node-detached
 *   node-detached ──controller detach──► controller-detached
 *                 (no controller required, or the plugin cannot detach: straight to ready-to-free)
 *   controller-detached ──► ready-to-free: the claim is freed
 */
export type UnpublishStep = "node-detach" | "controller-detach" | "release";

/** What the controller step needs to know of the volume's plugin. */
export interface ControllerNeeds {
  /** The plugin has controllers and they can attach/detach (Nomad: ControllerRequired and SupportsAttachDetach). */
  readonly controllerDetach: boolean;
}

/** The next step for a claim in `state`, as Nomad's switch at the top of Unpublish dispatches it. */
export function nextStep(state: CSIClaimState, needs: ControllerNeeds): UnpublishStep {
  switch (state) {
    case CSI_CLAIM_STATE_NODE_DETACHED:
      return needs.controllerDetach ? "controller-detach" : "release";
    case CSI_CLAIM_STATE_CONTROLLER_DETACHED:
    case CSI_CLAIM_STATE_READY_TO_FREE:
      return "release";
    default:
      // taken, unpublishing: nothing has been detached yet.
      return "node-detach";
  }
}

/** The state a claim is checkpointed in once `step` is done. */
export function stateAfter(step: UnpublishStep): CSIClaimState {
  if (step === "node-detach") return CSI_CLAIM_STATE_NODE_DETACHED;
  if (step === "controller-detach") return CSI_CLAIM_STATE_CONTROLLER_DETACHED;
  return CSI_CLAIM_STATE_READY_TO_FREE;
}

/** The claim checkpointed after `step`. */
export function advance(claim: CSIVolumeClaim, step: UnpublishStep): CSIVolumeClaim {
  return { ...claim, State: stateAfter(step) };
}

/** Every step from `state` to the claim's release, in order: what one Unpublish walks through. */
export function remainingSteps(state: CSIClaimState, needs: ControllerNeeds): UnpublishStep[] {
  const steps: UnpublishStep[] = [];
  let s = state;
  for (;;) {
    const step = nextStep(s, needs);
    steps.push(step);
    if (step === "release") return steps;
    s = stateAfter(step);
  }
}
