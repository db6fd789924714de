import type { AllocsPlanApplied } from "../../streams/allocs.ts";
import { newEvaluation } from "../../streams/evals.ts";
import type { Envelope } from "../../streams/event-schema.ts";
import type { JobScaled } from "../../streams/job-scaling.ts";
import type { JobDeregistered, JobRegistered, JobSpec, JobStabilitySet } from "../../streams/jobs.ts";

const at = 1_763_800_000_000;
const by = { kind: "token", id: "6f1d0c2e-0000-4000-8000-00000000a11c", name: "ops" } as const;

/** A canonicalized service job, as the register handler writes it. */
export const sampleJob: JobSpec = {
  ID: "web",
  Name: "web",
  Namespace: "default",
  Region: "global",
  Type: "service",
  Priority: 50,
  AllAtOnce: false,
  Datacenters: ["dc1"],
  // biome-ignore lint/suspicious/noTemplateCurlyInString: Nomad's interpolation syntax
  Constraints: [{ LTarget: "${attr.kernel.name}", RTarget: "linux", Operand: "=" }],
  TaskGroups: [
    {
      Name: "frontend",
      Count: 3,
      Update: {
        Stagger: 30e9,
        MaxParallel: 1,
        HealthCheck: "checks",
        MinHealthyTime: 10e9,
        HealthyDeadline: 300e9,
        ProgressDeadline: 600e9,
        AutoRevert: false,
        AutoPromote: false,
        Canary: 0,
      },
      Migrate: { MaxParallel: 1, HealthCheck: "checks", MinHealthyTime: 10e9, HealthyDeadline: 300e9 },
      Constraints: null,
      RestartPolicy: { Attempts: 2, Interval: 1800e9, Delay: 15e9, Mode: "fail" },
      ReschedulePolicy: {
        Attempts: 0,
        Interval: 0,
        Delay: 30e9,
        DelayFunction: "exponential",
        MaxDelay: 3600e9,
        Unlimited: true,
      },
      EphemeralDisk: { Sticky: false, SizeMB: 300, Migrate: false },
      Tasks: [
        {
          Name: "nginx",
          Driver: "docker",
          Config: { image: "nginx:1.25" },
          Constraints: null,
          Resources: {
            CPU: 500,
            Cores: 0,
            MemoryMB: 256,
            MemoryMaxMB: 0,
            DiskMB: 0,
            IOPS: 0,
            Networks: null,
            Devices: null,
          },
          RestartPolicy: { Attempts: 2, Interval: 1800e9, Delay: 15e9, Mode: "fail" },
          KillTimeout: 5e9,
          LogConfig: { MaxFiles: 10, MaxFileSizeMB: 10 },
          Leader: false,
          Lifecycle: null,
          Meta: null,
        },
      ],
      Meta: null,
      MaxClientDisconnect: 3600e9,
      StopAfterClientDisconnect: null,
    },
  ],
  Update: {
    Stagger: 30e9,
    MaxParallel: 1,
    HealthCheck: "checks",
    MinHealthyTime: 10e9,
    HealthyDeadline: 300e9,
    ProgressDeadline: 600e9,
    AutoRevert: false,
    AutoPromote: false,
    Canary: 0,
  },
  Periodic: null,
  ParameterizedJob: null,
  Meta: { team: "edge" },
  Stop: false,
  ParentID: "",
};

const registerEval = newEvaluation({
  ID: "c3d4e5f6-0718-4293-a4b5-c6d7e8f90a1b",
  Namespace: "default",
  Type: "service",
  TriggeredBy: "job-register",
  JobID: "web",
  CreateTime: at * 1e6,
});

const registered: JobRegistered = {
  Job: sampleJob,
  Eval: registerEval,
  EnforceIndex: true,
  JobModifyIndex: 0,
  Submission: {
    Source: 'job "web" {\n  group "frontend" {}\n}\n',
    Format: "hcl2",
    VariableFlags: { image: "nginx:1.25" },
    Variables: "replicas = 3\n",
  },
};
const scaled: JobScaled = {
  Namespace: "default",
  JobID: "web",
  TaskGroup: "frontend",
  Count: 5,
  PreviousCount: 3,
  Message: "cpu above 80% for 5m",
  Error: false,
  Meta: { "nomad_autoscaler.target": "web", window: 300 },
  Eval: { ...registerEval, ID: "e8f90a1b-2c3d-44e5-a6f7-08192a3b4c5d", TriggeredBy: "job-scaling" },
};
const deregistered: JobDeregistered = {
  Namespace: "default",
  JobID: "web",
  Purge: false,
  Eval: { ...registerEval, ID: "d4e5f607-1829-43a4-b5c6-d7e8f90a1b2c", TriggeredBy: "job-deregister" },
};

/** One sample per job event type (golden fixtures in test/fixtures/events). */
export const jobSamples: readonly Envelope[] = [
  { type: "JobRegistered", v: 2, at, by, data: registered },
  { type: "JobDeregistered", v: 1, at, by, data: deregistered },
  {
    type: "JobStabilitySet",
    v: 1,
    at,
    by,
    data: { Namespace: "default", JobID: "web", Version: 1, Stable: true } satisfies JobStabilitySet,
  },
  { type: "JobScaled", v: 1, at, by, data: scaled },
];

/**
 * The scheduler's compact plan (AllocsPlanApplied with its optional fields):
 * pinned on its own, since the v1 fixture pins the full-spec form.
 */
export const compactPlanSample: Envelope<"AllocsPlanApplied", AllocsPlanApplied> = {
  type: "AllocsPlanApplied",
  v: 1,
  at,
  by: { kind: "server", id: "server-1", epoch: 3 },
  data: {
    EvalID: "c3d4e5f6-0718-4293-a4b5-c6d7e8f90a1b",
    PlanID: "e5f60718-293a-44b5-86c7-d8e9f0a1b2c3",
    Placed: [],
    Updated: [],
    Stopped: [
      {
        ID: "0b1c2d3e-4f50-4617-8293-a4b5c6d7e8f9",
        DesiredDescription: "alloc not needed due to disconnected client reconnect",
        ClientStatus: "",
        FollowupEvalID: "",
        ModifyTime: at * 1e6,
      },
    ],
    Preempted: [],
    Job: { Namespace: "default", ID: "web", Version: 2 },
    DeploymentID: "f6071829-3a4b-45c6-97d8-e9f0a1b2c3d4",
    Placements: [
      {
        ID: "1c2d3e4f-5061-4728-93a4-b5c6d7e8f90a",
        Name: "web.frontend[2]",
        TaskGroup: "frontend",
        NodeID: "f1e2d3c4-b5a6-4978-8a9b-0c1d2e3f4a5b",
        Score: 0.5625,
        NodesEvaluated: 4,
        PreviousAllocation: "2d3e4f50-6172-4839-a4b5-c6d7e8f90a1b",
        RescheduleTracker: {
          Events: [
            {
              RescheduleTime: at * 1e6,
              PrevAllocID: "2d3e4f50-6172-4839-a4b5-c6d7e8f90a1b",
              PrevNodeID: "a1b2c3d4-e5f6-4789-9abc-def012345678",
              Delay: 30e9,
            },
          ],
        },
      },
    ],
    InPlace: ["3e4f5061-7283-494a-b5c6-d7e8f90a1b2c"],
    Disconnected: [
      { ID: "4f506172-8394-4a5b-86c7-e8f90a1b2c3d", FollowupEvalID: "50617283-94a5-4b6c-87d8-e9f0a1b2c3d4" },
    ],
    Reconnected: [],
    Followups: [
      { ID: "61728394-a5b6-47c8-99e0-a1b2c3d4e5f6", FollowupEvalID: "7283940a-5b6c-47d8-a9e0-f1a2b3c4d5e6" },
    ],
    DeploymentUpdates: [
      {
        DeploymentID: "0718293a-4b5c-46d7-a8e9-f0a1b2c3d4e5",
        Status: "cancelled",
        StatusDescription: "Cancelled due to newer version of job",
      },
    ],
  },
};
