/**
 * Where the scheduler's pipeline reports its timings and counts, under
 * Nomad's metric names (nomad.nomad.worker.*, nomad.nomad.plan.*). The
 * server's Metrics registry fits it; without one nothing is recorded.
 */
export interface SchedulerMetricsSink {
  /** A duration in milliseconds. */
  sample(name: string, ms: number, labels?: Readonly<Record<string, string>>, help?: string): void;
  incr(name: string, by?: number, labels?: Readonly<Record<string, string>>, help?: string): void;
}

export const NO_METRICS: SchedulerMetricsSink = {
  sample: () => undefined,
  incr: () => undefined,
};

/**
 * The label set of the pipeline's unlabelled series, one object for every
 * call: the registry recognises the series it recorded last by the labels
 * object, and a fresh `{}` per call made it key the labels again each time
 * (five samples per evaluation).
 */
export const NO_LABELS: Readonly<Record<string, string>> = Object.freeze({});

/** Nomad's invoke_scheduler name of an evaluation type, built once per type, not per evaluation. */
const invokeNames = new Map<string, string>();
export function invokeTiming(type: string): string {
  let name = invokeNames.get(type);
  if (name === undefined) {
    name = `${PIPELINE_TIMINGS.invoke[0]}.${type}`;
    invokeNames.set(type, name);
  }
  return name;
}

/** Nomad's names (nomad/worker.go, nomad/plan_apply.go, nomad/plan_endpoint.go in v1.6.1) and what each measures here. */
export const PIPELINE_TIMINGS = {
  dequeue: ["nomad.nomad.worker.dequeue_eval", "Time a worker waited for an evaluation"],
  /** Nomad suffixes the evaluation type: nomad.nomad.worker.invoke_scheduler.service. */
  invoke: ["nomad.nomad.worker.invoke_scheduler", "Time to compute one pass of the scheduler"],
  submit: ["nomad.nomad.worker.submit_plan", "Time from a plan's submission to its outcome"],
  update: ["nomad.nomad.worker.update_eval", "Time to record an evaluation's outcome"],
  evaluation: ["chronomad.scheduler.eval_ms", "Time from dequeue to ack of one evaluation"],
  planSubmit: ["nomad.nomad.plan.submit", "Time from a plan's arrival in the plan queue to its outcome"],
  planApply: [
    "nomad.nomad.plan.apply",
    "Time to append one batch of plans and evaluation updates and apply it",
  ],
} as const;

export const NODE_REJECTED = [
  "nomad.nomad.plan.node_rejected",
  "Plans whose part on a node apply refused",
] as const;
