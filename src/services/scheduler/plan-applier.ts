import type { AllocRow } from "../../../projections/allocs.ts";
import { historyKey } from "../../../projections/history.ts";
import type { Projections } from "../../../projections/index.ts";
import type { AllocPlacement, AllocsPlanApplied } from "../../../streams/allocs.ts";
import type { EvaluationSpec, EvaluationsUpserted } from "../../../streams/evals.ts";
import type { Cause } from "../../../streams/event-schema.ts";
import type { PlanIdentities } from "../../identity/plan-identities.ts";
import type { Draft, Written } from "../../store/writer.ts";
import type { Plan } from "./plan.ts";
import { preemptionFields } from "./preemption-records.ts";

/**
 * Placements per plan record. The store applies a record in one step, so
 * this bounds how long a plan holds the event loop at a time: 30–50 µs a
 * placement in a burst with its audit entry, job summary and change
 * fan-out, so 1.0–1.6 ms for 32, which the store's 1 ms apply slice cannot
 * cut further (a 128-placement record was 4–7 ms). Smaller records used to
 * cost more in all (each record's node check summed every allocation on
 * its nodes, until the allocs table kept each node's usage:
 * projections/allocs-node-usage.ts; later, a burst's records were
 * deserialized with per-node class eligibility objects), and 128 was
 * chosen. Measured again at 5,000 nodes (docs/architecture.md, "Plan
 * records of 32, measured again"): ten burst-only runs each, alternating,
 * loop delay p99 30 ms against 35 in the median, turns of 20 ms and more
 * 84 against 117, the same placements a second; the main thread's time on
 * a core about 0.6 s more for four times the records. Still far under a
 * megabyte a record (Kafka's default message limit).
 */
export const PLACEMENTS_PER_RECORD = 32;

export interface PlanResult {
  /** Every record applied and nothing was refused: Nomad's FullCommit. */
  readonly fullCommit: boolean;
  /** Some placement applied (Nomad resets the attempt count on progress). */
  readonly progress: boolean;
  /** Placements that applied, per task group (Nomad's adjustQueuedAllocations). */
  readonly placedByGroup: Readonly<Record<string, number>>;
  /** The nodes whose part of the plan apply refused (Nomad's node_rejected). */
  readonly refusedNodes: readonly string[];
  readonly index: number;
}

/** What the records of a plan are made of: a Plan, or one computed elsewhere (a worker thread) in its shape. */
export type PlanContent = Pick<
  Plan,
  | "evalID"
  | "job"
  | "placements"
  | "stops"
  | "inPlace"
  | "disconnected"
  | "reconnected"
  | "followups"
  | "deployment"
  | "deploymentUpdates"
  | "deploymentID"
> &
  Partial<Pick<Plan, "preemptions">>;

/**
 * The leader side of Nomad's plan applier: turns a plan into its records
 * (the follow-up evaluations first, then the plan, in compact form and in
 * chunks), appends them as one run, and reads back what the second check at
 * apply let through. The check itself is the allocs projection's
 * (projections/plan-apply.ts): every server and every replay decides it the
 * same way, and the log orders concurrent plans.
 *
 * With `identities`, the allocations it places or updates in place are
 * stamped with the active root key and, once applied, their workload
 * identities are signed (Nomad's signAllocIdentities, one JWT per task).
 * `snapshotIndex`, the index of the tables the plan was computed against,
 * goes on every record (Nomad's Plan.SnapshotIndex).
 */
export async function submitPlan(
  write: (drafts: readonly Draft[]) => Promise<Written>,
  tables: Projections["tables"],
  plan: PlanContent,
  followups: readonly EvaluationSpec[],
  newID: () => string,
  identities?: PlanIdentities,
  snapshotIndex?: number,
): Promise<PlanResult> {
  const cause = planCause(tables, plan.evalID);
  const drafts: Draft[] = [];
  if (followups.length > 0) {
    const data: EvaluationsUpserted = { Evals: followups };
    drafts.push({ type: "EvaluationsUpserted", v: 1, data, cause });
  }
  const signs = plan.placements.length > 0 || plan.inPlace.length > 0;
  const signingKeyID = signs ? identities?.signingKey(tables.rootKeys) : undefined;
  const records = planRecords(plan, newID, signingKeyID, snapshotIndex);
  for (const data of records) drafts.push({ type: "AllocsPlanApplied", v: 1, data, cause });
  const written = await write(drafts);
  let fullCommit = written.outcomes.every((o) => o.status === "applied");
  const refusedNodes: string[] = [];
  for (const r of records) {
    const refusal = tables.planRefusals.get(r.PlanID!);
    if (!refusal) continue;
    fullCommit = false;
    for (const n of refusal.Nodes) refusedNodes.push(n.NodeID);
  }
  const placedByGroup: Record<string, number> = {};
  let progress = false;
  const signed: AllocRow[] = [];
  for (const p of plan.placements) {
    const a = tables.allocs.get(p.ID);
    if (!a || a.EvalID !== plan.evalID) continue;
    progress = true;
    placedByGroup[p.TaskGroup] = (placedByGroup[p.TaskGroup] ?? 0) + 1;
    if (signingKeyID !== undefined && a.SigningKeyID === signingKeyID) signed.push(a);
  }
  if (signingKeyID !== undefined) {
    for (const id of plan.inPlace) {
      const a = tables.allocs.get(id);
      if (a?.EvalID === plan.evalID && a.SigningKeyID === signingKeyID) signed.push(a);
    }
    // After apply: the JWT's issue time is the allocation's CreateTime, which
    // the envelope's time gives. Signed again, the same key and time give the
    // same JWT, so the client RPC may as well sign it if this is lost.
    await identities!.sign(signed);
  }
  return { fullCommit, progress, placedByGroup, refusedNodes, index: written.index };
}

/**
 * What a plan (and the follow-up evaluations it creates) follows from: its
 * evaluation, by the record that created it, so an allocation's history
 * leads to the evaluation and from there to whatever caused that (a drain,
 * a node going down, a job registration). Most evaluations come in
 * EvaluationsUpserted records; a job's own (register, deregister, scale) in
 * the job's record, which the evaluation's first history entry names.
 */
export function planCause(tables: Projections["tables"], evalID: string): Cause {
  const created = tables.evals.get(evalID)?.CreateIndex;
  if (created === undefined) return { type: "EvaluationsUpserted", evalId: evalID };
  const history = tables.history.get(historyKey("evaluation", evalID));
  const type = history?.CreateIndex === created ? history.CreateEvent : "";
  return { type: type || "EvaluationsUpserted", evalId: evalID, index: created };
}

/**
 * The plan as AllocsPlanApplied records: everything but the bulk of the
 * placements in the first. `signingKeyID` goes on every record that places
 * or updates in place, `snapshotIndex` on every record.
 */
export function planRecords(
  plan: PlanContent,
  newID: () => string,
  signingKeyID?: string,
  snapshotIndex?: number,
): AllocsPlanApplied[] {
  const placements: AllocPlacement[] = plan.placements.map(({ tg: _tg, ...p }) => p);
  const chunks: AllocPlacement[][] = [];
  for (let i = 0; i < placements.length; i += PLACEMENTS_PER_RECORD) {
    chunks.push(placements.slice(i, i + PLACEMENTS_PER_RECORD));
  }
  if (chunks.length === 0) chunks.push([]);
  const job = plan.job ? { Namespace: plan.job.Namespace, ID: plan.job.ID, Version: plan.job.Version } : null;
  return chunks.map((chunk, i) => {
    const record: Record<string, unknown> = {
      EvalID: plan.evalID,
      PlanID: newID(),
      ...(snapshotIndex === undefined ? {} : { SnapshotIndex: snapshotIndex }),
      Placed: [],
      Updated: [],
      Stopped: i === 0 ? [...plan.stops.values()].map(({ NodeID: _node, ...stop }) => stop) : [],
      Preempted: [],
    };
    if (chunk.length > 0 || (i === 0 && plan.inPlace.length > 0)) {
      record.Job = job;
      if (plan.deploymentID !== "") record.DeploymentID = plan.deploymentID;
      if (signingKeyID !== undefined) record.SigningKeyID = signingKeyID;
    }
    if (chunk.length > 0) record.Placements = chunk;
    if (plan.preemptions && plan.preemptions.size > 0)
      Object.assign(record, preemptionFields(plan.preemptions, chunk, newID));
    if (i === 0) {
      if (plan.inPlace.length > 0) record.InPlace = plan.inPlace;
      if (plan.disconnected.length > 0) record.Disconnected = plan.disconnected;
      if (plan.reconnected.length > 0) record.Reconnected = plan.reconnected;
      if (plan.followups.length > 0) record.Followups = plan.followups;
      if (plan.deployment) record.Deployment = plan.deployment;
      if (plan.deploymentUpdates.length > 0) record.DeploymentUpdates = plan.deploymentUpdates;
    }
    return record as unknown as AllocsPlanApplied;
  });
}
