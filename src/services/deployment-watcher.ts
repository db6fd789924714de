import { randomUUID } from "node:crypto";
import type { Subscription } from "rxjs";
import type { DeploymentRow } from "../../projections/deployments.ts";
import { jobKey } from "../../projections/evals.ts";
import {
  DEPLOYMENT_FAILED_ALLOCATIONS,
  DEPLOYMENT_PROGRESS_DEADLINE,
  hasAutoPromote,
  requiresPromotion,
} from "../../streams/deployments.ts";
import { type EvaluationSpec, newEvaluation } from "../../streams/evals.ts";
import type { Timer } from "../util/clock.ts";
import {
  autoPromotable,
  failureDrafts,
  progressCutoff,
  shouldFailAtDeadline,
} from "./deployment-decisions.ts";
import type { LeaderService, ServiceContext } from "./service.ts";

/**
 * Nomad's deployment watcher, as a leader service fed by the deployments
 * table's changes:
 * - allocations of a running deployment report their health: the job gets
 *   a `deployment-watcher` evaluation, so the reconciler replaces the next
 *   batch (or marks the deployment successful);
 * - every canary of every auto_promote group is healthy: the deployment is
 *   promoted (DeploymentPromoted, as Deployment.Promote with All);
 * - an allocation of an auto_revert group turns unhealthy, or the progress
 *   deadline passes (a timer on the clock per running deployment): the
 *   deployment fails and, where auto_revert says so, the job goes back to its
 *   latest stable version in the same append.
 * Unhealthy allocations of groups without auto_revert fail the deployment
 * in the deployments projection itself.
 */
export class DeploymentWatcher implements LeaderService {
  readonly name = "deployment-watcher";
  private ctx: ServiceContext | undefined;
  private readonly subscriptions: Subscription[] = [];
  private pending = new Map<string, DeploymentRow>();
  /** Deployments that changed since the last flush: promotion, failure and deadline are looked at again. */
  private dirty = new Set<string>();
  /** Deployments with a write of this watcher under way: not acted on again until it applied. */
  private readonly acting = new Set<string>();
  private readonly deadlines = new Map<string, { at: number; timer: Timer }>();
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
          if (!after) {
            if (before) this.dirty.add(before.ID);
            return;
          }
          this.dirty.add(after.ID);
          if (after.Status !== "running" || !healthMoved(before, after)) return;
          this.pending.set(jobKey(after.Namespace, after.JobID), after);
        },
        error: () => undefined,
      }),
      ctx.store.applied$.subscribe({ next: () => this.flush(), error: () => undefined }),
    );
    // A new leader takes over the deployments still running (their deadlines, a promotion due).
    for (const d of ctx.tables.deployments.all()) if (d.Status === "running") this.dirty.add(d.ID);
    this.flush();
  }

  async stop(): Promise<void> {
    for (const s of this.subscriptions.splice(0)) s.unsubscribe();
    for (const { timer } of this.deadlines.values()) this.ctx?.clock.clearTimeout(timer);
    this.deadlines.clear();
    this.ctx = undefined;
    this.pending.clear();
    this.dirty.clear();
    await Promise.allSettled([...this.inFlight]);
  }

  get idle(): boolean {
    return this.pending.size === 0 && this.inFlight.size === 0 && this.dirty.size === 0;
  }

  private flush(): void {
    const ctx = this.ctx;
    if (!ctx) return;
    if (this.dirty.size > 0) {
      const ids = [...this.dirty];
      this.dirty = new Set();
      for (const id of ids) this.examine(ctx, id);
    }
    if (this.pending.size === 0) return;
    const due = [...this.pending.values()];
    this.pending = new Map();
    const evals: EvaluationSpec[] = [];
    for (const d of due) {
      const current = ctx.tables.deployments.get(d.ID);
      // A promotion or a failure under way brings its own evaluation.
      if (this.acting.has(d.ID) || current?.Status !== "running") continue;
      const e = this.evaluation(ctx, current);
      if (e) evals.push(e);
    }
    if (evals.length > 0) this.write([{ type: "EvaluationsUpserted", v: 1, data: { Evals: evals } }]);
  }

  /** Nomad's getEval: an evaluation of the deployment's job, at the deployment's priority. */
  private evaluation(ctx: ServiceContext, d: DeploymentRow): EvaluationSpec | undefined {
    const job = ctx.tables.jobs.get(jobKey(d.Namespace, d.JobID));
    if (!job || job.Stop) return undefined;
    return newEvaluation({
      ID: this.newID(),
      Namespace: job.Namespace,
      Priority: d.EvalPriority || job.Priority,
      Type: job.Type,
      TriggeredBy: "deployment-watcher",
      JobID: job.ID,
      JobModifyIndex: job.JobModifyIndex,
      DeploymentID: d.ID,
      CreateTime: ctx.clock.now() * 1e6,
    });
  }

  /** One deployment that changed: fail it, promote it, or (re)arm its progress deadline. */
  private examine(ctx: ServiceContext, id: string): void {
    const d = ctx.tables.deployments.get(id);
    if (d?.Status !== "running") {
      this.disarm(ctx, id);
      return;
    }
    if (this.acting.has(id)) return;
    const unhealthyReverting = Object.values(d.TaskGroups).some((g) => g.AutoRevert && g.UnhealthyAllocs > 0);
    if (unhealthyReverting) {
      this.fail(ctx, d, DEPLOYMENT_FAILED_ALLOCATIONS, true);
      return;
    }
    if (requiresPromotion(d) && hasAutoPromote(d) && autoPromotable(d, ctx.tables.allocs)) {
      const e = this.evaluation(ctx, d);
      if (e) {
        this.act(d.ID, [
          {
            type: "DeploymentPromoted",
            v: 1,
            data: { DeploymentID: d.ID, All: true, Groups: null, Eval: e },
          },
        ]);
        return;
      }
    }
    this.arm(ctx, d);
  }

  private arm(ctx: ServiceContext, d: DeploymentRow): void {
    const at = progressCutoff(d, ctx.tables.allocs);
    const armed = this.deadlines.get(d.ID);
    if (armed?.at === at) return;
    this.disarm(ctx, d.ID);
    if (at === undefined) return;
    const timer = ctx.clock.setTimeout(() => this.deadlineHit(d.ID), Math.max(0, at - ctx.clock.now()));
    this.deadlines.set(d.ID, { at, timer });
  }

  private disarm(ctx: ServiceContext, id: string): void {
    const armed = this.deadlines.get(id);
    if (!armed) return;
    ctx.clock.clearTimeout(armed.timer);
    this.deadlines.delete(id);
  }

  /** Nomad's deadline timer: the deployment fails unless every group made enough progress. */
  private deadlineHit(id: string): void {
    const ctx = this.ctx;
    this.deadlines.delete(id);
    if (!ctx) return;
    const d = ctx.tables.deployments.get(id);
    if (d?.Status !== "running" || this.acting.has(id)) return;
    const job = ctx.tables.jobs.get(jobKey(d.Namespace, d.JobID));
    const verdict = shouldFailAtDeadline(d, job);
    if (!verdict.fail) {
      this.arm(ctx, d);
      return;
    }
    this.fail(ctx, d, DEPLOYMENT_PROGRESS_DEADLINE, verdict.rollback);
  }

  private fail(ctx: ServiceContext, d: DeploymentRow, base: string, rollback: boolean): void {
    const e = this.evaluation(ctx, d);
    const { drafts } = failureDrafts(ctx.tables, d, base, rollback, e ?? null);
    this.disarm(ctx, d.ID);
    this.act(d.ID, drafts);
  }

  private act(id: string, drafts: Parameters<ServiceContext["write"]>[0]): void {
    this.acting.add(id);
    this.write(drafts, () => {
      this.acting.delete(id);
      this.dirty.add(id);
      this.flush();
    });
  }

  private write(drafts: Parameters<ServiceContext["write"]>[0], then?: () => void): void {
    const ctx = this.ctx;
    if (!ctx) return;
    const done = ctx
      .write(drafts)
      .catch((err: Error) => ctx.logger.error({ err }, "deployment watcher write failed"))
      .finally(() => then?.());
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
