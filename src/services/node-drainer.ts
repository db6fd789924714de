import { randomUUID } from "node:crypto";
import { filter, type Subscription } from "rxjs";
import type { AllocRow } from "../../projections/allocs.ts";
import { jobKey } from "../../projections/evals.ts";
import { goTime } from "../../projections/go-time.ts";
import type { JobRow } from "../../projections/jobs.ts";
import type { NodeRow } from "../../projections/nodes.ts";
import { type AllocsDesiredTransitionUpdated, isTerminalAlloc } from "../../streams/allocs.ts";
import { type EvaluationSpec, newEvaluation, ZERO_TIME } from "../../streams/evals.ts";
import type { NodeDrainUpdated } from "../../streams/nodes.ts";
import type { Draft } from "../store/writer.ts";
import type { Timer } from "../util/clock.ts";
import type { LeaderService, ServiceContext } from "./service.ts";

/**
 * Nomad's node drainer, leader-only: for every draining node it marks the
 * allocations to move (DesiredTransition.Migrate) with a `node-drain`
 * evaluation per job, so the scheduler places replacements elsewhere and
 * stops the originals. Service groups move at most `migrate.max_parallel`
 * at a time, counting replacements that are not healthy yet; batch
 * allocations are left to finish until the drain's deadline; system ones
 * go last (unless ignored). At the deadline everything left is marked. When
 * nothing is left on a ready node the drain completes. Driven by table changes; the deadline
 * runs on the Clock.
 */
export class NodeDrainer implements LeaderService {
  readonly name = "node-drainer";
  private ctx: ServiceContext | undefined;
  private readonly subscriptions: Subscription[] = [];
  /** Nodes with a drain strategy, followed from the node changes. */
  private readonly draining = new Set<string>();
  /** A drain ended since the last pass (its deadline timer must go). */
  private ended = false;
  private readonly deadlines = new Map<string, Timer>();
  private busy: Promise<void> | undefined;
  private again = false;
  private readonly newID: () => string;

  constructor(options: { newID?: () => string } = {}) {
    this.newID = options.newID ?? randomUUID;
  }

  start(ctx: ServiceContext): void {
    this.ctx = ctx;
    this.draining.clear();
    for (const n of ctx.tables.nodes.all()) if (n.DrainStrategy !== null) this.draining.add(n.ID);
    this.subscriptions.push(
      ctx.store.change$.pipe(filter((c) => c.table === "nodes")).subscribe({
        next: (c) => {
          const after = c.after as NodeRow | undefined;
          if (after?.DrainStrategy) this.draining.add(c.key);
          else if (this.draining.delete(c.key)) this.ended = true;
        },
        error: () => undefined,
      }),
      // Nothing to do while no node drains: most batches cost one set lookup.
      ctx.store.applied$
        .pipe(
          filter(
            (b) =>
              (this.draining.size > 0 || this.ended) &&
              (b.tables.has("nodes") || b.tables.has("allocs") || b.tables.has("jobs")),
          ),
        )
        .subscribe({ next: () => this.kick(), error: () => undefined }),
    );
    this.kick();
  }

  async stop(): Promise<void> {
    for (const sub of this.subscriptions.splice(0)) sub.unsubscribe();
    const ctx = this.ctx;
    this.ctx = undefined;
    if (ctx) for (const t of this.deadlines.values()) ctx.clock.clearTimeout(t);
    this.deadlines.clear();
    await this.busy;
  }

  /** Nothing being written (tests wait for it). */
  get idle(): boolean {
    return this.busy === undefined;
  }

  /** Re-checks every draining node; one pass at a time, and once more if asked meanwhile. */
  private kick(): void {
    if (!this.ctx) return;
    if (this.busy) {
      this.again = true;
      return;
    }
    this.busy = this.pass()
      .catch((err: Error) => this.ctx?.logger.error({ err }, "node drain pass failed"))
      .finally(() => {
        this.busy = undefined;
        if (this.again) {
          this.again = false;
          this.kick();
        }
      });
  }

  private async pass(): Promise<void> {
    const ctx = this.ctx!;
    this.ended = false;
    const draining = [...this.draining]
      .map((id) => ctx.tables.nodes.get(id))
      .filter((n): n is NodeRow => n !== undefined && n.DrainStrategy !== null);
    const live = new Set(draining.map((n) => n.ID));
    for (const [id, t] of this.deadlines) {
      if (live.has(id)) continue;
      ctx.clock.clearTimeout(t);
      this.deadlines.delete(id);
    }
    const marks: Record<string, { Migrate: boolean }> = {};
    const jobs = new Map<string, JobRow>();
    const done: NodeRow[] = [];
    for (const node of draining) {
      this.armDeadline(node);
      const { migrate, remaining } = this.toMigrate(node, live);
      for (const a of migrate) {
        marks[a.ID] = { Migrate: true };
        const job = ctx.tables.jobs.get(jobKey(a.Namespace, a.JobID));
        if (job) jobs.set(jobKey(job.Namespace, job.ID), job);
      }
      // Only a node that is up has said what it runs: a drain completes there.
      if (remaining === 0 && migrate.length === 0 && node.Status === "ready") done.push(node);
    }
    const drafts: Draft[] = [];
    const now = ctx.clock.now();
    if (Object.keys(marks).length > 0) {
      const data: AllocsDesiredTransitionUpdated = { Allocs: marks };
      drafts.push({ type: "AllocsDesiredTransitionUpdated", v: 1, data });
      const evals: EvaluationSpec[] = [...jobs.values()].map((j) =>
        newEvaluation({
          ID: this.newID(),
          Namespace: j.Namespace,
          Priority: j.Priority,
          Type: j.Type,
          TriggeredBy: "node-drain",
          JobID: j.ID,
          JobModifyIndex: j.JobModifyIndex,
          CreateTime: now * 1e6,
        }),
      );
      if (evals.length > 0) drafts.push({ type: "EvaluationsUpserted", v: 1, data: { Evals: evals } });
    }
    for (const node of done) {
      const data: NodeDrainUpdated = {
        NodeID: node.ID,
        DrainStrategy: null,
        MarkEligible: false,
        Meta: null,
        AccessorID: "",
        NodeEvent: {
          Message: "Node drain complete",
          Subsystem: "Drain",
          Details: null,
          Timestamp: goTime(now),
        },
        Complete: true,
      };
      drafts.push({ type: "NodeDrainUpdated", v: 1, data });
    }
    if (drafts.length > 0) await ctx.write(drafts);
  }

  /**
   * What to mark on `node` now, and how many of its allocations still have
   * to go (marked or not): Nomad's drainer job watcher for the node.
   */
  private toMigrate(
    node: NodeRow,
    draining: ReadonlySet<string>,
  ): { migrate: AllocRow[]; remaining: number } {
    const { tables, clock } = this.ctx!;
    const strategy = node.DrainStrategy!;
    const force =
      strategy.DrainSpec.Deadline < 0 ||
      (strategy.ForceDeadline !== ZERO_TIME && clock.now() >= Date.parse(strategy.ForceDeadline));
    const ignoreSystem = strategy.DrainSpec.IgnoreSystemJobs;
    const onNode = tables.allocs.by("node", node.ID).filter((a) => !isTerminalAlloc(a));
    const migrate: AllocRow[] = [];
    let remaining = 0;
    const jobOf = (a: AllocRow) => tables.jobs.get(jobKey(a.Namespace, a.JobID));
    const nonSystem = onNode.filter((a) => (jobOf(a)?.Type ?? a.Job?.Type) !== "system");
    const groups = new Map<string, AllocRow[]>();
    for (const a of onNode) {
      const job = jobOf(a);
      const type = job?.Type ?? a.Job?.Type ?? "service";
      if (type === "system") {
        if (ignoreSystem) continue;
        remaining++;
        // System allocations go last: once everything else has left.
        if ((force || nonSystem.length === 0) && a.DesiredTransition.Migrate !== true) migrate.push(a);
        continue;
      }
      remaining++;
      if (a.DesiredTransition.Migrate === true) continue;
      if (force) {
        migrate.push(a);
        continue;
      }
      // Batch work is left to finish until the deadline.
      if (type === "batch" || type === "sysbatch") continue;
      const key = `${a.Namespace}\u0000${a.JobID}\u0000${a.TaskGroup}`;
      groups.set(key, [...(groups.get(key) ?? []), a]);
    }
    for (const candidates of groups.values()) {
      const sample = candidates[0]!;
      const job = jobOf(sample);
      const tg = job?.TaskGroups.find((g) => g.Name === sample.TaskGroup);
      if (!job || !tg) {
        migrate.push(...candidates);
        continue;
      }
      const maxParallel = tg.Migrate?.MaxParallel ?? 1;
      // Nomad's handleTaskGroup: healthy allocations of the group anywhere,
      // less those that must stay up (count - max_parallel). One already
      // marked is leaving: it no longer counts, whether or not the scheduler
      // has stopped it yet.
      let healthy = 0;
      for (const a of tables.allocs.by("job", jobKey(job.Namespace, job.ID))) {
        if (a.TaskGroup !== tg.Name || isTerminalAlloc(a) || a.DesiredTransition.Migrate === true) continue;
        if (a.DeploymentStatus?.Healthy !== undefined && a.DeploymentStatus?.Healthy !== null) healthy++;
      }
      const drainable = candidates.filter((a) => draining.has(a.NodeID));
      const n = Math.min(healthy - (tg.Count - maxParallel), drainable.length);
      if (n > 0) migrate.push(...drainable.slice(0, n));
    }
    return { migrate, remaining };
  }

  /** Wakes a pass when the drain's deadline passes. */
  private armDeadline(node: NodeRow): void {
    const ctx = this.ctx!;
    if (this.deadlines.has(node.ID)) return;
    const force = node.DrainStrategy!.ForceDeadline;
    if (force === ZERO_TIME) return;
    const wait = Date.parse(force) - ctx.clock.now();
    if (wait <= 0) return;
    this.deadlines.set(
      node.ID,
      ctx.clock.setTimeout(() => this.kick(), wait + 1),
    );
  }
}
