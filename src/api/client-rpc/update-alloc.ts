import { randomUUID } from "node:crypto";
import type { FastifyRequest } from "fastify";
import type { AllocRow } from "../../../projections/allocs.ts";
import { jobKey } from "../../../projections/evals.ts";
import { goTime } from "../../../projections/go-time.ts";
import { notAllowedToUpdateAllocs } from "../../../projections/nodes.ts";
import {
  type AllocDeploymentStatus,
  allocTaskGroup,
  CLIENT_STATUSES,
  type ClientAllocUpdate,
  type ClientStatus,
  isClientTerminal,
  needsToReconnect,
  type ReschedulePolicy,
} from "../../../streams/allocs.ts";
import { type EvaluationSpec, newEvaluation, ZERO_TIME } from "../../../streams/evals.ts";
import { isUnresponsive } from "../../../streams/nodes.ts";
import { ApiError } from "../api-error.ts";
import type { ApiContext } from "../context.ts";
import type { AllocUpdateCall } from "./alloc-update-batcher.ts";
import { authenticateNode, presentedNodeSecret } from "./node-auth.ts";
import type { RpcHandler } from "./rpc-context.ts";
import type { ClientAllocBody, UpdateAllocBody } from "./schemas.ts";

/**
 * Node.UpdateAlloc: a client reports its allocations. Refused (nothing
 * written) while the node is down or disconnected: a reconnecting client
 * must heartbeat first. Only the fields a client owns are taken; the update
 * joins the current 50 ms window and the caller gets the window's index.
 */
export const updateAlloc: RpcHandler = async ({ api, batcher }, request) => {
  const index = batcher.submit(reportedCall(api, request));
  // Packed by submit: the parsed body is needed no more, and the call may
  // wait a while for its window's apply (see the batcher's Waiting).
  request.body = undefined;
  return { Index: await index };
};

/** The call's updates, reconnects and evaluations, validated against the tables; throws ApiError if refused. */
function reportedCall(api: ApiContext, request: FastifyRequest): AllocUpdateCall {
  const body = (request.body ?? {}) as UpdateAllocBody;
  const reported = body.Alloc ?? [];
  if (reported.length === 0) throw ApiError.badRequest("must update at least one allocation");
  if (body.Evals && body.Evals.length > 0) throw ApiError.badRequest("evals field must not be set");
  const nodeID = reported[0]!.NodeID ?? "";
  if (!nodeID) throw ApiError.badRequest("missing node ID: Alloc[0].NodeID is empty");
  const { node } = authenticateNode(api, nodeID, presentedNodeSecret(request, body.AuthToken));
  if (isUnresponsive(node.Status)) throw new ApiError(409, notAllowedToUpdateAllocs(nodeID, node.Status));

  const now = api.clock.now();
  const updates: ClientAllocUpdate[] = [];
  const reconnected: string[] = [];
  const evals: EvaluationSpec[] = [];
  reported.forEach((r, i) => {
    const update = clientUpdate(r, i, nodeID, now);
    const stored = api.tables.allocs.get(update.ID);
    if (stored && stored.NodeID !== nodeID) {
      throw ApiError.forbidden(
        `node ${nodeID} may not update allocation ${update.ID}: it belongs to node ${stored.NodeID}`,
      );
    }
    updates.push(update);
    if (!stored) return;
    if (needsToReconnect(stored)) reconnected.push(stored.ID);
    const evaluation = triggeredEval(stored, update, now, jobPurged(api.tables, stored));
    if (evaluation) evals.push(evaluation);
  });

  return { nodeID, updates, reconnected, evals };
}

function clientUpdate(r: ClientAllocBody, i: number, nodeID: string, nowMs: number): ClientAllocUpdate {
  if (!r.ID) throw ApiError.badRequest(`Alloc[${i}].ID is empty`);
  if ((r.NodeID ?? "") !== nodeID) {
    throw ApiError.badRequest(
      `Alloc[${i}] is on node ${JSON.stringify(r.NodeID ?? "")}: one update carries one node's allocations`,
    );
  }
  const status = r.ClientStatus as ClientStatus;
  // `unknown` is the server's word for "lost contact"; a client reporting it would fake a disconnect.
  if (!CLIENT_STATUSES.includes(status) || status === "unknown") {
    throw ApiError.badRequest(
      `Alloc[${i}].ClientStatus ${JSON.stringify(r.ClientStatus ?? "")} is not one a client reports (pending, running, complete, failed, lost)`,
    );
  }
  return {
    ID: r.ID,
    NodeID: nodeID,
    ClientStatus: status,
    ClientDescription: r.ClientDescription ?? "",
    TaskStates: r.TaskStates ?? null,
    DeploymentStatus: deploymentStatus(r.DeploymentStatus),
    NetworkStatus: r.NetworkStatus ?? null,
    ModifyTime: nowMs * 1e6,
  };
}

function deploymentStatus(raw: Record<string, unknown> | null | undefined): AllocDeploymentStatus | null {
  if (!raw) return null;
  const healthy = raw.Healthy;
  const ts = raw.Timestamp;
  return {
    Healthy: typeof healthy === "boolean" ? healthy : null,
    Timestamp: ts instanceof Date ? goTime(ts.getTime()) : typeof ts === "string" ? ts : ZERO_TIME,
    Canary: raw.Canary === true,
    ModifyIndex: 0,
  };
}

/**
 * Nomad's UpdateAlloc evaluation triggers: a failed allocation that may be
 * rescheduled (`alloc-failure`), or an `unknown` one its node reports again
 * (`reconnect`), or one of a job that was purged since (`job-deregister`,
 * which takes precedence: its allocations are stopped, not rescheduled).
 */
function triggeredEval(
  stored: AllocRow,
  update: ClientAllocUpdate,
  nowMs: number,
  purged: boolean,
): EvaluationSpec | undefined {
  if (!isClientTerminal(update) && stored.ClientStatus !== "unknown") return undefined;
  let trigger = purged ? "job-deregister" : "";
  if (!purged && update.ClientStatus === "failed" && stored.FollowupEvalID === "") {
    const tg = allocTaskGroup(stored);
    if (!tg) return undefined;
    if (rescheduleEligible(stored, tg.ReschedulePolicy ?? null, nowMs)) trigger = "alloc-failure";
  }
  if (!purged && stored.ClientStatus === "unknown") trigger = "reconnect";
  if (trigger === "") return undefined;
  return newEvaluation({
    ID: randomUUID(),
    Namespace: stored.Namespace,
    Type: stored.Job?.Type ?? "service",
    Priority: stored.Job?.Priority ?? 50,
    TriggeredBy: trigger,
    JobID: stored.JobID,
    CreateTime: nowMs * 1e6,
  });
}

/** Nomad's Allocation.RescheduleEligible. */
function rescheduleEligible(a: AllocRow, policy: ReschedulePolicy | null, nowMs: number): boolean {
  if (!policy) return false;
  const attempts = policy.Attempts ?? 0;
  if (!(attempts > 0 || policy.Unlimited)) return false;
  if (policy.Unlimited) return true;
  const events = a.RescheduleTracker?.Events ?? [];
  if (events.length === 0) return true;
  const interval = policy.Interval ?? 0;
  const nowNs = nowMs * 1e6;
  const attempted = interval > 0 ? events.filter((e) => nowNs - e.RescheduleTime < interval).length : 0;
  return attempted < attempts;
}

/** The allocation's job is gone but was known (its versions are kept): Nomad's "job == nil" case. */
function jobPurged(tables: ApiContext["tables"], a: AllocRow): boolean {
  const key = jobKey(a.Namespace, a.JobID);
  return !tables.jobs.has(key) && tables.jobVersions.countBy("job", key) > 0;
}
