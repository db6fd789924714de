import type {
  DeploymentAllocHealthSet,
  DeploymentPromoted,
  DeploymentStatusUpdated,
} from "../../streams/deployments.ts";
import { newEvaluation } from "../../streams/evals.ts";
import type { Envelope } from "../../streams/event-schema.ts";

const at = 1_763_800_000_000;
const by = { kind: "token", id: "6f1d0c2e-0000-4000-8000-00000000a11c", name: "ops" } as const;
const deploymentID = "7d3e2f10-4a5b-4c6d-8e7f-9a0b1c2d3e4f";

const evaluation = (id: string) =>
  newEvaluation({
    ID: id,
    Namespace: "default",
    Type: "service",
    TriggeredBy: "deployment-watcher",
    JobID: "web",
    DeploymentID: deploymentID,
    CreateTime: at * 1e6,
  });

const failed: DeploymentStatusUpdated = {
  DeploymentID: deploymentID,
  Status: "failed",
  StatusDescription: "Failed due to unhealthy allocations - rolling back to job version 0",
  Eval: evaluation("2d3e4f50-6172-4839-8a4b-5c6d7e8f9a01"),
  RevertedJobVersion: 0,
};

const promoted: DeploymentPromoted = {
  DeploymentID: deploymentID,
  All: true,
  Groups: null,
  Eval: evaluation("3e4f5061-7283-494a-9b5c-6d7e8f9a0b12"),
};

const health: DeploymentAllocHealthSet = {
  DeploymentID: deploymentID,
  HealthyAllocationIDs: ["4f506172-8394-4a5b-8c6d-7e8f9a0b1c23"],
  UnhealthyAllocationIDs: [],
  Timestamp: "2025-11-22T08:26:40Z",
  DeploymentUpdate: null,
  Eval: evaluation("50617283-94a5-4b6c-9d7e-8f9a0b1c2d34"),
};

/** Samples of the deployment writes in streams/deployments.ts for the golden codec fixtures. */
export const deploymentSamples: readonly Envelope[] = [
  {
    type: "DeploymentStatusUpdated",
    v: 1,
    at,
    by: { kind: "server", id: "server-1", epoch: 3 },
    data: failed,
  },
  { type: "DeploymentPromoted", v: 1, at, by, data: promoted },
  { type: "DeploymentAllocHealthSet", v: 1, at, by, data: health },
];
