import { newEvaluation } from "../../streams/evals.ts";
import type { Envelope } from "../../streams/event-schema.ts";
import type { JobDispatched, PeriodicJobLaunched } from "../../streams/periodic.ts";

const at = 1_763_800_000_000;
const by = { kind: "token", id: "6f1d0c2e-0000-4000-8000-00000000a11c", name: "ops" } as const;

const launched: PeriodicJobLaunched = {
  Namespace: "default",
  ParentID: "report",
  LaunchTime: 1_763_800_020_000,
  ChildID: "report/periodic-1763800020",
  Eval: newEvaluation({
    ID: "0b1c2d3e-4f50-4617-8829-3a4b5c6d7e8f",
    Namespace: "default",
    Type: "batch",
    TriggeredBy: "periodic-job",
    JobID: "report/periodic-1763800020",
    CreateTime: 1_763_800_020_000 * 1e6,
  }),
  Forced: false,
};

const dispatched: JobDispatched = {
  Namespace: "default",
  ParentID: "etl",
  ChildID: "etl/dispatch-1763800000-0a1b2c3d",
  Meta: { customer: "acme" },
  // snappy block of "hello": varint 5, one literal of 5 bytes.
  Payload: "BRBoZWxsbw==",
  IdempotencyToken: "nightly-acme",
  Eval: newEvaluation({
    ID: "1c2d3e4f-5061-4728-9930-4b5c6d7e8f90",
    Namespace: "default",
    Type: "batch",
    TriggeredBy: "job-register",
    JobID: "etl/dispatch-1763800000-0a1b2c3d",
    CreateTime: at * 1e6,
  }),
};

/** Samples of streams/periodic.ts for the golden codec fixtures. */
export const periodicSamples: readonly Envelope[] = [
  { type: "PeriodicJobLaunched", v: 1, at, by: { kind: "server", id: "server-1", epoch: 3 }, data: launched },
  { type: "JobDispatched", v: 1, at, by, data: dispatched },
];
