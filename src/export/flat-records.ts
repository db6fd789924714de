import type { Frame, StreamEvent } from "../events/frames.ts";

/**
 * One exported change: scalar columns only, so it loads into a table as is.
 * Every record starts with the common columns; the rest depend on the topic
 * (TOPIC_COLUMNS). The README documents the same lists.
 */
export type FlatRecord = Record<string, string | number | boolean | null>;

export const COMMON_COLUMNS = ["Index", "Time", "Topic", "EventType", "Op", "Key", "Namespace"] as const;

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
    JobID: "JobID",
    TaskGroup: "TaskGroup",
    NodeID: "NodeID",
    EvalID: "EvalID",
    DeploymentID: "DeploymentID",
    ClientStatus: "ClientStatus",
    ClientDescription: "ClientDescription",
    DesiredStatus: "DesiredStatus",
    DesiredDescription: "DesiredDescription",
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
};

const DELETE_TYPES = /(Deregistration|Deleted)$/;

function field(payload: unknown, path: string): string | number | boolean | null {
  let v: unknown = payload;
  for (const part of path.split(".")) {
    if (typeof v !== "object" || v === null) return null;
    v = (v as Record<string, unknown>)[part];
  }
  return typeof v === "string" || typeof v === "number" || typeof v === "boolean" ? v : null;
}

export function flatten(frame: Frame, event: StreamEvent): FlatRecord {
  const record: FlatRecord = {
    Index: frame.Index,
    Time: frame.Time,
    Topic: event.Topic,
    EventType: event.Type,
    Op: DELETE_TYPES.test(event.Type) ? "delete" : "upsert",
    Key: event.Key,
    Namespace: event.Namespace,
  };
  const payload = Object.values(event.Payload)[0];
  for (const [column, path] of Object.entries(TOPIC_COLUMNS[event.Topic] ?? {})) {
    record[column] = field(payload, path);
  }
  return record;
}
