import { randomUUID } from "node:crypto";
import { filter, type Subscription } from "rxjs";
import type { AllocRow } from "../../projections/allocs.ts";
import { goTime } from "../../projections/go-time.ts";
import type { NodeRow } from "../../projections/nodes.ts";
import {
  ALLOC_LOST,
  ALLOC_UNKNOWN,
  type AllocsDisconnected,
  type AllocsLost,
  disconnectExpired,
  isClientTerminal,
  maxClientDisconnectMs,
} from "../../streams/allocs.ts";
import type { EvaluationsUpserted } from "../../streams/evals.ts";
import type { Cause } from "../../streams/event-schema.ts";
import type { NodeStatus, NodeStatusUpdated } from "../../streams/nodes.ts";
import type { HeartbeatTimers } from "../nodes/heartbeat-timers.ts";
import { nodeUpdateEvals, statusChangeNeedsEvals, systemJobsIn } from "../nodes/node-evals.ts";
import type { Draft } from "../store/writer.ts";
import type { Timer } from "../util/clock.ts";
import type { LeaderService, ServiceContext } from "./service.ts";

interface Armed {
  /** When the node's heartbeat runs out (clock ms). Moved forward by every heartbeat. */
  due: number;
  /** When the clock timer fires; it re-arms for the rest if `due` moved past it. */
  firesAt: number;
  timer: Timer;
}

/** What a missed heartbeat does to a node and its allocations. */
export interface MissedHeartbeat {
  readonly status: NodeStatus;
  /** Allocations that may still run on the node: `unknown` until it comes back or their window ends. */
  readonly unknown: readonly string[];
  /** Allocations the server gives up: `lost`. */
  readonly lost: readonly string[];
}

/**
 * What happens when a node misses its heartbeat, in one place (Nomad's
 * heartbeat.go `invalidateHeartbeat` and `disconnectState`, and the
 * allocation consequences of nomad-core §1.9 that Nomad's scheduler draws):
 *
 * - The node becomes `disconnected` if it runs an allocation whose group has
 *   max_client_disconnect, that is desired `run` and whose window has not run
 *   out; otherwise `down`. An `initializing` node (one that was reconnecting)
 *   goes `down`.
 * - `disconnected`: its running allocations with max_client_disconnect become
 *   `unknown` (with an AllocState `unknown` entry); the others (pending, no
 *   max_client_disconnect, desired stop) and the `unknown` ones whose window
 *   ran out are `lost`.
 * - `down`: every allocation not already terminal on the client is `lost`.
 * - A status change that needs it, and any newly lost allocation, creates
 *   `node-update` evaluations (one per job on the node), in the same append.
 *
 * Nomad counts an allocation as a pending reconnect even when its client
 * reported it complete or failed; here a finished allocation has nothing to
 * reconnect and does not keep the node `disconnected`.
 */
export function missedHeartbeat(
  node: Pick<NodeRow, "Status">,
  allocs: readonly AllocRow[],
  nowMs: number,
): MissedHeartbeat {
  const tolerates = (a: AllocRow) => maxClientDisconnectMs(a) !== undefined;
  const pendingReconnect = allocs.some(
    (a) => tolerates(a) && a.DesiredStatus === "run" && !isClientTerminal(a) && !disconnectExpired(a, nowMs),
  );
  const status: NodeStatus = node.Status !== "initializing" && pendingReconnect ? "disconnected" : "down";
  const unknown: string[] = [];
  const lost: string[] = [];
  for (const a of allocs) {
    if (isClientTerminal(a)) continue;
    if (status === "down") lost.push(a.ID);
    else if (a.ClientStatus === "unknown") {
      if (disconnectExpired(a, nowMs)) lost.push(a.ID);
    } else if (a.ClientStatus === "running" && a.DesiredStatus === "run" && tolerates(a)) unknown.push(a.ID);
    else lost.push(a.ID);
  }
  return { status, unknown, lost };
}

/**
 * The leader's heartbeat timers. A heartbeat only moves a deadline in a Map
 * (no log write, usually no timer churn); when a deadline passes, the node's
 * missed heartbeat is written as events (see `missedHeartbeat`). Timers run
 * on the injectable clock.
 *
 * TTL: max(min_heartbeat_ttl, nodes ÷ max_heartbeats_per_second) plus a
 * random stagger in [0, ttl); the client is told the TTL, the server waits
 * TTL + heartbeat_grace. When leadership starts, every node the log already
 * holds that is not down gets failover_heartbeat_ttl, whether another
 * server led before or this one restarted (Nomad does so after an
 * election): its client needs time to find this server, and a heartbeat
 * this server could not receive is no evidence the node is gone.
 */
export class HeartbeatWatcher implements LeaderService, HeartbeatTimers {
  readonly name = "heartbeat-watcher";
  private ctx: ServiceContext | undefined;
  private readonly armed = new Map<string, Armed>();
  private subscription: Subscription | undefined;
  private readonly inFlight = new Set<Promise<void>>();
  private readonly random: () => number;
  private readonly newID: () => string;

  constructor(options: { random?: () => number; newID?: () => string } = {}) {
    this.random = options.random ?? Math.random;
    this.newID = options.newID ?? randomUUID;
  }

  start(ctx: ServiceContext): void {
    this.ctx = ctx;
    // Nodes the log already holds heartbeated to a previous leader, or to
    // this server before it restarted, never to these timers: however this
    // leadership began, they get the failover TTL to find it.
    for (const n of ctx.tables.nodes.all()) {
      if (n.Status !== "down") this.arm(n.ID, ctx.config.heartbeat.failoverHeartbeatTtl);
    }
    // A purged node has nothing left to miss.
    this.subscription = ctx.store.change$
      .pipe(filter((c) => c.table === "nodes" && c.after === undefined))
      .subscribe((c) => this.clear(c.key));
  }

  async stop(): Promise<void> {
    this.subscription?.unsubscribe();
    this.subscription = undefined;
    const ctx = this.ctx;
    this.ctx = undefined;
    if (ctx) for (const a of this.armed.values()) ctx.clock.clearTimeout(a.timer);
    this.armed.clear();
    await Promise.allSettled([...this.inFlight]);
  }

  get active(): boolean {
    return this.ctx !== undefined;
  }

  /** How many nodes have a running timer. */
  get tracked(): number {
    return this.armed.size;
  }

  reset(nodeID: string): number | undefined {
    const ctx = this.ctx;
    if (!ctx) return undefined;
    const ttl = this.staggered(this.armed.size);
    this.arm(nodeID, ttl + ctx.config.heartbeat.heartbeatGrace);
    return ttl;
  }

  clear(nodeID: string): void {
    const a = this.armed.get(nodeID);
    if (!a) return;
    this.ctx?.clock.clearTimeout(a.timer);
    this.armed.delete(nodeID);
  }

  /** Nomad's RateScaledInterval plus RandomStagger. */
  private staggered(nodes: number): number {
    const { minHeartbeatTtl, maxHeartbeatsPerSecond } = this.ctx!.config.heartbeat;
    let ttl = minHeartbeatTtl;
    if (maxHeartbeatsPerSecond > 1 / 86_400)
      ttl = Math.max(minHeartbeatTtl, (nodes / maxHeartbeatsPerSecond) * 1000);
    return ttl + Math.floor(this.random() * ttl);
  }

  private arm(nodeID: string, ms: number): void {
    const clock = this.ctx!.clock;
    const due = clock.now() + ms;
    const a = this.armed.get(nodeID);
    if (a && a.firesAt <= due) {
      a.due = due;
      return;
    }
    if (a) clock.clearTimeout(a.timer);
    this.armed.set(nodeID, { due, firesAt: due, timer: clock.setTimeout(() => this.fire(nodeID), ms) });
  }

  private fire(nodeID: string): void {
    const ctx = this.ctx;
    const a = this.armed.get(nodeID);
    if (!ctx || !a) return;
    const now = ctx.clock.now();
    if (now < a.due) {
      a.firesAt = a.due;
      a.timer = ctx.clock.setTimeout(() => this.fire(nodeID), a.due - now);
      return;
    }
    this.armed.delete(nodeID);
    const done = this.expire(ctx, nodeID).catch((err: Error) =>
      ctx.logger.error({ err, node: nodeID }, "writing a missed heartbeat failed"),
    );
    this.inFlight.add(done);
    void done.finally(() => this.inFlight.delete(done));
  }

  private async expire(ctx: ServiceContext, nodeID: string): Promise<void> {
    const node = ctx.tables.nodes.get(nodeID);
    if (!node || node.Status === "down") return;
    const now = ctx.clock.now();
    const allocs = ctx.tables.allocs.by("node", nodeID);
    const missed = missedHeartbeat(node, allocs, now);
    const changed = missed.status !== node.Status;

    // What follows is because the node went down or disconnected. When its
    // status changes now, that record is in this same run and its index is
    // not known before the append; otherwise (a disconnected node whose
    // allocations' windows ran out) the record that made it unresponsive is.
    const cause: Cause =
      changed || node.LastMissedHeartbeatIndex === 0
        ? { type: "NodeStatusUpdated", nodeId: nodeID }
        : { type: "NodeStatusUpdated", nodeId: nodeID, index: node.LastMissedHeartbeatIndex };
    const drafts: Draft[] = [];
    if (changed) {
      const data: NodeStatusUpdated = {
        NodeID: nodeID,
        Status: missed.status,
        PreviousStatus: node.Status,
        Cause: "heartbeat-missed",
        NodeEvent: {
          Message: "Node heartbeat missed",
          Subsystem: "Cluster",
          Details: null,
          Timestamp: goTime(now),
        },
      };
      drafts.push({ type: "NodeStatusUpdated", v: 1, data });
    }
    if (missed.unknown.length > 0) {
      const data: AllocsDisconnected = {
        NodeID: nodeID,
        AllocIDs: missed.unknown,
        ClientDescription: ALLOC_UNKNOWN,
      };
      drafts.push({ type: "AllocsDisconnected", v: 1, data, cause });
    }
    if (missed.lost.length > 0) {
      const data: AllocsLost = { NodeID: nodeID, AllocIDs: missed.lost, DesiredDescription: ALLOC_LOST };
      drafts.push({ type: "AllocsLost", v: 1, data, cause });
    }
    if ((changed && statusChangeNeedsEvals(missed.status, node.Status)) || missed.lost.length > 0) {
      const evals = nodeUpdateEvals(
        nodeID,
        node.ModifyIndex,
        allocs,
        now,
        this.newID,
        systemJobsIn(ctx.tables.jobs, node.Datacenter, node.NodePool),
      );
      if (evals.length > 0) {
        const data: EvaluationsUpserted = { Evals: evals };
        drafts.push({ type: "EvaluationsUpserted", v: 1, data, cause });
      }
    }

    if (drafts.length > 0) {
      const { outcomes } = await ctx.write(drafts);
      const refused = outcomes.find((o) => o.status === "rejected");
      if (refused?.status === "rejected") {
        ctx.logger.info(
          { node: nodeID, reason: refused.reason },
          "missed heartbeat not applied: the node changed",
        );
      } else {
        ctx.logger.warn(
          { node: nodeID, status: missed.status, lost: missed.lost.length },
          "node missed its heartbeat",
        );
      }
    }
    // A disconnected node keeps being checked every TTL until it comes back
    // or nothing on it can reconnect any more; then it goes down.
    if (this.ctx !== ctx || this.armed.has(nodeID)) return;
    const after = ctx.tables.nodes.get(nodeID);
    if (after && after.Status !== "down") this.reset(nodeID);
  }
}
