import { randomUUID } from "node:crypto";
import type { Subscription } from "rxjs";
import type { DeploymentRow } from "../../projections/deployments.ts";
import { jobKey } from "../../projections/evals.ts";
import { type EvaluationSpec, newEvaluation } from "../../streams/evals.ts";
import type { LeaderService, ServiceContext } from "./service.ts";

/**
 * The part of Nomad's deployment watcher that keeps a rolling update
 * moving: when allocations of a running deployment report their health, the
 * job gets a `deployment-watcher` evaluation, so the reconciler replaces the
 * next batch (or marks the deployment successful). Unhealthy allocations
 * fail the deployment in the deployments projection itself. Progress
 * deadlines, auto-revert and promotion are not watched.
 */
export class DeploymentWatcher implements LeaderService {
  readonly name = "deployment-watcher";
  private ctx: ServiceContext | undefined;
  private readonly subscriptions: Subscription[] = [];
  private pending = new Map<string, DeploymentRow>();
  private readonly inFlight = new Set<Promise<unknown>>();
  private readonly newID: () => string;

  constructor(options: { newID?: () => string } = {}) {
    this.newID = options.newID ?? randomUUID;
  }

  start(ctx: ServiceContext): void {
    this.ctx = ctx;
    this.subscriptions.push(
      ctx.store.change$.subscribe({
        next: (c) => {
          if (c.table !== "deployments") return;
          const before = c.before as DeploymentRow | undefined;
          const after = c.after as DeploymentRow | undefined;
          if (after?.Status !== "running" || !healthMoved(before, after)) return;
          this.pending.set(jobKey(after.Namespace, after.JobID), after);
        },
        error: () => undefined,
      }),
      ctx.store.applied$.subscribe({ next: () => this.flush(), error: () => undefined }),
    );
  }

  async stop(): Promise<void> {
    for (const s of this.subscriptions.splice(0)) s.unsubscribe();
    this.ctx = undefined;
    this.pending.clear();
    await Promise.allSettled([...this.inFlight]);
  }

  get idle(): boolean {
    return this.pending.size === 0 && this.inFlight.size === 0;
  }

  private flush(): void {
    const ctx = this.ctx;
    if (!ctx || this.pending.size === 0) return;
    const due = [...this.pending.values()];
    this.pending = new Map();
    const now = ctx.clock.now() * 1e6;
    const evals: EvaluationSpec[] = [];
    for (const d of due) {
      const job = ctx.tables.jobs.get(jobKey(d.Namespace, d.JobID));
      if (!job || job.Stop) continue;
      evals.push(
        newEvaluation({
          ID: this.newID(),
          Namespace: job.Namespace,
          Priority: d.EvalPriority || job.Priority,
          Type: job.Type,
          TriggeredBy: "deployment-watcher",
          JobID: job.ID,
          JobModifyIndex: job.JobModifyIndex,
          DeploymentID: d.ID,
          CreateTime: now,
        }),
      );
    }
    if (evals.length === 0) return;
    const done = ctx
      .write([{ type: "EvaluationsUpserted", v: 1, data: { Evals: evals } }])
      .catch((err: Error) => ctx.logger.error({ err }, "deployment watcher write failed"));
    this.inFlight.add(done);
    void done.finally(() => this.inFlight.delete(done));
  }
}

function healthMoved(before: DeploymentRow | undefined, after: DeploymentRow): boolean {
  if (!before) return false;
  for (const [tg, state] of Object.entries(after.TaskGroups)) {
    const was = before.TaskGroups[tg];
    if (!was || was.HealthyAllocs !== state.HealthyAllocs || was.UnhealthyAllocs !== state.UnhealthyAllocs)
      return true;
  }
  return false;
}
