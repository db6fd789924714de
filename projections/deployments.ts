import type { ApplyContext, Change, Projection } from "../src/store/projection.ts";
import { byCreateIndexThenId, stamped, Table } from "../src/store/table.ts";
import type { AllocsPlanApplied } from "../streams/allocs.ts";
import {
  DEPLOYMENT_FAILED_ALLOCATIONS,
  type DeploymentSpec,
  type DeploymentState,
  isDeploymentActive,
} from "../streams/deployments.ts";
import type { Envelope } from "../streams/event-schema.ts";
import type { AllocRow } from "./allocs.ts";
import { jobKey } from "./evals.ts";

export type DeploymentRow = DeploymentSpec & { readonly CreateIndex: number; readonly ModifyIndex: number };

/**
 * Deployments: created and moved by plan results, counted (placed, healthy,
 * unhealthy) from the allocation changes they own, as Nomad's state store
 * does in the same transaction. A deployment whose allocation turns
 * unhealthy fails at once (Nomad's deployment watcher decides the same,
 * from the same change).
 */
export function deploymentsProjection(allocs: Table<AllocRow>) {
  const deployments = new Table<DeploymentRow>({
    name: "deployments",
    key: (d) => d.ID,
    indexes: { job: (d) => jobKey(d.Namespace, d.JobID), namespace: (d) => d.Namespace },
    order: byCreateIndexThenId,
  });

  const plan = (ctx: ApplyContext, event: Envelope, data: AllocsPlanApplied) => {
    // The allocations projection may have refused the record.
    if (ctx.rejected) return;
    const nowNs = event.at * 1e6;
    const created = data.Deployment;
    if (created && !deployments.has(created.ID)) ctx.put(deployments, stamped(created, ctx.index, ctx.index));
    for (const u of data.DeploymentUpdates ?? []) {
      const d = deployments.get(u.DeploymentID);
      if (!d || !isDeploymentActive(d.Status)) continue;
      ctx.put(deployments, {
        ...d,
        Status: u.Status,
        StatusDescription: u.StatusDescription,
        ModifyTime: nowNs,
        ModifyIndex: ctx.index,
      });
    }
    // Placements that applied join their deployment.
    const placed = new Map<string, { tg: string; canary: boolean; id: string }[]>();
    const consider = (id: string, canary: boolean) => {
      const a = allocs.get(id);
      if (!a || a.CreateIndex !== ctx.index || a.DeploymentID === "") return;
      const list = placed.get(a.DeploymentID) ?? [];
      list.push({ tg: a.TaskGroup, canary, id });
      placed.set(a.DeploymentID, list);
    };
    for (const p of data.Placements ?? []) consider(p.ID, p.Canary === true);
    for (const a of data.Placed) consider(a.ID, a.DeploymentStatus?.Canary === true);
    for (const [id, list] of placed) {
      const d = deployments.get(id);
      if (!d) continue;
      const groups: Record<string, DeploymentState> = { ...d.TaskGroups };
      for (const { tg, canary, id: allocID } of list) {
        const state = groups[tg];
        if (!state) continue;
        groups[tg] = {
          ...state,
          PlacedAllocs: state.PlacedAllocs + 1,
          PlacedCanaries: canary ? [...(state.PlacedCanaries ?? []), allocID] : state.PlacedCanaries,
        };
      }
      ctx.put(deployments, { ...d, TaskGroups: groups, ModifyTime: nowNs, ModifyIndex: ctx.index });
    }
  };

  /** An allocation's health, reported by its client, counts toward its deployment. */
  const observe = (ctx: ApplyContext, change: Change) => {
    const before = change.before as AllocRow | undefined;
    const after = change.after as AllocRow | undefined;
    if (!before || !after || after.DeploymentID === "") return;
    const was =
      before.DeploymentID === after.DeploymentID ? (before.DeploymentStatus?.Healthy ?? null) : null;
    const now = after.DeploymentStatus?.Healthy ?? null;
    if (was === now || now === null) return;
    const d = deployments.get(after.DeploymentID);
    const state = d?.TaskGroups[after.TaskGroup];
    if (!d || !state) return;
    const next: DeploymentState = {
      ...state,
      HealthyAllocs: Math.max(0, state.HealthyAllocs + (now ? 1 : 0) - (was === true ? 1 : 0)),
      UnhealthyAllocs: Math.max(0, state.UnhealthyAllocs + (now ? 0 : 1) - (was === false ? 1 : 0)),
    };
    const fails = !now && d.Status === "running";
    ctx.put(deployments, {
      ...d,
      TaskGroups: { ...d.TaskGroups, [after.TaskGroup]: next },
      Status: fails ? "failed" : d.Status,
      StatusDescription: fails ? DEPLOYMENT_FAILED_ALLOCATIONS : d.StatusDescription,
      ModifyTime: change.at * 1e6,
      ModifyIndex: ctx.index,
    });
  };

  const projection: Projection = {
    name: "deployments",
    version: 1,
    tables: [deployments],
    reads: ["allocs"],
    handles: new Set(["AllocsPlanApplied"]),
    observes: new Set(["allocs"]),
    evolve(ctx, event) {
      plan(ctx, event, (event as Envelope<"AllocsPlanApplied", AllocsPlanApplied>).data);
    },
    observe,
  };
  return { projection, deployments };
}

/** The job's most recent deployment (Nomad's LatestDeploymentByJobID: highest CreateIndex). */
export function latestDeployment(
  deployments: Table<DeploymentRow>,
  namespace: string,
  jobID: string,
): DeploymentRow | undefined {
  let latest: DeploymentRow | undefined;
  for (const d of deployments.by("job", jobKey(namespace, jobID))) {
    if (!latest || d.CreateIndex > latest.CreateIndex) latest = d;
  }
  return latest;
}
