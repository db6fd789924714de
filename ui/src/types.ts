/** The API shapes the page reads (chronomad's projections/history.ts and Nomad's list stubs), only the fields used. */

export interface Actor {
  readonly kind: "token" | "node" | "workload" | "server" | "anonymous" | "remote";
  readonly id: string;
  readonly name?: string;
  readonly addr?: string;
}

export interface HistoryEntry {
  readonly Index: number;
  readonly Time: string;
  readonly Field: string;
  readonly From: unknown;
  readonly To: unknown;
  readonly Cause: Readonly<Record<string, unknown>>;
  readonly Actor: Actor;
  readonly Diff?: JobDiff;
}

export interface JobDiff {
  readonly Type: string;
  readonly Fields?: readonly DiffField[];
  readonly Objects?: readonly DiffObject[];
  readonly TaskGroups?: readonly DiffGroup[];
  readonly Truncated?: true;
}

export interface DiffField {
  readonly Type: string;
  readonly Name: string;
  readonly Old: string;
  readonly New: string;
}

export interface DiffObject {
  readonly Type: string;
  readonly Name: string;
  readonly Fields?: readonly DiffField[];
  readonly Objects?: readonly DiffObject[];
}

export interface DiffGroup {
  readonly Type: string;
  readonly Name: string;
  readonly Fields?: readonly DiffField[];
  readonly Objects?: readonly DiffObject[];
  readonly Tasks?: readonly DiffObject[];
}

export interface JobStub {
  readonly ID: string;
  readonly Namespace: string;
  readonly Type: string;
  readonly Status: string;
  readonly ModifyIndex: number;
}

export interface JobDetail {
  readonly ID: string;
  readonly Version: number;
}

export interface NodeStub {
  readonly ID: string;
  readonly Name: string;
  readonly Status: string;
  readonly SchedulingEligibility: string;
  readonly ModifyIndex: number;
}

export interface AllocStub {
  readonly ID: string;
  readonly Namespace: string;
  readonly JobID: string;
  readonly NodeID: string;
  readonly ClientStatus: string;
  readonly DesiredStatus: string;
  readonly ModifyIndex: number;
}

/** What a timeline can be opened on: the history routes of src/api/plugins/history.ts. */
export const TIMELINE_KINDS = ["allocation", "node", "job", "evaluation"] as const;
export type TimelineKind = (typeof TIMELINE_KINDS)[number];

export const isTimelineKind = (s: string): s is TimelineKind =>
  (TIMELINE_KINDS as readonly string[]).includes(s);
