import type { EvaluationSpec } from "./evals.ts";
import { type Envelope, schemas } from "./event-schema.ts";

/**
 * One launch of a periodic job (Nomad's PeriodicDispatch.createEval): the
 * child job `<parent>/periodic-<unix seconds>` and its evaluation, in one
 * record. The child is the parent's current version without its periodic
 * block, derived at apply. The launch time is chosen by the writer (the
 * leader's periodic dispatcher, or a force-launch request); apply refuses a
 * launch that is not after the parent's last recorded one, so a tick is
 * launched once whatever the number of leaders.
 */
export interface PeriodicJobLaunched {
  readonly Namespace: string;
  readonly ParentID: string;
  /** Unix milliseconds: the cron time of a tick, or the time of a forced launch. */
  readonly LaunchTime: number;
  /** `<ParentID>/periodic-<LaunchTime in unix seconds>`. */
  readonly ChildID: string;
  /** Its TriggeredBy is `periodic-job`; its JobModifyIndex is set to the record's index at apply. */
  readonly Eval: EvaluationSpec;
  /** Asked for with `/v1/job/:id/periodic/force` rather than reached by the schedule. */
  readonly Forced: boolean;
}

/**
 * Job.Dispatch: a child of a parameterized job (the parent's current version
 * with Dispatched set, the caller's meta merged over the parent's, and the
 * payload), with its evaluation unless the child is periodic, in one record.
 */
export interface JobDispatched {
  readonly Namespace: string;
  readonly ParentID: string;
  /** `<ParentID>/dispatch-<unix seconds>-<8 hex>`: the randomness is the handler's. */
  readonly ChildID: string;
  readonly Meta: Readonly<Record<string, string>> | null;
  /** The payload as the child job keeps it (Nomad's: snappy-compressed, base64 in JSON); "" for none. */
  readonly Payload: string;
  readonly IdempotencyToken: string;
  /** Null when the child is periodic: the periodic dispatcher launches it. */
  readonly Eval: EvaluationSpec | null;
}

export type PeriodicEvent =
  | Envelope<"PeriodicJobLaunched", PeriodicJobLaunched>
  | Envelope<"JobDispatched", JobDispatched>;

export const periodicSchemas = schemas(
  { type: "PeriodicJobLaunched", version: 1 },
  { type: "JobDispatched", version: 1 },
);

/** Nomad's JobLaunchSuffix and DispatchLaunchSuffix. */
export const PERIODIC_LAUNCH_SUFFIX = "/periodic-";
export const DISPATCH_LAUNCH_SUFFIX = "/dispatch-";

/** Nomad's derivedJobID: the child of a launch at `launchMs`. */
export function periodicChildID(parentID: string, launchMs: number): string {
  return `${parentID}${PERIODIC_LAUNCH_SUFFIX}${Math.floor(launchMs / 1000)}`;
}
