import type { Projections } from "../../projections/index.ts";
import type { TaskGroupSummary } from "../../projections/jobs.ts";
import type { Leadership } from "../leadership.ts";
import type { SchedulerService } from "../services/scheduler/scheduler-service.ts";
import { SCHEDULER_TYPES } from "../services/scheduler/worker-pool.ts";
import type { Store } from "../store/store.ts";
import { gcTotals } from "./gc-totals.ts";
import type { Labels, Metrics } from "./metrics.ts";

/** Where the metrics below are read from. */
export interface NomadMetricSources {
  readonly store: Store;
  readonly tables: Projections["tables"];
  readonly leadership: Leadership;
  readonly scheduler: SchedulerService;
  /** How many nodes have a heartbeat timer on this server (0 unless it leads). */
  readonly heartbeats: () => number;
}

/** Nomad's job_summary gauges, by the TaskGroupSummary field each reads. */
const JOB_SUMMARY: readonly (readonly [string, keyof TaskGroupSummary])[] = [
  ["queued", "Queued"],
  ["complete", "Complete"],
  ["failed", "Failed"],
  ["running", "Running"],
  ["starting", "Starting"],
  ["lost", "Lost"],
  ["unknown", "Unknown"],
];

/**
 * The metrics of Nomad's that chronomad measures the same thing for, under
 * Nomad's names. Cluster-wide figures (broker, blocked evaluations, job
 * status and summaries, heartbeats) come from the leader only, as Nomad's
 * do, so scraping every server does not count them twice. `nomad.raft.*`
 * report the log, whose index plays Raft's. The runtime ones describe the
 * Node.js process (V8 heap for alloc_bytes, resident set for sys_bytes).
 */
export function registerNomadMetrics(metrics: Metrics, src: NomadMetricSources): void {
  metrics.gauge(
    "nomad.runtime.alloc_bytes",
    () => process.memoryUsage().heapUsed,
    {},
    "Bytes of V8 heap in use",
  );
  metrics.gauge("nomad.runtime.sys_bytes", () => process.memoryUsage.rss(), {}, "Resident set size in bytes");
  metrics.gauge("nomad.runtime.total_gc_runs", () => gcTotals().runs, {}, "Garbage collections so far");
  metrics.gauge(
    "nomad.runtime.total_gc_pause_ns",
    () => gcTotals().pauseNs,
    {},
    "Time spent in garbage collection pauses so far, in nanoseconds",
  );
  metrics.gauge("nomad.raft.appliedIndex", () => src.store.appliedIndex, {}, "Last log index applied");
  metrics.gauge("nomad.raft.lastIndex", () => src.store.log.lastIndex(), {}, "Last index in the log");

  const onLeader = (read: () => number) => () => {
    if (!src.leadership.isLeader()) throw new Error("not the leader");
    return read();
  };
  const broker = () => src.scheduler.evalBroker?.stats() ?? { ready: 0, unacked: 0, delayed: 0, pending: 0 };
  metrics.gauge(
    "nomad.nomad.broker.total_ready",
    onLeader(() => broker().ready),
    {},
    "Evaluations ready to be scheduled",
  );
  metrics.gauge(
    "nomad.nomad.broker.total_unacked",
    onLeader(() => broker().unacked),
    {},
    "Evaluations being scheduled (delivered, not acknowledged)",
  );
  metrics.gauge(
    "nomad.nomad.broker.total_pending",
    onLeader(() => broker().pending),
    {},
    "Evaluations waiting behind another of the same job",
  );
  metrics.gauge(
    "nomad.nomad.broker.total_waiting",
    onLeader(() => broker().delayed),
    {},
    "Evaluations waiting for their wait time to pass",
  );
  metrics.gauge(
    "nomad.nomad.blocked_evals.total_blocked",
    onLeader(() => src.scheduler.blockedEvals?.size ?? 0),
    {},
    "Evaluations blocked until capacity frees",
  );
  metrics.gauge(
    "nomad.nomad.blocked_evals.total_escaped",
    onLeader(() => src.scheduler.blockedEvals?.escapedCount ?? 0),
    {},
    "Blocked evaluations that could not tell node classes apart",
  );
  for (const type of SCHEDULER_TYPES) {
    metrics.gauge(
      `nomad.nomad.broker.${type}.ready`,
      onLeader(() => src.scheduler.evalBroker?.statsOf(type).ready ?? 0),
      {},
      `Evaluations of type ${type} ready to be scheduled`,
    );
    metrics.gauge(
      `nomad.nomad.broker.${type}.unacked`,
      onLeader(() => src.scheduler.evalBroker?.statsOf(type).unacked ?? 0),
      {},
      `Evaluations of type ${type} being scheduled`,
    );
  }
  registerPipelineMetrics(metrics, src.scheduler, onLeader);
  metrics.gauge(
    "nomad.nomad.heartbeat.active",
    onLeader(() => src.heartbeats()),
    {},
    "Nodes with a heartbeat timer running",
  );

  // Counted once per applied index, not once per gauge.
  let counted = { index: -1, counts: { pending: 0, running: 0, dead: 0 } };
  const jobStatus = () => {
    if (counted.index === src.store.appliedIndex) return counted.counts;
    const counts = { pending: 0, running: 0, dead: 0 };
    for (const job of src.tables.jobs.all()) counts[job.Status]++;
    counted = { index: src.store.appliedIndex, counts };
    return counts;
  };
  for (const status of ["pending", "running", "dead"] as const) {
    metrics.gauge(
      `nomad.nomad.job_status.${status}`,
      onLeader(() => jobStatus()[status]),
      {},
      `Jobs whose status is ${status}`,
    );
  }

  for (const [name, field] of JOB_SUMMARY) {
    metrics.gauges(
      `nomad.nomad.job_summary.${name}`,
      ["job", "task_group", "namespace"],
      function* () {
        if (!src.leadership.isLeader()) return;
        for (const summary of src.tables.jobSummaries.all()) {
          for (const [group, counts] of Object.entries(summary.Summary)) {
            const labels: Labels = { job: summary.JobID, task_group: group, namespace: summary.Namespace };
            yield [labels, counts[field]] as const;
          }
        }
      },
      `Allocations of a task group that are ${name}`,
    );
  }
}

/**
 * The scheduler's pipeline: Nomad's plan queue depth, and its timings
 * (nomad.nomad.worker.*, nomad.nomad.plan.*) recorded as they happen; how
 * busy the workers are and what the plan queue's appends carried, which
 * Nomad does not report.
 */
function registerPipelineMetrics(
  metrics: Metrics,
  scheduler: SchedulerService,
  onLeader: (read: () => number) => () => number,
): void {
  scheduler.setMetrics(metrics);
  const stats = () => scheduler.pipelineStats();
  metrics.gauge(
    "nomad.nomad.plan.queue_depth",
    onLeader(() => stats().planQueue.depth),
    {},
    "Plans and evaluation updates waiting for the next append",
  );
  metrics.gauge(
    "chronomad.scheduler.plan_queue.in_flight",
    onLeader(() => stats().planQueue.inFlight),
    {},
    "Plans and evaluation updates in the append under way",
  );
  metrics.gauge(
    "chronomad.scheduler.plan_queue.appends",
    onLeader(() => stats().planQueue.appends),
    {},
    "Appends the plan queue made since leadership started",
  );
  metrics.gauge(
    "chronomad.scheduler.plan_queue.records",
    onLeader(() => stats().planQueue.records),
    {},
    "Records those appends carried",
  );
  metrics.gauge(
    "chronomad.scheduler.plan_queue.submissions",
    onLeader(() => stats().planQueue.submissions),
    {},
    "Plans and evaluation updates those appends carried",
  );
  metrics.gauge(
    "chronomad.scheduler.workers",
    onLeader(() => stats().workers),
    {},
    "Scheduler workers running",
  );
  metrics.gauge(
    "chronomad.scheduler.workers_busy",
    onLeader(() => stats().workersBusy),
    {},
    "Scheduler workers with an evaluation in hand",
  );
  metrics.gauge(
    "chronomad.scheduler.worker_utilization",
    onLeader(() => stats().workerUtilization),
    {},
    "Share of the last 10 s the workers had an evaluation in hand (1: they are behind, evaluations wait in the broker)",
  );
}
