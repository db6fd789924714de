// Nomad's descriptions (scheduler/generic_sched.go, scheduler/util.go,
// nomad/leader.go), shared by the reconciler, the schedulers and the broker.
export const ALLOC_NOT_NEEDED = "alloc not needed due to job update";
export const ALLOC_RECONNECTED = "alloc not needed due to disconnected client reconnect";
export const ALLOC_MIGRATING = "alloc is being migrated";
export const ALLOC_UPDATING = "alloc is being updated due to job update";
export const ALLOC_IN_PLACE = "alloc updating in-place";
export const ALLOC_NODE_TAINTED = "alloc not needed as node is tainted";
export const ALLOC_RESCHEDULED = "alloc was rescheduled because it failed";
export { ALLOC_LOST, ALLOC_UNKNOWN } from "../../../streams/allocs.ts";

export const BLOCKED_EVAL_MAX_PLAN_DESC = "created due to placement conflicts";
export const BLOCKED_EVAL_FAILED_PLACEMENTS = "created to place remaining allocations";
export const RESCHEDULING_FOLLOWUP_EVAL_DESC = "created for delayed rescheduling";
export const DISCONNECT_TIMEOUT_FOLLOWUP_EVAL_DESC = "created for delayed disconnect timeout";
export const CANCELED_BY_NEWER_EVAL = "canceled after more recent eval was processed";
export const DELIVERY_LIMIT_REACHED = (limit: number) => `evaluation reached delivery limit (${limit})`;
export const DUPLICATE_BLOCKED_EVAL = (jobID: string) =>
  `existing blocked evaluation exists for job "${jobID}"`;
export const MAX_ATTEMPTS_REACHED = (attempts: number) => `maximum attempts reached (${attempts})`;

/** Nomad's generic scheduler triggers; anything else fails the evaluation. */
export const GENERIC_TRIGGERS: ReadonlySet<string> = new Set([
  "job-register",
  "job-deregister",
  "node-drain",
  "node-update",
  "alloc-stop",
  "rolling-update",
  "queued-allocs",
  "periodic-job",
  "max-plan-attempts",
  "deployment-watcher",
  "alloc-failure",
  "failed-follow-up",
  "preemption",
  "job-scaling",
  "max-disconnect-timeout",
  "reconnect",
]);

/** Nomad's batchedFailedAllocWindowSize and rescheduleWindowSize, in milliseconds. */
export const BATCHED_FAILED_ALLOC_WINDOW_MS = 5_000;
export const RESCHEDULE_WINDOW_MS = 1_000;
/** Nomad's maxServiceScheduleAttempts and maxBatchScheduleAttempts. */
export const MAX_SERVICE_ATTEMPTS = 5;
export const MAX_BATCH_ATTEMPTS = 2;
export const MAX_PAST_RESCHEDULE_EVENTS = 5;
