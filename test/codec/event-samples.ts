import { newEvaluation } from "../../streams/evals.ts";
import type { Envelope } from "../../streams/event-schema.ts";
import { aclSamples } from "./acl-samples.ts";
import { csiDetachSamples } from "./csi-detach-samples.ts";
import { csiSamples } from "./csi-samples.ts";
import { deploymentSamples } from "./deployment-samples.ts";
import { jobSamples } from "./job-samples.ts";
import { keyringSamples } from "./keyring-samples.ts";
import { nodeAllocSamples } from "./node-alloc-samples.ts";
import { periodicSamples } from "./periodic-samples.ts";
import { serviceRegistrationSamples } from "./service-registration-samples.ts";
import { variableSamples } from "./variable-samples.ts";

const at = 1_763_800_000_000;
const by = { kind: "token", id: "6f1d0c2e-0000-4000-8000-00000000a11c", name: "ops" } as const;

/**
 * One representative envelope per event type at its current version. The
 * golden test pins their bytes under test/fixtures/events/<type>.v<n>.msgpack;
 * a new type or version needs a sample here and a fixture written with
 * UPDATE_GOLDEN=1. Fixtures of earlier versions stay, and must keep decoding.
 */
export const eventSamples: readonly Envelope[] = [
  {
    type: "ClusterBootstrapped",
    v: 1,
    at,
    by: { kind: "server", id: "server-1" },
    data: { ClusterID: "2f9c61a4-6a4e-4b8e-9a55-0d5b1f0f4e21", CreateTime: at, ServerName: "server-1" },
  },
  {
    type: "LeadershipEstablished",
    v: 1,
    at,
    by: { kind: "server", id: "server-2" },
    data: { ServerName: "server-2", Address: "10.0.0.2:4646", Epoch: 7 },
  },
  {
    type: "NamespaceUpserted",
    v: 1,
    at,
    by,
    data: {
      Namespace: {
        Name: "web",
        Description: "front ends",
        Quota: "",
        Meta: { team: "edge" },
        Capabilities: { EnabledTaskDrivers: ["docker"], DisabledTaskDrivers: ["raw_exec"] },
      },
    },
  },
  { type: "NamespaceDeleted", v: 1, at, by, data: { Name: "web" } },
  {
    type: "NodePoolUpserted",
    v: 1,
    at,
    by,
    data: {
      NodePools: [
        {
          Name: "gpu",
          Description: "nodes with accelerators",
          Meta: { team: "ml" },
          SchedulerConfiguration: { SchedulerAlgorithm: "spread", MemoryOversubscriptionEnabled: null },
          NodeIdentityTTL: 86_400_000_000_000,
        },
      ],
    },
  },
  { type: "NodePoolDeleted", v: 1, at, by, data: { Names: ["gpu"] } },
  {
    type: "EvaluationsUpserted",
    v: 1,
    at,
    by: { kind: "server", id: "server-1" },
    data: {
      Evals: [
        newEvaluation({
          ID: "8e9a3c1d-5b7f-4e2a-9c3d-1f2e3d4c5b6a",
          Namespace: "default",
          Type: "service",
          TriggeredBy: "node-update",
          JobID: "web",
          NodeID: "f1e2d3c4-b5a6-4978-8a9b-0c1d2e3f4a5b",
          NodeModifyIndex: 41,
          CreateTime: at * 1e6,
        }),
      ],
    },
  },
  {
    type: "EvaluationsDeleted",
    v: 1,
    at,
    by,
    data: {
      DeleteID: "0c4f2a9e-7d1b-4c3a-9e8f-5a6b7c8d9e0f",
      EvalIDs: ["8e9a3c1d-5b7f-4e2a-9c3d-1f2e3d4c5b6a"],
      UserInitiated: true,
    },
  },
  {
    type: "EvaluationsDeletedByFilter",
    v: 1,
    at,
    by,
    data: {
      DeleteID: "3b2a1c0d-9e8f-4a7b-8c6d-5e4f3a2b1c0d",
      Filter: 'Status == "pending" and JobID == "web"',
      PerPage: 1000,
      NextToken: "42.8e9a3c1d-5b7f-4e2a-9c3d-1f2e3d4c5b6a",
      LastToken: "1041.f1e2d3c4-b5a6-4978-8a9b-0c1d2e3f4a5b",
      Expected: 998,
    },
  },
  {
    type: "SchedulerConfigSet",
    v: 1,
    at,
    by,
    data: {
      Config: {
        SchedulerAlgorithm: "spread",
        PreemptionConfig: {
          SystemSchedulerEnabled: true,
          SysBatchSchedulerEnabled: false,
          BatchSchedulerEnabled: true,
          ServiceSchedulerEnabled: false,
        },
        MemoryOversubscriptionEnabled: true,
        RejectJobRegistration: false,
        PauseEvalBroker: true,
      },
      CAS: true,
      CASIndex: 17,
    },
  },
  ...nodeAllocSamples,
  ...csiDetachSamples,
  ...jobSamples,
  ...periodicSamples,
  ...deploymentSamples,
  ...aclSamples,
  ...keyringSamples,
  ...variableSamples,
  ...serviceRegistrationSamples,
  ...csiSamples,
  {
    type: "GarbageCollected",
    v: 2,
    at,
    by: { kind: "server", id: "server-1" },
    data: {
      Reason: "periodic",
      EvalIDs: ["8e9a3c1d-5b7f-4e2a-9c3d-1f2e3d4c5b6a"],
      AllocIDs: ["0b1c2d3e-4f50-4617-8293-a4b5c6d7e8f9"],
      Jobs: [{ Namespace: "default", ID: "nightly-report" }],
    },
  },
];
