import { diffJobs, type FieldDiff, type ObjectDiff } from "../src/jobs/job-diff.ts";

/**
 * What the audit trail shows of a few changes beyond "field from -> to": a
 * drain's terms, a job version's diff, a client's task events. Pure
 * functions of rows; kept small, since every entry stays for good.
 */

type Row = Readonly<Record<string, unknown>>;

/** Longest string value an entry keeps (diff values, task event messages). */
const MAX_TEXT = 256;
/** Field changes one job diff summary keeps, across all its levels. */
const MAX_DIFF_FIELDS = 40;
/** Task events one client update adds to an allocation's history; the rest are counted. */
export const MAX_TASK_EVENTS_PER_UPDATE = 20;

function bounded(s: string): string {
  return s.length > MAX_TEXT ? `${s.slice(0, MAX_TEXT)}…` : s;
}

/**
 * A node's drain as its history shows it: the strategy's terms and the
 * drain's Meta (where `nomad node drain -m` puts its `message`); null when
 * the node is not draining.
 */
export function drainTerms(row: Row): unknown {
  const strategy = row.DrainStrategy as
    | { DrainSpec?: { Deadline?: number; IgnoreSystemJobs?: boolean }; ForceDeadline?: string }
    | null
    | undefined;
  if (!strategy) return null;
  const lastDrain = row.LastDrain as { Meta?: Row | null } | null | undefined;
  return {
    Deadline: strategy.DrainSpec?.Deadline ?? 0,
    IgnoreSystemJobs: strategy.DrainSpec?.IgnoreSystemJobs ?? false,
    ForceDeadline: strategy.ForceDeadline ?? "",
    Meta: lastDrain?.Meta ?? null,
  };
}

/** One changed field of a diff, its values cut to MAX_TEXT. */
export interface DiffField {
  readonly Name: string;
  readonly Type: string;
  readonly Old: string;
  readonly New: string;
}

/** A changed object (a block such as `update` or `restart`), one level deep. */
export interface DiffObject {
  readonly Name: string;
  readonly Type: string;
  readonly Fields?: readonly DiffField[];
  /** Objects inside it that changed, by name only. */
  readonly Objects?: readonly { readonly Name: string; readonly Type: string }[];
}

export interface DiffTask {
  readonly Name: string;
  readonly Type: string;
  readonly Fields?: readonly DiffField[];
  readonly Objects?: readonly DiffObject[];
}

export interface DiffGroup extends DiffTask {
  readonly Tasks?: readonly DiffTask[];
}

/**
 * A summary of Nomad's JobDiff between two versions: its Type, and the
 * changed fields and objects of the job, its task groups and their tasks
 * (unchanged ones left out). At most MAX_DIFF_FIELDS field changes in all;
 * `Truncated` when more were left out.
 */
export interface JobDiffSummary {
  readonly Type: string;
  readonly Fields?: readonly DiffField[];
  readonly Objects?: readonly DiffObject[];
  readonly TaskGroups?: readonly DiffGroup[];
  readonly Truncated?: true;
}

interface Budget {
  left: number;
  truncated: boolean;
}

/** The diff of a job from `before` to `after`, or undefined if it cannot be computed. */
export function jobDiffSummary(before: Row, after: Row): JobDiffSummary | undefined {
  let diff: ReturnType<typeof diffJobs>;
  try {
    diff = diffJobs(before, after, false);
  } catch {
    // Two rows of one job always share an ID; a diff that fails anyway must
    // not fail the apply of the record that changed the job.
    return undefined;
  }
  const budget: Budget = { left: MAX_DIFF_FIELDS, truncated: false };
  const out: {
    Type: string;
    Fields?: DiffField[];
    Objects?: DiffObject[];
    TaskGroups?: DiffGroup[];
    Truncated?: true;
  } = { Type: diff.Type };
  const fields = summarizeFields(diff.Fields, budget);
  if (fields) out.Fields = fields;
  const objects = summarizeObjects(diff.Objects, budget);
  if (objects) out.Objects = objects;
  const groups: DiffGroup[] = [];
  for (const g of diff.TaskGroups ?? []) {
    if (g.Type === "None") continue;
    const group: {
      Name: string;
      Type: string;
      Fields?: DiffField[];
      Objects?: DiffObject[];
      Tasks?: DiffTask[];
    } = { Name: g.Name, Type: g.Type };
    const gf = summarizeFields(g.Fields, budget);
    if (gf) group.Fields = gf;
    const go = summarizeObjects(g.Objects, budget);
    if (go) group.Objects = go;
    const tasks: DiffTask[] = [];
    for (const t of g.Tasks ?? []) {
      if (t.Type === "None") continue;
      const task: { Name: string; Type: string; Fields?: DiffField[]; Objects?: DiffObject[] } = {
        Name: t.Name,
        Type: t.Type,
      };
      const tf = summarizeFields(t.Fields, budget);
      if (tf) task.Fields = tf;
      const to = summarizeObjects(t.Objects, budget);
      if (to) task.Objects = to;
      tasks.push(task);
    }
    if (tasks.length > 0) group.Tasks = tasks;
    groups.push(group);
  }
  if (groups.length > 0) out.TaskGroups = groups;
  if (budget.truncated) out.Truncated = true;
  return out;
}

function summarizeFields(fields: readonly FieldDiff[] | null, budget: Budget): DiffField[] | undefined {
  if (!fields) return undefined;
  const out: DiffField[] = [];
  for (const f of fields) {
    if (f.Type === "None") continue;
    if (budget.left <= 0) {
      budget.truncated = true;
      break;
    }
    budget.left--;
    out.push({ Name: f.Name, Type: f.Type, Old: bounded(f.Old), New: bounded(f.New) });
  }
  return out.length > 0 ? out : undefined;
}

function summarizeObjects(objects: readonly ObjectDiff[] | null, budget: Budget): DiffObject[] | undefined {
  if (!objects) return undefined;
  const out: DiffObject[] = [];
  for (const o of objects) {
    if (o.Type === "None") continue;
    const object: {
      Name: string;
      Type: string;
      Fields?: DiffField[];
      Objects?: { Name: string; Type: string }[];
    } = { Name: o.Name, Type: o.Type };
    const fields = summarizeFields(o.Fields, budget);
    if (fields) object.Fields = fields;
    const inner = (o.Objects ?? [])
      .filter((x) => x.Type !== "None")
      .map((x) => ({ Name: x.Name, Type: x.Type }));
    if (inner.length > 0) object.Objects = inner;
    out.push(object);
  }
  return out.length > 0 ? out : undefined;
}

/** A task event as an allocation's history shows it. */
export interface TaskEventEntry {
  readonly Task: string;
  readonly Type: string;
  /** Unix nanoseconds, the client's time, as Nomad's TaskEvent has it. */
  readonly Time: number;
  readonly DisplayMessage?: string;
  /** Nomad's raw Message, when the client gave one besides the display message. */
  readonly Message?: string;
}

/**
 * The task events a client update adds: per task, those past the newest the
 * allocation already had (by Time; of equal times, those past the count
 * already seen), since clients keep only their latest events and drop old
 * ones from the front. At most MAX_TASK_EVENTS_PER_UPDATE, then one
 * `{ Omitted: n }`. Cheap when nothing changed: task states the update
 * carries again unchanged are skipped by reference or after a few
 * comparisons.
 */
export function newTaskEvents(
  before: Row | null,
  after: Row | null,
): (TaskEventEntry | { Omitted: number })[] {
  const out: (TaskEventEntry | { Omitted: number })[] = [];
  if (!after) return out;
  let omitted = 0;
  for (const task in after) {
    const now = eventsOf(after[task]);
    if (now.length === 0) continue;
    const was = before ? eventsOf(before[task]) : NO_EVENTS;
    if (was === now) continue;
    let newest = Number.NEGATIVE_INFINITY;
    let atNewest = 0;
    for (const e of was) {
      const t = timeOf(e);
      if (t > newest) {
        newest = t;
        atNewest = 1;
      } else if (t === newest) atNewest++;
    }
    for (const e of now) {
      const t = timeOf(e);
      if (t < newest) continue;
      if (t === newest && atNewest > 0) {
        atNewest--;
        continue;
      }
      if (out.length >= MAX_TASK_EVENTS_PER_UPDATE) omitted++;
      else out.push(taskEventEntry(task, e, t));
    }
  }
  if (omitted > 0) out.push({ Omitted: omitted });
  return out;
}

const NO_EVENTS: readonly Row[] = [];

function eventsOf(state: unknown): readonly Row[] {
  if (typeof state !== "object" || state === null) return NO_EVENTS;
  const events = (state as Row).Events;
  return Array.isArray(events) ? (events as Row[]) : NO_EVENTS;
}

function timeOf(e: Row): number {
  return typeof e.Time === "number" ? e.Time : 0;
}

function taskEventEntry(Task: string, e: Row, Time: number): TaskEventEntry {
  const display = typeof e.DisplayMessage === "string" ? e.DisplayMessage : "";
  const message = typeof e.Message === "string" ? e.Message : "";
  const Type = typeof e.Type === "string" ? e.Type : "";
  // One literal for each set of fields, in the same order: a field added
  // after the literal goes to a property array of its own (and spare
  // slots), kept with the entry in its history row's Latest.
  const withMessage = message !== "" && message !== display;
  if (display === "")
    return withMessage ? { Task, Type, Time, Message: bounded(message) } : { Task, Type, Time };
  const DisplayMessage = bounded(display);
  return withMessage
    ? { Task, Type, Time, DisplayMessage, Message: bounded(message) }
    : { Task, Type, Time, DisplayMessage };
}
