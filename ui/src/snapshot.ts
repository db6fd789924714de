import { getJson, type Params } from "./api.ts";
import { inParallel } from "./in-parallel.ts";
import type { AllocStub, JobDetail, JobStub, NodeStub } from "./types.ts";

/** The tables the cluster and diff views show, with the columns the contract names. */
export const TABLES = [
  { name: "jobs", title: "Jobs", kind: "job", columns: ["ID", "Namespace", "Type", "Status", "Version"] },
  { name: "nodes", title: "Nodes", kind: "node", columns: ["ID", "Name", "Status", "SchedulingEligibility"] },
  {
    name: "allocations",
    title: "Allocations",
    kind: "allocation",
    columns: ["ID", "JobID", "NodeID", "ClientStatus", "DesiredStatus"],
  },
] as const;

export type TableName = (typeof TABLES)[number]["name"];

export interface SnapshotRow {
  readonly id: string;
  /** Unique within the table: a job's ID is unique per namespace only. */
  readonly key: string;
  readonly namespace: string;
  readonly cells: Readonly<Record<string, string>>;
}

export interface Snapshot {
  /** The index the tables are as of. */
  readonly index: number;
  readonly tables: Readonly<Record<TableName, readonly SnapshotRow[]>>;
  /** The last index at or before `index` at which one of the three tables changed. */
  readonly lastChange: number;
  /** Jobs whose Version was not read (beyond MAX_VERSIONS). */
  readonly versionsSkipped: number;
}

/** Job versions read one request each: a cap keeps a large cluster's view fast. */
const MAX_VERSIONS = 200;

const cell = (v: unknown) => (v === undefined || v === null ? "" : String(v));

/**
 * The jobs, nodes and allocations of every namespace as of `index` (the
 * `?at_index` reads of src/api/view.ts), or now when `index` is undefined.
 * A job's Version is not in Nomad's list stub: it is read per job, as of the
 * same index.
 */
export async function loadSnapshot(index: number | undefined, signal: AbortSignal): Promise<Snapshot> {
  const at: Params = index === undefined ? {} : { at_index: index };
  const [jobs, nodes, allocs] = await Promise.all([
    getJson<JobStub[]>("/v1/jobs", { ...at, namespace: "*" }, signal),
    getJson<NodeStub[]>("/v1/nodes", at, signal),
    getJson<AllocStub[]>("/v1/allocations", { ...at, namespace: "*" }, signal),
  ]);
  const withVersion = jobs.body.slice(0, MAX_VERSIONS);
  const versions = await inParallel(withVersion, 4, (j) =>
    getJson<JobDetail>(`/v1/job/${encodeURIComponent(j.ID)}`, { ...at, namespace: j.Namespace }, signal).then(
      (a) => a.body.Version,
      () => undefined,
    ),
  );
  const lastChange = Math.max(jobs.index, nodes.index, allocs.index);
  return {
    index: index ?? lastChange,
    lastChange,
    versionsSkipped: jobs.body.length - withVersion.length,
    tables: {
      jobs: jobs.body.map((j, i) => ({
        id: j.ID,
        key: `${j.Namespace}/${j.ID}`,
        namespace: j.Namespace,
        cells: {
          ID: j.ID,
          Namespace: j.Namespace,
          Type: j.Type,
          Status: j.Status,
          Version: cell(versions[i]),
        },
      })),
      nodes: nodes.body.map((n) => ({
        id: n.ID,
        key: n.ID,
        namespace: "",
        cells: { ID: n.ID, Name: n.Name, Status: n.Status, SchedulingEligibility: n.SchedulingEligibility },
      })),
      allocations: allocs.body.map((a) => ({
        id: a.ID,
        key: a.ID,
        namespace: a.Namespace,
        cells: {
          ID: a.ID,
          JobID: a.JobID,
          NodeID: a.NodeID,
          ClientStatus: a.ClientStatus,
          DesiredStatus: a.DesiredStatus,
        },
      })),
    },
  };
}

/**
 * The log's last index: the state hash names it (operator read); without
 * that permission, the newest of the three tables' indexes.
 */
export async function latestIndex(signal: AbortSignal): Promise<number> {
  try {
    const hash = await getJson<{ Index: number }>("/v1/operator/state-hash", {}, signal);
    return hash.body.Index;
  } catch (err) {
    if (signal.aborted) throw err;
    const reads = await Promise.all(
      ["/v1/jobs", "/v1/nodes", "/v1/allocations"].map((p) =>
        getJson<unknown>(p, p === "/v1/nodes" ? {} : { namespace: "*" }, signal),
      ),
    );
    return Math.max(...reads.map((r) => r.index));
  }
}
