import type { ApplyContext, Projection } from "../src/store/projection.ts";
import { Table } from "../src/store/table.ts";
import type { AllocEvent } from "../streams/allocs.ts";
import type { Envelope } from "../streams/event-schema.ts";
import {
  type DrainMetadata,
  type DrainStrategy,
  isUnresponsive,
  type NodeEventSpec,
  type NodeSpec,
  type NodeStatus,
  type NodeStreamEvent,
  type SchedulingEligibility,
} from "../streams/nodes.ts";
import { goTime } from "./go-time.ts";
import { copyNodeRow, nodeRowFromSpec } from "./node-row.ts";

export interface NodeEvent extends NodeEventSpec {
  readonly CreateIndex: number;
}

/**
 * Nomad's Node as the API shows it, without its SecretID (that lives, hashed,
 * in the node_secrets table, so no view of this row can leak it).
 */
export interface NodeRow extends Omit<NodeSpec, "Status" | "SchedulingEligibility"> {
  readonly Status: NodeStatus;
  readonly SchedulingEligibility: SchedulingEligibility;
  /** Unix seconds. */
  readonly StatusUpdatedAt: number;
  readonly Events: readonly NodeEvent[];
  readonly DrainStrategy: DrainStrategy | null;
  readonly LastDrain: DrainMetadata | null;
  /** Index of the record that made the node unresponsive; 0 once it is ready again. */
  readonly LastMissedHeartbeatIndex: number;
  /** Index of the last client alloc update from this node. */
  readonly LastAllocUpdateIndex: number;
  readonly CreateIndex: number;
  readonly ModifyIndex: number;
}

export interface NodeSecretRow {
  readonly ID: string;
  readonly SecretIDHash: string;
  readonly CreateIndex: number;
  readonly ModifyIndex: number;
}

/** Nomad's MaxRetainedNodeEvents: older events are pruned as new ones arrive. */
export const MAX_RETAINED_NODE_EVENTS = 10;

export function nodesProjection() {
  const nodes = new Table<NodeRow>({
    name: "nodes",
    key: (n) => n.ID,
    indexes: {
      status: (n) => n.Status,
      class: (n) => n.ComputedClass || undefined,
      datacenter: (n) => n.Datacenter,
      pool: (n) => n.NodePool,
    },
  });
  const secrets = new Table<NodeSecretRow>({
    name: "node_secrets",
    key: (s) => s.ID,
    indexes: { hash: (s) => s.SecretIDHash },
  });

  const projection: Projection = {
    name: "nodes",
    // 2: rows carry NodePool.
    version: 2,
    tables: [nodes, secrets],
    handles: new Set([
      "NodeRegistered",
      "NodeStatusUpdated",
      "NodeDrainUpdated",
      "NodeEligibilityUpdated",
      "NodeDeregistered",
      "NodeEventsAppended",
      // Only to stamp LastAllocUpdateIndex; the allocations projection applies the updates.
      "AllocClientUpdated",
    ]),
    evolve(ctx, event) {
      const e = event as NodeStreamEvent | AllocEvent;
      switch (e.type) {
        case "NodeRegistered":
          return register(ctx, e);
        case "NodeStatusUpdated": {
          const d = e.data;
          const node = nodes.get(d.NodeID);
          if (!node) {
            ctx.reject(404, "node not found");
            return;
          }
          if (node.Status !== d.PreviousStatus) {
            ctx.reject(
              409,
              `node ${d.NodeID} is ${node.Status}, not ${d.PreviousStatus}: status change to ${d.Status} not applied`,
            );
            return;
          }
          let lastMissed = node.LastMissedHeartbeatIndex;
          if (!isUnresponsive(node.Status) && isUnresponsive(d.Status)) lastMissed = ctx.index;
          else if (node.Status !== "ready" && d.Status === "ready") lastMissed = 0;
          const row = copyNodeRow(node);
          row.Status = d.Status;
          row.StatusUpdatedAt = seconds(e.at);
          row.Events = withEvents(node.Events, d.NodeEvent ? [d.NodeEvent] : [], ctx.index);
          row.LastMissedHeartbeatIndex = lastMissed;
          row.ModifyIndex = ctx.index;
          ctx.put(nodes, row);
          return;
        }
        case "NodeDrainUpdated": {
          const d = e.data;
          const node = nodes.get(d.NodeID);
          if (!node) {
            ctx.reject(404, "node not found");
            return;
          }
          if (d.Complete && node.DrainStrategy === null) {
            ctx.reject(409, `node ${d.NodeID} is not draining: its drain cannot complete`);
            return;
          }
          ctx.put(
            nodes,
            drained(
              node,
              d.DrainStrategy,
              d.MarkEligible,
              d.Meta,
              d.AccessorID,
              e.at,
              ctx.index,
              d.NodeEvent,
              d.Complete === true,
            ),
          );
          return;
        }
        case "NodeEligibilityUpdated": {
          const d = e.data;
          const node = nodes.get(d.NodeID);
          if (!node) {
            ctx.reject(404, "node not found");
            return;
          }
          if (node.DrainStrategy !== null && d.Eligibility === "eligible") {
            ctx.reject(400, "can not set node's scheduling eligibility to eligible while it is draining");
            return;
          }
          const row = copyNodeRow(node);
          row.SchedulingEligibility = d.Eligibility;
          row.StatusUpdatedAt = seconds(e.at);
          row.Events = withEvents(node.Events, d.NodeEvent ? [d.NodeEvent] : [], ctx.index);
          row.ModifyIndex = ctx.index;
          ctx.put(nodes, row);
          return;
        }
        case "NodeDeregistered": {
          const missing = e.data.NodeIDs.find((id) => !nodes.has(id));
          if (missing !== undefined) {
            ctx.reject(404, `node not found: ${missing}`);
            return;
          }
          for (const id of e.data.NodeIDs) {
            ctx.delete(nodes, id);
            ctx.delete(secrets, id);
          }
          return;
        }
        case "NodeEventsAppended": {
          const ids = Object.keys(e.data.Events);
          const missing = ids.find((id) => !nodes.has(id));
          if (missing !== undefined) {
            ctx.reject(404, `node not found: ${missing}`);
            return;
          }
          for (const id of ids) {
            const node = nodes.get(id)!;
            const row = copyNodeRow(node);
            row.Events = withEvents(node.Events, e.data.Events[id] ?? [], ctx.index);
            row.ModifyIndex = ctx.index;
            ctx.put(nodes, row);
          }
          return;
        }
        case "AllocClientUpdated": {
          // Validate twice: the node may have gone down or disconnected
          // since its update was accepted; then the whole window is refused
          // and the batcher retries the other nodes' updates.
          const ids = [...new Set(e.data.Allocs.map((a) => a.NodeID))];
          for (const id of ids) {
            const node = nodes.get(id);
            if (!node) {
              ctx.reject(404, `node ${id} not found`);
              return;
            }
            if (isUnresponsive(node.Status)) {
              ctx.reject(409, notAllowedToUpdateAllocs(id, node.Status));
              return;
            }
          }
          // Nomad leaves the node's ModifyIndex alone here: only the table moves.
          for (const id of ids) {
            const row = copyNodeRow(nodes.get(id)!);
            row.LastAllocUpdateIndex = ctx.index;
            ctx.put(nodes, row);
          }
          return;
        }
      }
    },
  };

  function register(
    ctx: ApplyContext,
    e: Envelope<"NodeRegistered", { Node: NodeSpec; SecretIDHash: string }>,
  ) {
    const spec = e.data.Node;
    if (spec.NodePool === "all") {
      ctx.reject(400, 'node is not allowed to register in node pool "all"');
      return;
    }
    const existing = nodes.get(spec.ID);
    const secret = secrets.get(spec.ID);
    if (existing && secret && secret.SecretIDHash !== e.data.SecretIDHash) {
      ctx.reject(403, "node secret ID does not match. Not registering node.");
      return;
    }
    const updatedAt = seconds(e.at);
    if (existing) {
      // Nomad PR 15808: registering never changes a known node's status, and
      // the server-owned fields survive a re-registration.
      ctx.put(
        nodes,
        nodeRowFromSpec(spec, {
          Status: existing.Status,
          SchedulingEligibility: existing.SchedulingEligibility,
          StatusUpdatedAt: updatedAt,
          Events: existing.Events,
          DrainStrategy: existing.DrainStrategy,
          LastDrain: existing.LastDrain,
          LastMissedHeartbeatIndex: existing.LastMissedHeartbeatIndex,
          LastAllocUpdateIndex: existing.LastAllocUpdateIndex,
          CreateIndex: existing.CreateIndex,
          ModifyIndex: ctx.index,
        }),
      );
    } else {
      ctx.put(
        nodes,
        nodeRowFromSpec(spec, {
          Status: spec.Status,
          SchedulingEligibility: spec.SchedulingEligibility,
          StatusUpdatedAt: updatedAt,
          Events: [
            {
              Message: "Node registered",
              Subsystem: "Cluster",
              Details: null,
              Timestamp: goTime(updatedAt * 1000),
              CreateIndex: ctx.index,
            },
          ],
          DrainStrategy: null,
          LastDrain: null,
          LastMissedHeartbeatIndex: 0,
          LastAllocUpdateIndex: 0,
          CreateIndex: ctx.index,
          ModifyIndex: ctx.index,
        }),
      );
    }
    if (!secret) {
      ctx.put(secrets, {
        ID: spec.ID,
        SecretIDHash: e.data.SecretIDHash,
        CreateIndex: ctx.index,
        ModifyIndex: ctx.index,
      });
    }
  }

  return { projection, nodes, secrets };
}

export function notAllowedToUpdateAllocs(nodeID: string, status: NodeStatus): string {
  return `node ${nodeID} is not allowed to update allocs while in status ${status}`;
}

function seconds(ms: number): number {
  return Math.floor(ms / 1000);
}

function withEvents(
  events: readonly NodeEvent[],
  added: readonly NodeEventSpec[],
  index: number,
): NodeEvent[] {
  const all = [...events, ...added.map((ev) => ({ ...ev, CreateIndex: index }))];
  return all.length > MAX_RETAINED_NODE_EVENTS ? all.slice(all.length - MAX_RETAINED_NODE_EVENTS) : all;
}

/** Nomad's updateNodeDrainImpl, including the LastDrain bookkeeping. */
function drained(
  node: NodeRow,
  drain: DrainStrategy | null,
  markEligible: boolean,
  meta: Readonly<Record<string, string>> | null,
  accessorID: string,
  at: number,
  index: number,
  event: NodeEventSpec | null,
  complete = false,
): NodeRow {
  let eligibility = node.SchedulingEligibility;
  if (drain !== null) eligibility = "ineligible";
  else if (markEligible) eligibility = "eligible";

  let lastDrain = node.LastDrain;
  if (node.DrainStrategy !== null || drain !== null) {
    const updated = goTime(seconds(at) * 1000);
    const base: DrainMetadata =
      node.DrainStrategy === null && drain !== null
        ? { StartedAt: updated, UpdatedAt: updated, Status: "draining", AccessorID: "", Meta: meta }
        : (lastDrain ?? {
            StartedAt: node.DrainStrategy?.StartedAt ?? updated,
            UpdatedAt: updated,
            Status: "draining",
            AccessorID: "",
            Meta: meta,
          });
    lastDrain = {
      ...base,
      UpdatedAt: updated,
      Meta: meta && Object.keys(meta).length > 0 ? meta : base.Meta,
      AccessorID: accessorID || base.AccessorID,
      Status: drain !== null ? "draining" : complete ? "complete" : "canceled",
    };
  }
  const row = copyNodeRow(node);
  row.DrainStrategy = drain;
  row.SchedulingEligibility = eligibility;
  row.LastDrain = lastDrain;
  row.StatusUpdatedAt = seconds(at);
  row.Events = withEvents(node.Events, event ? [event] : [], index);
  row.ModifyIndex = index;
  return row;
}
