import { newAllocation } from "../../streams/allocs.ts";
import type { Envelope } from "../../streams/event-schema.ts";

const at = 1_763_800_000_000;
const server = { kind: "server", id: "server-1" } as const;
const node = "f1e2d3c4-b5a6-4978-8a9b-0c1d2e3f4a5b";
const nodeActor = { kind: "node", id: node, name: "client-1" } as const;
const alloc = "3c9d2e1f-7a6b-4c5d-8e9f-0a1b2c3d4e5f";
const ts = "2025-11-22T08:26:40.5Z";

const job = {
  ID: "web",
  Namespace: "default",
  Type: "service",
  Priority: 50,
  Version: 2,
  CreateIndex: 30,
  ModifyIndex: 40,
  JobModifyIndex: 40,
  TaskGroups: [
    { Name: "frontend", Count: 1, MaxClientDisconnect: 3_600_000_000_000, ReschedulePolicy: null },
  ],
};

/** One sample per node and allocation event type; see event-samples.ts. */
export const nodeAllocSamples: readonly Envelope[] = [
  {
    type: "NodeRegistered",
    v: 2,
    at,
    by: nodeActor,
    data: {
      Node: {
        ID: node,
        Datacenter: "dc1",
        Name: "client-1",
        HTTPAddr: "10.0.0.7:4646",
        TLSEnabled: false,
        Attributes: { "kernel.name": "linux", "os.name": "ubuntu", "nomad.version": "1.5.6" },
        NodeResources: { Cpu: { CpuShares: 4000 }, Memory: { MemoryMB: 8192 }, Disk: { DiskMB: 100_000 } },
        ReservedResources: null,
        Resources: null,
        Reserved: null,
        Links: null,
        Meta: { rack: "r1" },
        NodeClass: "web",
        NodePool: "gpu",
        CgroupParent: "",
        ComputedClass: "v1:1234567890",
        Drivers: { docker: { Detected: true, Healthy: true } },
        CSIControllerPlugins: null,
        CSINodePlugins: null,
        HostVolumes: null,
        HostNetworks: null,
        Status: "initializing",
        StatusDescription: "",
        SchedulingEligibility: "eligible",
      },
      SecretIDHash: "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
    },
  },
  {
    type: "NodeStatusUpdated",
    v: 1,
    at,
    by: server,
    data: {
      NodeID: node,
      Status: "disconnected",
      PreviousStatus: "ready",
      Cause: "heartbeat-missed",
      NodeEvent: { Message: "Node heartbeat missed", Subsystem: "Cluster", Details: null, Timestamp: ts },
    },
  },
  {
    type: "NodeDrainUpdated",
    v: 1,
    at,
    by: { kind: "token", id: "6f1d0c2e-0000-4000-8000-00000000a11c", name: "ops" },
    data: {
      NodeID: node,
      DrainStrategy: {
        DrainSpec: { Deadline: 3_600_000_000_000, IgnoreSystemJobs: false },
        ForceDeadline: "2025-11-22T09:26:40Z",
        StartedAt: "2025-11-22T08:26:40Z",
      },
      MarkEligible: false,
      Meta: { reason: "kernel upgrade" },
      AccessorID: "6f1d0c2e-0000-4000-8000-00000000a11c",
      NodeEvent: { Message: "Node drain strategy set", Subsystem: "Drain", Details: null, Timestamp: ts },
    },
  },
  {
    type: "NodeEligibilityUpdated",
    v: 1,
    at,
    by: { kind: "token", id: "6f1d0c2e-0000-4000-8000-00000000a11c", name: "ops" },
    data: {
      NodeID: node,
      Eligibility: "ineligible",
      NodeEvent: {
        Message: "Node marked as ineligible for scheduling",
        Subsystem: "Cluster",
        Details: null,
        Timestamp: ts,
      },
    },
  },
  { type: "NodeDeregistered", v: 1, at, by: nodeActor, data: { NodeIDs: [node] } },
  {
    type: "NodeEventsAppended",
    v: 1,
    at,
    by: nodeActor,
    data: {
      Events: {
        [node]: [
          {
            Message: "Driver docker is unhealthy",
            Subsystem: "Driver",
            Details: { driver: "docker" },
            Timestamp: ts,
          },
        ],
      },
    },
  },
  {
    type: "AllocsPlanApplied",
    v: 1,
    at,
    by: server,
    data: {
      EvalID: "8e9a3c1d-5b7f-4e2a-9c3d-1f2e3d4c5b6a",
      Placed: [
        newAllocation({
          ID: alloc,
          Namespace: "default",
          EvalID: "8e9a3c1d-5b7f-4e2a-9c3d-1f2e3d4c5b6a",
          JobID: "web",
          Job: job,
          TaskGroup: "frontend",
          NodeID: node,
          NodeName: "client-1",
          CreateTime: at * 1e6,
        }),
      ],
      Updated: [],
      Stopped: [
        {
          ID: "0b1c2d3e-4f5a-4b6c-8d7e-9f0a1b2c3d4e",
          DesiredDescription: "alloc not needed due to job update",
          ClientStatus: "",
          FollowupEvalID: "",
          ModifyTime: at * 1e6,
        },
      ],
      Preempted: [],
    },
  },
  {
    type: "AllocClientUpdated",
    v: 1,
    at,
    by: { kind: "server", id: "server-1", name: "client-alloc-updates" },
    data: {
      Allocs: [
        {
          ID: alloc,
          NodeID: node,
          ClientStatus: "running",
          ClientDescription: "Tasks are running",
          TaskStates: { web: { State: "running", Failed: false, Restarts: 0 } },
          DeploymentStatus: null,
          NetworkStatus: null,
          ModifyTime: at * 1e6,
        },
      ],
    },
  },
  {
    type: "AllocsDisconnected",
    v: 1,
    at,
    by: server,
    data: {
      NodeID: node,
      AllocIDs: [alloc],
      ClientDescription: "alloc is unknown since its node is disconnected",
    },
  },
  { type: "AllocsReconnected", v: 1, at, by: server, data: { NodeID: node, AllocIDs: [alloc] } },
  {
    type: "AllocsLost",
    v: 1,
    at,
    by: server,
    data: { NodeID: node, AllocIDs: [alloc], DesiredDescription: "alloc is lost since its node is down" },
  },
  {
    type: "AllocsDesiredTransitionUpdated",
    v: 1,
    at,
    by: { kind: "token", id: "6f1d0c2e-0000-4000-8000-00000000a11c", name: "ops" },
    data: { Allocs: { [alloc]: { Migrate: true, NoShutdownDelay: false } } },
  },
];
