import type { ApplyContext, Refusal } from "../src/store/projection.ts";
import type { Table } from "../src/store/table.ts";
import { isTerminalAlloc } from "../streams/allocs.ts";
import {
  DEPLOYMENT_RUNNING,
  type DeploymentAllocHealthSet,
  type DeploymentEvent,
  type DeploymentPromoted,
  type DeploymentState,
  type DeploymentStatusUpdate,
  isDeploymentActive,
  requiresPromotion,
} from "../streams/deployments.ts";
import { copyAllocRow } from "./alloc-row.ts";
import type { AllocRow } from "./allocs.ts";
import type { DeploymentRow } from "./deployments.ts";
import { goTime } from "./go-time.ts";

/*
 * The writes of Nomad's Deployment endpoint and deployment watcher
 * (DeploymentStatusUpdated, DeploymentPromoted, DeploymentAllocHealthSet):
 * their second validation, and what they change in the deployments and
 * allocations tables. Three projections apply them (evals, allocs,
 * deployments, in that order); the first of them, evals, checks with
 * {@link deploymentWriteRefusal} and refuses the record for all.
 */

/** Nomad's state store checks (UpdateDeploymentStatus, UpdateDeploymentPromotion, UpdateDeploymentAllocHealth). */
export function deploymentWriteRefusal(
  deployments: Table<DeploymentRow>,
  allocs: Table<AllocRow>,
  event: DeploymentEvent,
): Refusal | undefined {
  const id = event.data.DeploymentID;
  const d = deployments.get(id);
  if (!d) return { code: 404, reason: `Deployment ID "${id}" couldn't be updated as it does not exist` };
  if (!isDeploymentActive(d.Status))
    return { code: 400, reason: `Deployment "${id}" has terminal status "${d.Status}":` };
  if (event.type === "DeploymentPromoted") {
    const unhealthy = promotionShortfall(d, allocs, event.data);
    if (unhealthy.length > 0) return { code: 400, reason: multiError(unhealthy) };
  }
  if (event.type === "DeploymentAllocHealthSet") {
    for (const allocID of [...event.data.HealthyAllocationIDs, ...event.data.UnhealthyAllocationIDs]) {
      const a = allocs.get(allocID);
      if (!a) return { code: 400, reason: `unknown alloc "${allocID}"` };
      if (a.DeploymentID !== id)
        return { code: 400, reason: `alloc "${allocID}" is not part of deployment "${id}"` };
    }
  }
  return undefined;
}

/** The groups asked to promote whose healthy canaries are fewer than desired, in Nomad's words. */
export function promotionShortfall(
  d: DeploymentRow,
  allocs: Table<AllocRow>,
  req: Pick<DeploymentPromoted, "All" | "Groups">,
): string[] {
  const healthy = new Map<string, number>();
  for (const a of promotableCanaries(d, allocs, req))
    healthy.set(a.TaskGroup, (healthy.get(a.TaskGroup) ?? 0) + 1);
  const out: string[] = [];
  for (const [tg, state] of Object.entries(d.TaskGroups)) {
    if (!promotes(req, tg) || state.DesiredCanaries === 0) continue;
    const have = healthy.get(tg) ?? 0;
    if (have < state.DesiredCanaries)
      out.push(`Task group "${tg}" has ${have}/${state.DesiredCanaries} healthy allocations`);
  }
  return out;
}

/** Canaries of the promoted groups that are healthy and not terminal: they stop being canaries. */
export function promotableCanaries(
  d: DeploymentRow,
  allocs: Table<AllocRow>,
  req: Pick<DeploymentPromoted, "All" | "Groups">,
): AllocRow[] {
  const canaries = new Set<string>();
  for (const state of Object.values(d.TaskGroups))
    for (const c of state.PlacedCanaries ?? []) canaries.add(c);
  const out: AllocRow[] = [];
  for (const a of allocs.by("deployment", d.ID)) {
    if (!canaries.has(a.ID) || !promotes(req, a.TaskGroup)) continue;
    if (isTerminalAlloc(a) || a.DeploymentStatus?.Healthy !== true) continue;
    out.push(a);
  }
  return out;
}

const promotes = (req: Pick<DeploymentPromoted, "All" | "Groups">, tg: string) =>
  req.All || (req.Groups ?? []).includes(tg);

/** hashicorp/go-multierror's format, which Nomad's answer carries. */
function multiError(errors: readonly string[]): string {
  const head = errors.length === 1 ? "1 error occurred:" : `${errors.length} errors occurred:`;
  return `${head}\n${errors.map((e) => `\t* ${e}`).join("\n")}\n\n`;
}

/** The deployments table's part of a deployment write (the record passed the gate). */
export function applyDeploymentWrite(
  ctx: ApplyContext,
  deployments: Table<DeploymentRow>,
  event: DeploymentEvent,
): void {
  if (ctx.rejected) return;
  const nowMs = event.at;
  const d = deployments.get(event.data.DeploymentID);
  if (!d) return;
  switch (event.type) {
    case "DeploymentStatusUpdated":
      putStatus(ctx, deployments, d, event.data, nowMs);
      return;
    case "DeploymentAllocHealthSet":
      // The health the allocations changed to was counted as they changed
      // (the projection observes them); an unhealthy one may have failed
      // the deployment already, in this same record.
      if (event.data.DeploymentUpdate) putStatus(ctx, deployments, d, event.data.DeploymentUpdate, nowMs);
      return;
    case "DeploymentPromoted":
      putPromotion(ctx, deployments, d, event.data, nowMs);
      return;
  }
}

function putStatus(
  ctx: ApplyContext,
  deployments: Table<DeploymentRow>,
  d: DeploymentRow,
  u: Pick<DeploymentStatusUpdate, "Status" | "StatusDescription">,
  nowMs: number,
): void {
  if (!isDeploymentActive(d.Status) && d.ModifyIndex !== ctx.index) return;
  ctx.put(deployments, {
    ...d,
    Status: u.Status,
    StatusDescription: u.StatusDescription,
    ModifyTime: nowMs * 1e6,
    ModifyIndex: ctx.index,
  });
}

/** Nomad's UpdateDeploymentPromotion: the groups are promoted and their progress deadline starts again. */
function putPromotion(
  ctx: ApplyContext,
  deployments: Table<DeploymentRow>,
  d: DeploymentRow,
  req: DeploymentPromoted,
  nowMs: number,
): void {
  const groups: Record<string, DeploymentState> = {};
  for (const [tg, state] of Object.entries(d.TaskGroups)) {
    if (!promotes(req, tg)) {
      groups[tg] = state;
      continue;
    }
    const restart = state.ProgressDeadline > 0 && !isZeroTime(state.RequireProgressBy);
    groups[tg] = {
      ...state,
      Promoted: true,
      RequireProgressBy: restart ? goTime(nowMs + state.ProgressDeadline / 1e6) : state.RequireProgressBy,
    };
  }
  const next = { ...d, TaskGroups: groups };
  const description =
    !requiresPromotion(next) && next.Status === "running" ? DEPLOYMENT_RUNNING : next.StatusDescription;
  ctx.put(deployments, {
    ...next,
    StatusDescription: description,
    ModifyTime: nowMs * 1e6,
    ModifyIndex: ctx.index,
  });
}

/** The allocations table's part: canaries promoted, health set by hand. */
export function applyDeploymentWriteToAllocs(
  ctx: ApplyContext,
  allocs: Table<AllocRow>,
  event: DeploymentEvent,
): void {
  if (ctx.rejected) return;
  if (event.type === "DeploymentPromoted") {
    // The allocations placed as canaries are the deployment's PlacedCanaries (both come from the plan).
    for (const a of allocs.by("deployment", event.data.DeploymentID)) {
      if (a.DeploymentStatus?.Canary !== true || a.DeploymentStatus.Healthy !== true) continue;
      if (isTerminalAlloc(a) || !promotes(event.data, a.TaskGroup)) continue;
      const row = copyAllocRow(a);
      row.DeploymentStatus = { ...a.DeploymentStatus!, Canary: false, ModifyIndex: ctx.index };
      row.ModifyIndex = ctx.index;
      row.AllocModifyIndex = ctx.index;
      ctx.put(allocs, row);
    }
    return;
  }
  if (event.type === "DeploymentAllocHealthSet") {
    setHealth(ctx, allocs, event.data, event.data.HealthyAllocationIDs, true);
    setHealth(ctx, allocs, event.data, event.data.UnhealthyAllocationIDs, false);
  }
}

function setHealth(
  ctx: ApplyContext,
  allocs: Table<AllocRow>,
  req: DeploymentAllocHealthSet,
  ids: readonly string[],
  healthy: boolean,
): void {
  for (const id of ids) {
    const a = allocs.get(id);
    if (!a || a.DeploymentID !== req.DeploymentID) continue;
    const row = copyAllocRow(a);
    row.DeploymentStatus = {
      Canary: a.DeploymentStatus?.Canary ?? false,
      Healthy: healthy,
      Timestamp: req.Timestamp,
      ModifyIndex: ctx.index,
    };
    row.ModifyIndex = ctx.index;
    ctx.put(allocs, row);
  }
}

function isZeroTime(t: string): boolean {
  return t === "" || t.startsWith("0001-01-01T00:00:00");
}

export type { DeploymentEvent };
