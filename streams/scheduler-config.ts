import { type Envelope, schemas } from "./event-schema.ts";

export type SchedulerAlgorithm = "binpack" | "spread";

/** Nomad's PreemptionConfig: per scheduler type, whether it may preempt lower-priority allocations. */
export interface PreemptionConfig {
  readonly SystemSchedulerEnabled: boolean;
  readonly SysBatchSchedulerEnabled: boolean;
  readonly BatchSchedulerEnabled: boolean;
  readonly ServiceSchedulerEnabled: boolean;
}

/**
 * Nomad's SchedulerConfiguration without the indexes. SchedulerAlgorithm may
 * be "" as in Nomad, which reads it as binpack.
 */
export interface SchedulerConfigSpec {
  readonly SchedulerAlgorithm: SchedulerAlgorithm | "";
  readonly PreemptionConfig: PreemptionConfig;
  readonly MemoryOversubscriptionEnabled: boolean;
  readonly RejectJobRegistration: boolean;
  /** While true the eval broker holds every evaluation, and evaluations may be deleted. */
  readonly PauseEvalBroker: boolean;
  /**
   * Newer Nomad's cap on the feasible nodes scored for a group with spread
   * blocks (0: Nomad's default, 100). Absent from records written before it;
   * kept and answered back, and read by the scheduler once it scores spreads.
   */
  readonly NodeLimitForFeasibilityChecks?: number;
}

/**
 * The whole scheduler configuration replaced (`PUT /v1/operator/scheduler/configuration`).
 * With CAS, it applies only if the stored configuration's ModifyIndex is
 * still CASIndex (0: never set); otherwise it is rejected at apply.
 */
export interface SchedulerConfigSet {
  readonly Config: SchedulerConfigSpec;
  readonly CAS: boolean;
  readonly CASIndex: number;
}

export type SchedulerConfigEvent = Envelope<"SchedulerConfigSet", SchedulerConfigSet>;

export const schedulerConfigSchemas = schemas({ type: "SchedulerConfigSet", version: 1 });
