import type { Projection } from "../src/store/projection.ts";
import { byCreateIndexThenId, Table } from "../src/store/table.ts";
import {
  type AllocationSpec,
  type AllocEvent,
  type ClientAllocUpdate,
  type DesiredTransition,
  isClientTerminal,
  isServerTerminal,
  needsToReconnect,
} from "../streams/allocs.ts";
import { DEPLOYMENT_WRITES, type DeploymentEvent } from "../streams/deployments.ts";
import { isUnresponsive } from "../streams/nodes.ts";
import { copyAllocRow } from "./alloc-row.ts";
import { NODE_USAGE, nodeUsageSum } from "./allocs-node-usage.ts";
import { writtenVolumeKeys } from "./csi-volume-writers.ts";
import { applyDeploymentWriteToAllocs } from "./deployment-writes.ts";
import { jobKey } from "./evals.ts";
import type { JobRow } from "./jobs.ts";
import type { NodeRow } from "./nodes.ts";
import { applyPlan, type PlanRefusalRow, type PlanTables, withState } from "./plan-apply.ts";
import { shareEqual } from "./shared-values.ts";

/** Nomad's Allocation as the API shows it. */
export type AllocRow = AllocationSpec & {
  readonly CreateIndex: number;
  readonly ModifyIndex: number;
  /** Bumped by server-side changes only: clients pull what the servers changed by it. */
  readonly AllocModifyIndex: number;
};

/**
 * Allocations: written by plan results (placements, in-place updates, stops,
 * preemptions), by clients (their own status), and by the heartbeat path
 * (disconnect, reconnect, lost). Reads the nodes table to re-check at apply
 * that the node is still in a state that allows the change, and the job
 * versions table to complete the scheduler's compact placements.
 */
export function allocsProjection(nodes: Table<NodeRow>, jobVersions?: Table<JobRow>) {
  const allocs = new Table<AllocRow>({
    name: "allocs",
    key: (a) => a.ID,
    indexes: {
      node: (a) => a.NodeID,
      job: (a) => jobKey(a.Namespace, a.JobID),
      eval: (a) => a.EvalID || undefined,
      namespace: (a) => a.Namespace,
      deployment: (a) => a.DeploymentID || undefined,
      // Nomad's conditional signing_key index: the allocations that may still
      // present an identity signed by a key. Only those done on both sides
      // (the server stopped them and the client finished) leave it, so a key
      // is not collected while a poststop task can still use its identity.
      signing_key: (a) =>
        a.SigningKeyID && !(isServerTerminal(a) && isClientTerminal(a)) ? a.SigningKeyID : undefined,
      // The CSI volumes live allocations ask to write (projections/csi-volume-writers.ts).
      csi_write: writtenVolumeKeys,
    },
    // What each index above reads: a client's update changes none of them
    // but its status (see TableSpec.indexedFields).
    indexedFields: {
      node: ["NodeID"],
      job: ["Namespace", "JobID"],
      eval: ["EvalID"],
      namespace: ["Namespace"],
      deployment: ["DeploymentID"],
      signing_key: ["SigningKeyID", "DesiredStatus", "ClientStatus"],
      csi_write: ["Job", "TaskGroup", "Namespace", "Name", "DesiredStatus", "ClientStatus"],
    },
    order: byCreateIndexThenId,
    sums: { [NODE_USAGE]: nodeUsageSum },
  });
  const refusals = new Table<PlanRefusalRow>({
    name: "plan_refusals",
    key: (r) => r.ID,
    indexes: { eval: (r) => r.EvalID || undefined },
  });

  const reads = jobVersions ? ["nodes", "jobs"] : ["nodes"];
  let csiVolumes: PlanTables["csiVolumes"];
  const projection: Projection = {
    name: "allocs",
    // 3: placed allocations carry the legacy Resources total.
    // 4: compact placements and in-place updates take the record's SigningKeyID.
    // 5: a placement that would write a single-writer CSI volume another job writes is refused.
    version: 5,
    tables: [allocs, refusals],
    reads,
    handles: new Set([
      "AllocsPlanApplied",
      "AllocClientUpdated",
      "AllocsDisconnected",
      "AllocsReconnected",
      "AllocsLost",
      "AllocsDesiredTransitionUpdated",
      ...DEPLOYMENT_WRITES,
    ]),
    evolve(ctx, event) {
      if (DEPLOYMENT_WRITES.has(event.type))
        return applyDeploymentWriteToAllocs(ctx, allocs, event as DeploymentEvent);
      const e = event as AllocEvent;
      switch (e.type) {
        case "AllocsPlanApplied":
          return applyPlan(ctx, { allocs, nodes, refusals, versions: jobVersions, csiVolumes }, e.data, e.at);
        case "AllocClientUpdated":
          // The nodes projection applies first and refuses the record if a
          // reporting node is no longer allowed to update.
          if (ctx.rejected) return;
          for (const update of e.data.Allocs) {
            const stored = allocs.get(update.ID);
            // Nomad ignores updates of allocations it no longer has; a node
            // may only report its own allocations.
            if (!stored || stored.NodeID !== update.NodeID) continue;
            ctx.put(allocs, fromClient(stored, update, ctx.index));
          }
          return;
        case "AllocsDisconnected": {
          const node = nodes.get(e.data.NodeID);
          if (node?.Status !== "disconnected") {
            ctx.reject(409, `node ${e.data.NodeID} is ${node?.Status ?? "gone"}, not disconnected`);
            return;
          }
          for (const id of e.data.AllocIDs) {
            const a = allocs.get(id);
            if (!a || a.NodeID !== e.data.NodeID || isClientTerminal(a) || a.ClientStatus === "unknown")
              continue;
            const row = copyAllocRow(a);
            row.ClientStatus = "unknown";
            row.ClientDescription = e.data.ClientDescription;
            row.AllocStates = withState(a.AllocStates, "unknown", e.at);
            row.ModifyTime = e.at * 1e6;
            row.ModifyIndex = ctx.index;
            row.AllocModifyIndex = ctx.index;
            ctx.put(allocs, row);
          }
          return;
        }
        case "AllocsReconnected": {
          const node = nodes.get(e.data.NodeID);
          if (!node || isUnresponsive(node.Status)) {
            ctx.reject(
              409,
              `node ${e.data.NodeID} is ${node?.Status ?? "gone"}: allocations cannot reconnect`,
            );
            return;
          }
          for (const id of e.data.AllocIDs) {
            const a = allocs.get(id);
            // Exactly one reconnect entry per disconnect, whatever the order
            // and the number of updates that report the allocation back.
            if (!a || a.NodeID !== e.data.NodeID || a.ClientStatus === "unknown" || !needsToReconnect(a))
              continue;
            const row = copyAllocRow(a);
            row.AllocStates = withState(a.AllocStates, a.ClientStatus, e.at);
            row.ModifyTime = e.at * 1e6;
            row.ModifyIndex = ctx.index;
            row.AllocModifyIndex = ctx.index;
            ctx.put(allocs, row);
          }
          return;
        }
        case "AllocsLost": {
          const node = nodes.get(e.data.NodeID);
          if (node && !isUnresponsive(node.Status)) {
            ctx.reject(409, `node ${e.data.NodeID} is ${node.Status}: its allocations are not lost`);
            return;
          }
          for (const id of e.data.AllocIDs) {
            const a = allocs.get(id);
            if (!a || a.NodeID !== e.data.NodeID || isClientTerminal(a)) continue;
            const row = copyAllocRow(a);
            row.DesiredStatus = "stop";
            row.DesiredDescription = e.data.DesiredDescription;
            row.ClientStatus = "lost";
            // Nomad drops this entry when it normalizes the plan; it is kept
            // here so the history and WaitClientStop see when it was lost.
            row.AllocStates = withState(a.AllocStates, "lost", e.at);
            row.ModifyTime = e.at * 1e6;
            row.ModifyIndex = ctx.index;
            row.AllocModifyIndex = ctx.index;
            ctx.put(allocs, row);
          }
          return;
        }
        case "AllocsDesiredTransitionUpdated": {
          for (const [id, transition] of Object.entries(e.data.Allocs)) {
            const a = allocs.get(id);
            if (!a) continue;
            const row = copyAllocRow(a);
            row.DesiredTransition = mergeTransition(a.DesiredTransition, transition);
            row.ModifyIndex = ctx.index;
            row.AllocModifyIndex = ctx.index;
            ctx.put(allocs, row);
          }
          ctx.touch(allocs);
          return;
        }
      }
    },
  };

  /** The CSI volumes table, once created (it reads this one): the second check of a plan's volume writers. */
  const bindCsiVolumes = (volumes: NonNullable<PlanTables["csiVolumes"]>) => {
    csiVolumes = volumes;
    reads.push("csi_volumes");
  };
  return { projection, allocs, refusals, bindCsiVolumes };
}

/** Nomad's nestedUpdateAllocFromClient: only what the client is the authority on. */
function fromClient(stored: AllocRow, update: ClientAllocUpdate, index: number): AllocRow {
  let deployment = stored.DeploymentStatus;
  const reported = update.DeploymentStatus;
  if (deployment && reported) {
    // The client may only set its health (and when it decided it).
    const hadHealth = deployment.Healthy !== null;
    if (reported.Healthy !== null && (!hadHealth || deployment.Healthy !== reported.Healthy)) {
      deployment = {
        ...deployment,
        Healthy: reported.Healthy,
        Timestamp: reported.Timestamp,
        ModifyIndex: index,
      };
    }
  } else if (reported) {
    deployment = { ...reported, ModifyIndex: index };
  }
  const row = copyAllocRow(stored);
  row.ClientStatus = update.ClientStatus;
  row.ClientDescription = shareEqual(stored.ClientDescription, update.ClientDescription);
  // What the client repeats of the stored row is kept from it (see shareEqual).
  row.TaskStates = shareEqual(stored.TaskStates, update.TaskStates);
  row.NetworkStatus = shareEqual(stored.NetworkStatus, update.NetworkStatus);
  row.DeploymentStatus = deployment;
  row.ModifyTime = update.ModifyTime;
  row.ModifyIndex = index;
  return row;
}

/** Nomad's DesiredTransition.Merge: set fields override, unset ones keep the stored value. */
function mergeTransition(stored: DesiredTransition, update: DesiredTransition): DesiredTransition {
  const out: Record<string, boolean | null | undefined> = { ...stored };
  for (const [k, v] of Object.entries(update)) if (v !== null && v !== undefined) out[k] = v;
  return out;
}
