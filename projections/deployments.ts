import type { ApplyContext, Change, Projection } from "../src/store/projection.ts";
import { byCreateIndexThenId, stamped, Table } from "../src/store/table.ts";
import type { AllocsPlanApplied } from "../streams/allocs.ts";
import {
  DEPLOYMENT_FAILED_ALLOCATIONS,
  DEPLOYMENT_WRITES,
  type DeploymentEvent,
  type DeploymentSpec,
  type DeploymentState,
  isDeploymentActive,
} from "../streams/deployments.ts";
import type { Envelope } from "../streams/event-schema.ts";
import type { AllocRow } from "./allocs.ts";
import { applyDeploymentWrite } from "./deployment-writes.ts";
import { jobKey } from "./evals.ts";
import { goTime } from "./go-time.ts";

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
    const created = data.Deployment && !deployments.has(data.Deployment.ID) ? data.Deployment : undefined;
    if (created) ctx.put(deployments, stamped(created, ctx.index, ctx.index));
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
    const placed = new Map<string, { tg: string; canary: boolean; id: string; modifyTimeNs: number }[]>();
    const consider = (id: string, canary: boolean) => {
      const a = allocs.get(id);
      if (!a || a.CreateIndex !== ctx.index || a.DeploymentID === "") return;
      const list = placed.get(a.DeploymentID) ?? [];
      list.push({ tg: a.TaskGroup, canary, id, modifyTimeNs: a.ModifyTime });
      placed.set(a.DeploymentID, list);
    };
    for (const p of data.Placements ?? []) consider(p.ID, p.Canary === true);
    for (const a of data.Placed) consider(a.ID, a.DeploymentStatus?.Canary === true);
    // Allocations updated in place into the deployment this record creates
    // join it as placements (Nomad's updateDeploymentWithAlloc). Into one that
    // existed already, `observe` counted them as they changed.
    if (created) {
      for (const id of data.InPlace ?? []) {
        const a = allocs.get(id);
        if (!a || a.DeploymentID !== created.ID) continue;
        const list = placed.get(a.DeploymentID) ?? [];
        list.push({ tg: a.TaskGroup, canary: false, id, modifyTimeNs: a.ModifyTime });
        placed.set(a.DeploymentID, list);
      }
    }
    for (const [id, list] of placed) {
      const d = deployments.get(id);
      if (!d) continue;
      const groups: Record<string, DeploymentState> = { ...d.TaskGroups };
      for (const { tg, canary, id: allocID, modifyTimeNs } of list) {
        const state = groups[tg];
        if (state) groups[tg] = withPlacement(state, allocID, canary, modifyTimeNs);
      }
      ctx.put(deployments, { ...d, TaskGroups: groups, ModifyTime: nowNs, ModifyIndex: ctx.index });
    }
  };

  /** An allocation that moved into an existing deployment (an in-place update) counts as placed in it. */
  const joined = (ctx: ApplyContext, after: AllocRow, atMs: number) => {
    const d = deployments.get(after.DeploymentID);
    const state = d?.TaskGroups[after.TaskGroup];
    if (!d || !state) return;
    const canary = after.DeploymentStatus?.Canary === true;
    ctx.put(deployments, {
      ...d,
      TaskGroups: {
        ...d.TaskGroups,
        [after.TaskGroup]: withPlacement(state, after.ID, canary, after.ModifyTime),
      },
      ModifyTime: atMs * 1e6,
      ModifyIndex: ctx.index,
    });
  };

  /** An allocation's health, reported by its client, counts toward its deployment. */
  const observe = (ctx: ApplyContext, change: Change) => {
    const before = change.before as AllocRow | undefined;
    const after = change.after as AllocRow | undefined;
    if (!before || !after || after.DeploymentID === "") return;
    if (before.DeploymentID !== after.DeploymentID) {
      joined(ctx, after, change.at);
      return;
    }
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
      RequireProgressBy: now
        ? progressAfterHealthy(state, after.DeploymentStatus?.Timestamp ?? "")
        : state.RequireProgressBy,
    };
    // A group that reverts by itself leaves the failure to the deployment
    // watcher, which reverts the job in the same append.
    const fails = !now && d.Status === "running" && !Object.values(d.TaskGroups).some((g) => g.AutoRevert);
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
    // 2: RequireProgressBy is kept. 3: in-place updates into a deployment count as placed.
    // 4: promotion, pause, fail and allocation health; auto-revert groups fail by the watcher.
    version: 4,
    tables: [deployments],
    reads: ["allocs"],
    handles: new Set(["AllocsPlanApplied", ...DEPLOYMENT_WRITES]),
    observes: new Set(["allocs"]),
    evolve(ctx, event) {
      if (DEPLOYMENT_WRITES.has(event.type))
        return applyDeploymentWrite(ctx, deployments, event as DeploymentEvent);
      plan(ctx, event, (event as Envelope<"AllocsPlanApplied", AllocsPlanApplied>).data);
    },
    observe,
  };
  return { projection, deployments };
}

/**
 * One more allocation placed in the group (Nomad's updateDeploymentWithAlloc):
 * the first starts the progress deadline, from its modify time since it may
 * have joined by an in-place update.
 */
function withPlacement(
  state: DeploymentState,
  allocID: string,
  canary: boolean,
  modifyTimeNs: number,
): DeploymentState {
  const starts = state.ProgressDeadline !== 0 && isZeroTime(state.RequireProgressBy);
  const canaries = state.PlacedCanaries ?? [];
  return {
    ...state,
    PlacedAllocs: state.PlacedAllocs + 1,
    PlacedCanaries: canary && !canaries.includes(allocID) ? [...canaries, allocID] : state.PlacedCanaries,
    RequireProgressBy: starts
      ? goTime((modifyTimeNs + state.ProgressDeadline) / 1e6)
      : state.RequireProgressBy,
  };
}

function isZeroTime(t: string): boolean {
  return t === "" || t.startsWith("0001-01-01T00:00:00");
}

/**
 * Nomad's updateDeploymentWithAlloc: a healthy allocation moves the group's
 * deadline to its health timestamp plus the progress deadline, if later.
 */
function progressAfterHealthy(state: DeploymentState, healthyAt: string): string {
  const at = Date.parse(healthyAt);
  if (state.ProgressDeadline === 0 || !Number.isFinite(at)) return state.RequireProgressBy;
  const by = at + state.ProgressDeadline / 1e6;
  const current = isZeroTime(state.RequireProgressBy)
    ? Number.NEGATIVE_INFINITY
    : Date.parse(state.RequireProgressBy);
  return by > current ? goTime(by) : state.RequireProgressBy;
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
