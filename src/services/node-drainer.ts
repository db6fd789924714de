import { randomUUID } from "node:crypto";
import { filter, type Subscription } from "rxjs";
import type { AllocRow } from "../../projections/allocs.ts";
import { jobKey } from "../../projections/evals.ts";
import { goTime } from "../../projections/go-time.ts";
import { type HistoryEntry, historyKey } from "../../projections/history.ts";
import type { NodeRow } from "../../projections/nodes.ts";
import { type AllocsDesiredTransitionUpdated, isTerminalAlloc } from "../../streams/allocs.ts";
import { type EvaluationSpec, newEvaluation, ZERO_TIME } from "../../streams/evals.ts";
import type { Cause } from "../../streams/event-schema.ts";
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
 *
 * Every mark and evaluation names the drain it serves (`cause`: the record
 * that started the node's drain), one node per record, so an allocation's
 * history leads to the drain, and from there to who asked for it.
 */
export class NodeDrainer implements LeaderService {
  readonly name = "node-drainer";
  private ctx: ServiceContext | undefined;
  private readonly subscriptions: Subscription[] = [];
  /** Nodes with a drain strategy, followed from the node changes. */
  private readonly draining = new Set<string>();
  /** The log index of the record that started each node's drain, as far as known (see drainCause). */
  private readonly drainStarts = new Map<string, number>();
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
    this.drainStarts.clear();
    for (const n of ctx.tables.nodes.all()) if (n.DrainStrategy !== null) this.draining.add(n.ID);
    this.subscriptions.push(
      ctx.store.change$.pipe(filter((c) => c.table === "nodes")).subscribe({
        next: (c) => {
          const after = c.after as NodeRow | undefined;
          if (after?.DrainStrategy) {
            this.draining.add(c.key);
            if (!(c.before as NodeRow | undefined)?.DrainStrategy) this.drainStarts.set(c.key, c.index);
          } else {
            this.drainStarts.delete(c.key);
            if (this.draining.delete(c.key)) this.ended = true;
          }
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
    // One record per node, so each names one drain as its cause; the marks
    // first, then the evaluations, so the scheduler sees every mark of the
    // pass. One evaluation per job, as Nomad's drainer makes for a batch: it
    // names the drain of the first node whose allocations of the job move.
    const drafts: Draft[] = [];
    const evalDrafts: Draft[] = [];
    const evaluated = new Set<string>();
    const done: NodeRow[] = [];
    const now = ctx.clock.now();
    for (const node of draining) {
      this.armDeadline(node);
      const { migrate, remaining } = this.toMigrate(node, live);
      // Only a node that is up has said what it runs: a drain completes there.
      if (remaining === 0 && migrate.length === 0 && node.Status === "ready") done.push(node);
      if (migrate.length === 0) continue;
      const marks: Record<string, { Migrate: boolean }> = {};
      const evals: EvaluationSpec[] = [];
      for (const a of migrate) {
        marks[a.ID] = { Migrate: true };
        const key = jobKey(a.Namespace, a.JobID);
        const job = ctx.tables.jobs.get(key);
        if (!job || evaluated.has(key)) continue;
        evaluated.add(key);
        evals.push(
          newEvaluation({
            ID: this.newID(),
            Namespace: job.Namespace,
            Priority: job.Priority,
            Type: job.Type,
            TriggeredBy: "node-drain",
            JobID: job.ID,
            JobModifyIndex: job.JobModifyIndex,
            CreateTime: now * 1e6,
          }),
        );
      }
      const cause = this.drainCause(node.ID);
      const data: AllocsDesiredTransitionUpdated = { Allocs: marks };
      drafts.push({ type: "AllocsDesiredTransitionUpdated", v: 1, data, cause });
      if (evals.length > 0)
        evalDrafts.push({ type: "EvaluationsUpserted", v: 1, data: { Evals: evals }, cause });
    }
    drafts.push(...evalDrafts);
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
      drafts.push({ type: "NodeDrainUpdated", v: 1, data, cause: this.drainCause(node.ID) });
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

  /**
   * The drain `nodeID` is under, as a cause: the record that started it.
   * Its index comes from the node change this drainer observed when the
   * drain began (no table read per pass); a drain that began before this
   * leadership (a restart, a failover) is found once in the node's history
   * row (the index of its `DrainStrategy` entry from null to a strategy, the
   * audit trail the link points into). Never the clock: the drain's StartedAt is a time,
   * not a record.
   */
  private drainCause(nodeID: string): Cause {
    let index = this.drainStarts.get(nodeID);
    if (index === undefined) {
      index = this.ctx!.tables.history.get(historyKey("node", nodeID))?.DrainStart ?? undefined;
      if (index !== undefined) this.drainStarts.set(nodeID, index);
    }
    return index === undefined
      ? { type: "NodeDrainUpdated", nodeId: nodeID }
      : { type: "NodeDrainUpdated", nodeId: nodeID, index };
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

/** The index of the record that started the latest drain in a node's history, if it holds one. */
export function drainStartIn(entries: readonly HistoryEntry[]): number | undefined {
  for (let i = entries.length - 1; i >= 0; i--) {
    const e = entries[i]!;
    if (e.Field !== "DrainStrategy") continue;
    if (e.To === null) return undefined;
    // An update of the strategy: the drain began further back.
    if (e.From === null) return e.Index;
  }
  return undefined;
}
