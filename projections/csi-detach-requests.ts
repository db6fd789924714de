import type { ApplyContext, Change, Projection, Refusal } from "../src/store/projection.ts";
import { type IndexedRow, Table } from "../src/store/table.ts";
import {
  CSI_DETACH_KINDS,
  type CSIDetachAcknowledged,
  type CSIDetachEvent,
  type CSIDetachKind,
  type CSIDetachRequest,
  type CSIDetachRequested,
  type CSIDetachTimedOut,
  MAX_DETACH_ERROR,
} from "../streams/csi-detach.ts";
import { type CSIVolumeRow, csiVolumeKey, VOLUME_NOT_FOUND } from "./csi-volumes.ts";

/** What became of the latest detach step of a volume. */
export type CSIDetachOutcome = "requested" | "acknowledged" | "failed" | "timed-out";

/** The latest step of a volume's detach calls: the field its history tracks. */
export interface CSIDetachStep {
  readonly RequestID: string;
  readonly Kind: CSIDetachKind;
  readonly NodeID: string;
  readonly AllocationID: string;
  readonly Attempt: number;
  readonly Outcome: CSIDetachOutcome;
  readonly Error: string;
}

/**
 * One row per volume that ever had a detach call: the calls still waiting
 * for their client, and the latest step. `ID` is the volume's, so the
 * history of this row is part of the volume's (object "csi_volume").
 * Bounded by the volumes, not by the calls: answered calls leave `Pending`,
 * and the row goes with its volume when the volume is deregistered.
 */
export interface CSIDetachRow extends IndexedRow {
  readonly ID: string;
  readonly Namespace: string;
  readonly Pending: Readonly<Record<string, CSIDetachRequest>>;
  readonly Detach: CSIDetachStep;
}

export type CSIDetachTable = Table<CSIDetachRow>;

/** The primary key: the volume's (Namespace, ID), as the volumes table keys it. */
export const csiDetachKey = (namespace: string, volumeID: string) => `${namespace}\u0000${volumeID}`;

/** The pending requests a node is to act on, oldest first. */
export function pendingFor(table: CSIDetachTable, nodeID: string): CSIDetachRequest[] {
  const out: CSIDetachRequest[] = [];
  for (const row of table.by("pending_node", nodeID)) {
    for (const r of Object.values(row.Pending)) if (r.NodeID === nodeID) out.push(r);
  }
  return out.sort((a, b) => (a.RequestID < b.RequestID ? -1 : a.RequestID > b.RequestID ? 1 : 0));
}

/** The pending request `id` of a volume, if any. */
export function pendingRequest(
  table: CSIDetachTable,
  namespace: string,
  volumeID: string,
  id: string,
): CSIDetachRequest | undefined {
  return table.get(csiDetachKey(namespace, volumeID))?.Pending[id];
}

/** Why `request` cannot be recorded, or undefined: the service's own check and apply's. */
export function requestRefusal(
  table: CSIDetachTable,
  volumes: Table<CSIVolumeRow>,
  request: CSIDetachRequest,
): Refusal | undefined {
  const bad = (reason: string): Refusal => ({ code: 400, reason });
  for (const f of ["RequestID", "Namespace", "VolumeID", "PluginID", "NodeID"] as const) {
    if (typeof request[f] !== "string" || request[f] === "") return bad(`detach request requires a ${f}`);
  }
  if (!CSI_DETACH_KINDS.includes(request.Kind))
    return bad(`unknown detach kind ${JSON.stringify(request.Kind)}`);
  if (!Number.isSafeInteger(request.Attempt) || request.Attempt < 1)
    return bad("detach Attempt must be 1 or more");
  if (!Number.isFinite(request.Deadline)) return bad("detach request requires a Deadline");
  if (typeof request.Claim !== "object" || request.Claim === null)
    return bad("detach request requires a Claim");
  // A volume deregistered while its unpublish was under way: its row went with it and must not come back.
  if (!volumes.has(csiVolumeKey(request.Namespace, request.VolumeID)))
    return { code: 404, reason: `${VOLUME_NOT_FOUND}: ${request.VolumeID}` };
  if (pendingRequest(table, request.Namespace, request.VolumeID, request.RequestID)) {
    return { code: 409, reason: `detach request ${request.RequestID} is already pending` };
  }
  return undefined;
}

/** Why a client's answer cannot be recorded, or undefined: the RPC handler's check and apply's. */
export function ackRefusal(table: CSIDetachTable, ack: CSIDetachAcknowledged): Refusal | undefined {
  const pending = pendingRequest(table, ack.Namespace, ack.VolumeID, ack.RequestID);
  // A late answer to an attempt that timed out: the retry carries its own ID.
  if (!pending) return { code: 404, reason: `detach request ${ack.RequestID} is not pending` };
  if (pending.NodeID !== ack.NodeID) {
    return {
      code: 403,
      reason: `detach request ${ack.RequestID} is for node ${pending.NodeID}, not ${ack.NodeID}`,
    };
  }
  if (typeof ack.Error !== "string") return { code: 400, reason: "detach Error must be a string" };
  return undefined;
}

/**
 * The detach calls the leader asked of clients and their answers. Pure:
 * deadlines are the asking service's, carried in the record; apply only
 * checks that an answer or a timeout still finds its request pending, so
 * of an ack and a timeout racing exactly one wins. A volume's row is
 * dropped in the record that deregisters the volume (its calls pending
 * then are answered by nobody: an ack or a timeout finds them gone).
 */
export function csiDetachRequestsProjection(volumes: Table<CSIVolumeRow>) {
  const detaches = new Table<CSIDetachRow>({
    name: "csi_detach_requests",
    key: (r) => csiDetachKey(r.Namespace, r.ID),
    indexes: {
      pending_node: (r) => {
        const nodes = new Set<string>();
        for (const p of Object.values(r.Pending)) nodes.add(p.NodeID);
        return [...nodes];
      },
    },
  });

  const requested = (ctx: ApplyContext, data: CSIDetachRequested) => {
    const request = data.Request;
    if (typeof request !== "object" || request === null) return ctx.reject(400, "detach Request is required");
    const refusal = requestRefusal(detaches, volumes, request);
    if (refusal) return ctx.reject(refusal.code, refusal.reason);
    const key = csiDetachKey(request.Namespace, request.VolumeID);
    const row = detaches.get(key);
    ctx.put(detaches, {
      ID: request.VolumeID,
      Namespace: request.Namespace,
      Pending: { ...row?.Pending, [request.RequestID]: request },
      Detach: step(request, "requested", ""),
      CreateIndex: row?.CreateIndex ?? ctx.index,
      ModifyIndex: ctx.index,
    });
  };

  const answered = (ctx: ApplyContext, namespace: string, volumeID: string, id: string, outcome: Answer) => {
    const row = detaches.get(csiDetachKey(namespace, volumeID))!;
    const request = row.Pending[id]!;
    const { [id]: _gone, ...rest } = row.Pending;
    ctx.put(detaches, {
      ...row,
      Pending: rest,
      Detach: step(request, outcome.outcome, outcome.error),
      ModifyIndex: ctx.index,
    });
  };

  const acknowledged = (ctx: ApplyContext, data: CSIDetachAcknowledged) => {
    const refusal = ackRefusal(detaches, data);
    if (refusal) return ctx.reject(refusal.code, refusal.reason);
    const error = data.Error.slice(0, MAX_DETACH_ERROR);
    answered(ctx, data.Namespace, data.VolumeID, data.RequestID, {
      outcome: error === "" ? "acknowledged" : "failed",
      error,
    });
  };

  const timedOut = (ctx: ApplyContext, data: CSIDetachTimedOut) => {
    if (!pendingRequest(detaches, data.Namespace, data.VolumeID, data.RequestID)) {
      return ctx.reject(409, `detach request ${data.RequestID} is not pending`);
    }
    answered(ctx, data.Namespace, data.VolumeID, data.RequestID, { outcome: "timed-out", error: "" });
  };

  const projection: Projection = {
    name: "csi_detach_requests",
    // 2: a row goes with its volume, and a request needs its volume.
    version: 2,
    tables: [detaches],
    reads: ["csi_volumes"],
    handles: new Set(["CSIDetachRequested", "CSIDetachAcknowledged", "CSIDetachTimedOut"]),
    evolve(ctx, event) {
      const e = event as CSIDetachEvent;
      if (e.type === "CSIDetachRequested") return requested(ctx, e.data);
      if (e.type === "CSIDetachAcknowledged") return acknowledged(ctx, e.data);
      return timedOut(ctx, e.data);
    },
    // A volume's deregistration is the only delete of a csi_volumes row.
    observes: new Set(["csi_volumes"]),
    observe(ctx, change: Change) {
      if (change.after !== undefined) return;
      const gone = change.before as CSIVolumeRow;
      const key = csiDetachKey(gone.Namespace, gone.ID);
      if (detaches.has(key)) ctx.delete(detaches, key);
    },
  };
  return { projection, detaches };
}

interface Answer {
  readonly outcome: CSIDetachOutcome;
  readonly error: string;
}

function step(request: CSIDetachRequest, outcome: CSIDetachOutcome, error: string): CSIDetachStep {
  return {
    RequestID: request.RequestID,
    Kind: request.Kind,
    NodeID: request.NodeID,
    AllocationID: request.Claim.AllocationID,
    Attempt: request.Attempt,
    Outcome: outcome,
    Error: error,
  };
}
