import type { ApplyContext } from "../src/store/projection.ts";
import type { AnyTable, IndexedRow } from "../src/store/table.ts";
import { Table } from "../src/store/table.ts";
import type { Envelope } from "../streams/event-schema.ts";
import type { JobRegistered, JobSpec } from "../streams/jobs.ts";
import {
  DISPATCH_LAUNCH_SUFFIX,
  type JobDispatched,
  type PeriodicJobLaunched,
  periodicChildID,
} from "../streams/periodic.ts";
import { jobKey } from "./evals.ts";
import type { JobRow, JobStatus, JobSummaryRow } from "./jobs.ts";

/**
 * Nomad's PeriodicLaunch: when a periodic job last launched (unix ms here;
 * Nomad's is a time). Its first entry is the time the job was registered,
 * so that a launch missed while no leader ran can be told apart.
 */
export interface PeriodicLaunchRow {
  readonly ID: string;
  readonly Namespace: string;
  readonly Launch: number;
  readonly CreateIndex: number;
  readonly ModifyIndex: number;
}

export function periodicLaunchesTable(): Table<PeriodicLaunchRow> {
  return new Table<PeriodicLaunchRow>({
    name: "periodic_launches",
    key: (l) => jobKey(l.Namespace, l.ID),
  });
}

/** Nomad's IsParameterized: a dispatched child keeps its parent's block but is not parameterized itself. */
export function isParameterized(job: Pick<JobSpec, "ParameterizedJob" | "Dispatched">): boolean {
  return !!job.ParameterizedJob && job.Dispatched !== true;
}

/** Nomad's IsPeriodicActive: a periodic job the dispatcher tracks (a block without Enabled is enabled, as Nomad's client fills it in). */
export function isPeriodicActive(
  job: Pick<JobSpec, "Periodic" | "ParameterizedJob" | "Dispatched" | "Stop">,
): boolean {
  return !!job.Periodic && job.Periodic.Enabled !== false && !job.Stop && !isParameterized(job);
}

export interface JobChildTables {
  readonly jobs: Table<JobRow>;
  readonly summaries: Table<JobSummaryRow>;
  readonly launches: Table<PeriodicLaunchRow>;
}

/** Registers a derived job the way Job.Register would (the jobs projection's own register). */
export type RegisterChild = (ctx: ApplyContext, event: Envelope, data: JobRegistered) => void;

/** Nomad's job statuses as the parent's JobChildrenSummary counts them. */
const CHILD_BUCKET: Readonly<Record<JobStatus, "Pending" | "Running" | "Dead">> = {
  pending: "Pending",
  running: "Running",
  dead: "Dead",
};

/**
 * Nomad's setJobSummary and DeleteJobTxn for a child job: the parent's
 * Children move as the child is created, changes status, or is removed.
 * Nothing when the parent has no summary (it was purged).
 */
export function childChanged(
  ctx: ApplyContext,
  summaries: Table<JobSummaryRow>,
  before: JobRow | undefined,
  after: JobRow | undefined,
): void {
  const row = after ?? before;
  if (!row || row.ParentID === "" || row.ParentID === undefined) return;
  if (before && after && before.Status === after.Status) return;
  const key = jobKey(row.Namespace, row.ParentID);
  const parent = summaries.get(key);
  if (!parent) return;
  const children = { ...parent.Children };
  if (before) {
    const b = CHILD_BUCKET[before.Status];
    if (children[b] > 0) children[b] -= 1;
  }
  if (after) children[CHILD_BUCKET[after.Status]] += 1;
  ctx.put(summaries, { ...parent, Children: children, ModifyIndex: ctx.index });
}

/**
 * The jobs projection's ApplyContext, seen through a wrapper that counts
 * each put or delete of a child job in its parent's summary. One instance,
 * re-pointed at each apply: the projection runs for every allocation change.
 */
export class ChildCountingContext implements ApplyContext {
  private inner!: ApplyContext;

  constructor(
    private readonly jobs: Table<JobRow>,
    private readonly summaries: Table<JobSummaryRow>,
  ) {}

  wrap(ctx: ApplyContext): ApplyContext {
    this.inner = ctx;
    return this;
  }

  get index(): number {
    return this.inner.index;
  }

  get rejected(): boolean {
    return this.inner.rejected;
  }

  put<R extends IndexedRow>(table: Table<R>, row: NoInfer<R>): R | undefined {
    const before = this.inner.put(table, row);
    if ((table as AnyTable) === this.jobs) {
      childChanged(this.inner, this.summaries, before as JobRow | undefined, row as unknown as JobRow);
    }
    return before;
  }

  delete<R extends IndexedRow>(table: Table<R>, key: string): R | undefined {
    const before = this.inner.delete(table, key);
    if ((table as AnyTable) === this.jobs && before) {
      childChanged(this.inner, this.summaries, before as unknown as JobRow, undefined);
    }
    return before;
  }

  touch(table: AnyTable): void {
    this.inner.touch(table);
  }

  reject(code: number, reason: string): void {
    this.inner.reject(code, reason);
  }
}

/** The record of a launch or a registration of an active periodic job (Nomad's UpsertPeriodicLaunch). */
export function recordLaunch(
  ctx: ApplyContext,
  t: JobChildTables,
  namespace: string,
  id: string,
  at: number,
) {
  const existing = t.launches.get(jobKey(namespace, id));
  ctx.put(t.launches, {
    ID: id,
    Namespace: namespace,
    Launch: at,
    CreateIndex: existing?.CreateIndex ?? ctx.index,
    ModifyIndex: ctx.index,
  });
}

/**
 * A periodic launch, checked again at apply: the parent must still be an
 * active periodic job, the launch after its last one, and (for a scheduled
 * tick) the child new. Two leaders (or a leader restarted) launching the
 * same tick write two records; the second is refused here and changes nothing.
 */
export function applyPeriodicLaunch(
  ctx: ApplyContext,
  t: JobChildTables,
  event: Envelope,
  data: PeriodicJobLaunched,
  registerChild: RegisterChild,
) {
  const key = jobKey(data.Namespace, data.ParentID);
  const parent = t.jobs.get(key);
  if (!parent) return ctx.reject(404, "job not found");
  if (!parent.Periodic) return ctx.reject(400, "can't force launch non-periodic job");
  if (!isPeriodicActive(parent)) {
    return ctx.reject(400, `can't force run non-tracked job ${JSON.stringify(data.ParentID)}`);
  }
  if (data.ChildID !== periodicChildID(data.ParentID, data.LaunchTime)) {
    return ctx.reject(400, `child job ID ${JSON.stringify(data.ChildID)} does not name the launch time`);
  }
  const last = t.launches.get(key);
  if (last && data.LaunchTime <= last.Launch) {
    return ctx.reject(
      409,
      `periodic launch at ${new Date(data.LaunchTime).toISOString()} is not after the last launch at ${new Date(last.Launch).toISOString()}`,
    );
  }
  // A forced launch in the same second as an earlier launch derives the same
  // child ID; Nomad's ForceEval registers it again (an upsert with a new
  // evaluation), so only a scheduled tick is refused for an existing child.
  if (!data.Forced && t.jobs.has(jobKey(data.Namespace, data.ChildID))) {
    return ctx.reject(409, `job ${JSON.stringify(data.ChildID)} already exists`);
  }
  registerChild(ctx, event, {
    Job: periodicChild(parent, data.ChildID),
    Eval: data.Eval,
    EnforceIndex: false,
    JobModifyIndex: 0,
    Submission: null,
  });
  if (ctx.rejected) return;
  recordLaunch(ctx, t, data.Namespace, data.ParentID, data.LaunchTime);
}

/** Nomad's Job.Dispatch, checked again at apply against the parent as it is now. */
export function applyDispatch(
  ctx: ApplyContext,
  t: JobChildTables,
  event: Envelope,
  data: JobDispatched,
  registerChild: RegisterChild,
) {
  const parent = t.jobs.get(jobKey(data.Namespace, data.ParentID));
  if (!parent) return ctx.reject(404, "parameterized job not found");
  if (!isParameterized(parent)) {
    return ctx.reject(400, `Specified job "${data.ParentID}" is not a parameterized job`);
  }
  if (parent.Stop) return ctx.reject(400, `Specified job "${data.ParentID}" is stopped`);
  if (!data.ChildID.startsWith(`${data.ParentID}${DISPATCH_LAUNCH_SUFFIX}`)) {
    return ctx.reject(
      400,
      `child job ID ${JSON.stringify(data.ChildID)} is not a dispatch of ${data.ParentID}`,
    );
  }
  // Two dispatches with one idempotency token raced: the first one's child stands.
  if (data.IdempotencyToken !== "" && liveChildWithToken(t.jobs, parent, data.IdempotencyToken)) {
    return ctx.reject(
      409,
      `a dispatched child of "${data.ParentID}" with this idempotency token is not dead yet`,
    );
  }
  if (t.jobs.has(jobKey(data.Namespace, data.ChildID))) {
    return ctx.reject(409, `job ${JSON.stringify(data.ChildID)} already exists`);
  }
  registerChild(ctx, event, {
    Job: dispatchedChild(parent, data),
    Eval: data.Eval,
    EnforceIndex: false,
    JobModifyIndex: 0,
    Submission: null,
  });
}

/** Nomad 1.6's idempotent dispatch: a child of `parent`, not dead, dispatched with `token`. */
export function liveChildWithToken(jobs: Table<JobRow>, parent: JobRow, token: string): JobRow | undefined {
  const prefix = `${jobKey(parent.Namespace, parent.ID)}${DISPATCH_LAUNCH_SUFFIX}`;
  for (const child of jobs.withPrefix(prefix)) {
    if (child.ParentID === parent.ID && child.Status !== "dead" && child.DispatchIdempotencyToken === token) {
      return child;
    }
  }
  return undefined;
}

/** The fields of a stored row that the server decides: a child gets its own. */
function specOf(parent: JobRow): Record<string, unknown> {
  const {
    Status: _status,
    StatusDescription: _description,
    Stable: _stable,
    Version: _version,
    SubmitTime: _submit,
    CreateIndex: _create,
    ModifyIndex: _modify,
    JobModifyIndex: _jobModify,
    ...spec
  } = parent;
  return spec;
}

/** Nomad's deriveJob: the parent's copy, named for the launch, not periodic. */
function periodicChild(parent: JobRow, childID: string): JobSpec {
  const spec = specOf(parent);
  spec.ID = childID;
  spec.Name = childID;
  spec.ParentID = parent.ID;
  spec.Periodic = null;
  return spec as JobSpec;
}

/** Nomad's Job.Dispatch child: Dispatched, the caller's meta over the parent's, the payload. */
function dispatchedChild(parent: JobRow, data: JobDispatched): JobSpec {
  const spec = specOf(parent);
  spec.ID = data.ChildID;
  spec.Name = data.ChildID;
  spec.ParentID = parent.ID;
  spec.Dispatched = true;
  spec.DispatchIdempotencyToken = data.IdempotencyToken;
  const meta =
    data.Meta && Object.keys(data.Meta).length > 0 ? { ...parent.Meta, ...data.Meta } : parent.Meta;
  spec.Meta = meta;
  spec.Payload = data.Payload === "" ? null : data.Payload;
  return spec as JobSpec;
}
