import type { ChangeEvent } from "../events/frames.ts";

/**
 * One exported change as a flat row: scalar columns only, so it loads into
 * a table as is. Every row starts with the common columns; the rest are the
 * object's own, per topic (TOPIC_COLUMNS), taken from the object after the
 * change, or before it for a delete. README "Export rows" documents both.
 */
export type ExportRow = Record<string, string | number | boolean | null>;

/** The version of the row layout below; bumped when a column changes meaning or goes. */
export const ROW_VERSION = 2;

export const COMMON_COLUMNS = [
  "Index",
  "Seq",
  "Time",
  "ClusterID",
  "RowVersion",
  "Record",
  "SchemaVersion",
  "Topic",
  "EventType",
  "Op",
  "Key",
  "Namespace",
  "ActorKind",
  "ActorID",
  "ActorName",
  "ActorAddr",
  "ActorUserAgent",
  "CauseType",
  "CauseIndex",
  "CauseNodeID",
  "CauseEvalID",
] as const;

/** Column name -> the payload field it comes from (dotted paths reach into nested objects). */
export const TOPIC_COLUMNS: Readonly<Record<string, Readonly<Record<string, string>>>> = {
  Node: {
    ID: "ID",
    Name: "Name",
    Datacenter: "Datacenter",
    NodeClass: "NodeClass",
    NodePool: "NodePool",
    Status: "Status",
    StatusDescription: "StatusDescription",
    SchedulingEligibility: "SchedulingEligibility",
    Drain: "Drain",
    LastMissedHeartbeatIndex: "LastMissedHeartbeatIndex",
    LastAllocUpdateIndex: "LastAllocUpdateIndex",
    CreateIndex: "CreateIndex",
    ModifyIndex: "ModifyIndex",
  },
  Allocation: {
    ID: "ID",
    Name: "Name",
    JobID: "JobID",
    TaskGroup: "TaskGroup",
    NodeID: "NodeID",
    EvalID: "EvalID",
    DeploymentID: "DeploymentID",
    ClientStatus: "ClientStatus",
    ClientDescription: "ClientDescription",
    DesiredStatus: "DesiredStatus",
    DesiredDescription: "DesiredDescription",
    Migrate: "DesiredTransition.Migrate",
    PreviousAllocation: "PreviousAllocation",
    NextAllocation: "NextAllocation",
    FollowupEvalID: "FollowupEvalID",
    CreateIndex: "CreateIndex",
    ModifyIndex: "ModifyIndex",
    AllocModifyIndex: "AllocModifyIndex",
  },
  Evaluation: {
    ID: "ID",
    JobID: "JobID",
    EvalType: "Type",
    TriggeredBy: "TriggeredBy",
    Priority: "Priority",
    Status: "Status",
    StatusDescription: "StatusDescription",
    NodeID: "NodeID",
    DeploymentID: "DeploymentID",
    PreviousEval: "PreviousEval",
    NextEval: "NextEval",
    BlockedEval: "BlockedEval",
    CreateIndex: "CreateIndex",
    ModifyIndex: "ModifyIndex",
  },
  Job: {
    ID: "ID",
    Name: "Name",
    JobType: "Type",
    Priority: "Priority",
    Status: "Status",
    Stop: "Stop",
    Version: "Version",
    CreateIndex: "CreateIndex",
    ModifyIndex: "ModifyIndex",
    JobModifyIndex: "JobModifyIndex",
  },
  Deployment: {
    ID: "ID",
    JobID: "JobID",
    JobVersion: "JobVersion",
    Status: "Status",
    StatusDescription: "StatusDescription",
    CreateIndex: "CreateIndex",
    ModifyIndex: "ModifyIndex",
  },
  Namespace: {
    Name: "Name",
    Description: "Description",
    CreateIndex: "CreateIndex",
    ModifyIndex: "ModifyIndex",
  },
  NodePool: {
    Name: "Name",
    Description: "Description",
    CreateIndex: "CreateIndex",
    ModifyIndex: "ModifyIndex",
  },
  // The variable's address and key, never its Data (the payload has none).
  Variable: {
    Namespace: "Namespace",
    Path: "Path",
    KeyID: "KeyID",
    CreateIndex: "CreateIndex",
    ModifyIndex: "ModifyIndex",
  },
  ACLToken: {
    AccessorID: "AccessorID",
    Name: "Name",
    Type: "Type",
    Global: "Global",
    ExpirationTime: "ExpirationTime",
    CreateIndex: "CreateIndex",
    ModifyIndex: "ModifyIndex",
  },
  ACLPolicy: {
    Name: "Name",
    Description: "Description",
    CreateIndex: "CreateIndex",
    ModifyIndex: "ModifyIndex",
  },
  ACLRole: {
    ID: "ID",
    Name: "Name",
    Description: "Description",
    CreateIndex: "CreateIndex",
    ModifyIndex: "ModifyIndex",
  },
  ACLAuthMethod: {
    Name: "Name",
    Type: "Type",
    TokenLocality: "TokenLocality",
    Default: "Default",
    CreateIndex: "CreateIndex",
    ModifyIndex: "ModifyIndex",
  },
  ACLBindingRule: {
    ID: "ID",
    AuthMethod: "AuthMethod",
    BindType: "BindType",
    BindName: "BindName",
    CreateIndex: "CreateIndex",
    ModifyIndex: "ModifyIndex",
  },
};

type Scalar = string | number | boolean | null;

function field(payload: unknown, path: string): Scalar {
  let v: unknown = payload;
  for (const part of path.split(".")) {
    if (typeof v !== "object" || v === null) return null;
    v = (v as Record<string, unknown>)[part];
  }
  return typeof v === "string" || typeof v === "number" || typeof v === "boolean" ? v : null;
}

/** The object's own columns, from a payload `{Wrapper: object}`. */
export function objectColumns(topic: string, payload: Readonly<Record<string, unknown>>): ExportRow {
  const object = Object.values(payload)[0];
  const columns: ExportRow = {};
  for (const [column, path] of Object.entries(TOPIC_COLUMNS[topic] ?? {}))
    columns[column] = field(object, path);
  return columns;
}

/** The metadata columns of a change: where it sits in the log and who made it, why. */
export function changeColumns(clusterId: string, event: ChangeEvent, time: string): ExportRow {
  const actor = event.Actor;
  return {
    Index: event.Index,
    Seq: event.Seq,
    Time: time,
    ClusterID: clusterId,
    RowVersion: ROW_VERSION,
    Record: event.Record,
    SchemaVersion: event.SchemaVersion,
    Topic: event.Topic,
    EventType: event.Type,
    Op: event.Op,
    Key: event.Key,
    Namespace: event.Namespace,
    ActorKind: actor.kind,
    ActorID: actor.id,
    ActorName: actor.name ?? null,
    ActorAddr: actor.addr ?? null,
    ActorUserAgent: actor.userAgent ?? null,
    CauseType: event.Cause?.type ?? null,
    CauseIndex: event.Cause?.index ?? null,
    CauseNodeID: event.Cause?.nodeId ?? null,
    CauseEvalID: event.Cause?.evalId ?? null,
  };
}

/** The flat row of a change: its metadata, then the object (after it, or before a delete). */
export function flatRow(clusterId: string, event: ChangeEvent, time: string): ExportRow {
  const object = event.Op === "delete" && event.Before ? event.Before : event.Payload;
  return { ...changeColumns(clusterId, event, time), ...objectColumns(event.Topic, object) };
}

/**
 * The change in Debezium's envelope (`before`, `after`, `op` c/u/d,
 * `ts_ms`, `source`), so Kafka Connect sinks built for Debezium read it
 * unchanged (e.g. with its ExtractNewRecordState transform). The images are
 * the object's columns; `source` says where the change sits in the log.
 */
export function debeziumRow(clusterId: string, event: ChangeEvent, time: string) {
  const meta = changeColumns(clusterId, event, time);
  const image = (payload: Readonly<Record<string, unknown>> | null) =>
    payload === null
      ? null
      : { Key: event.Key, Namespace: event.Namespace, ...objectColumns(event.Topic, payload) };
  const ms = Date.parse(time);
  return {
    before: image(event.Before),
    after: event.Op === "delete" ? null : image(event.Payload),
    op: event.Op === "create" ? "c" : event.Op === "update" ? "u" : "d",
    ts_ms: ms,
    source: {
      connector: "chronomad",
      name: clusterId,
      ts_ms: ms,
      db: clusterId,
      table: event.Topic,
      index: event.Index,
      seq: event.Seq,
      record: event.Record,
      schema_version: event.SchemaVersion,
      row_version: ROW_VERSION,
      event_type: event.Type,
      actor_kind: meta.ActorKind,
      actor_id: meta.ActorID,
      actor_name: meta.ActorName,
      actor_addr: meta.ActorAddr,
      actor_user_agent: meta.ActorUserAgent,
      cause_type: meta.CauseType,
      cause_index: meta.CauseIndex,
      cause_node_id: meta.CauseNodeID,
      cause_eval_id: meta.CauseEvalID,
    },
  };
}
