import {
  deepEqual,
  field,
  flatten,
  type GoValue,
  goInt,
  list,
  str,
  strings,
  toGo,
  zeroOf,
} from "./go-values.ts";
import {
  addObject,
  affinityDiffs,
  append,
  constraintDiffs,
  type DiffType,
  diffsByName,
  type FieldDiff,
  fieldDiffs,
  goQuote,
  JobDiffError,
  keyedDiffs,
  nonNull,
  type ObjectDiff,
  objectDiff,
  present,
  primitiveObjectDiff,
  sides,
  sortFields,
  sortObjects,
  stringSetDiff,
  typeFromFields,
} from "./job-diff-model.ts";
import {
  CONSUL,
  CSI_MOUNT_OPTIONS,
  EPHEMERAL_DISK,
  JOB,
  MULTIREGION,
  MULTIREGION_REGION,
  MULTIREGION_STRATEGY,
  PARAMETERIZED_JOB,
  PERIODIC_CONFIG,
  RESCHEDULE_POLICY,
  RESTART_POLICY,
  TASK_GROUP,
  UPDATE_STRATEGY,
  VOLUME_REQUEST,
} from "./job-diff-types.ts";
import { networkResourceDiffs } from "./resources-diff.ts";
import { serviceDiffs } from "./service-diff.ts";
import { type TaskDiff, taskDiffs } from "./task-diff.ts";

/**
 * Nomad's job diff (nomad/structs/diff.go, v1.6.1): what `nomad job plan`
 * and `nomad job history -p` print, as `/v1/job/:id/plan` (with Diff) and
 * `/v1/job/:id/versions?diffs=true` answer it. Pure functions of two jobs
 * as JSON.
 *
 * Field by field the output is Nomad's: the primitive fields of the job, a
 * group or a task are compared as flat maps (`Meta[key]` included), nested
 * structs are object diffs, lists of constraints, affinities, artifacts and
 * networks are sets, services and templates are matched as Nomad matches
 * them. Contextual mode (plan, versions) keeps the unchanged fields of a
 * changed object, as `None`, so that the CLI can show them beside the
 * change. Where Go's reflection gives the answer (which fields count,
 * what a missing one prints as), go-values.ts and job-diff-types.ts stand
 * in for it.
 */

export { taskDiff } from "./task-diff.ts";
export type { DiffType, FieldDiff, ObjectDiff, TaskDiff };
export { JobDiffError };

export interface TaskGroupDiff {
  Type: DiffType;
  Name: string;
  Fields: FieldDiff[] | null;
  Objects: ObjectDiff[] | null;
  Tasks: TaskDiff[] | null;
  /** Set by the plan's annotations: how many allocations each kind of update touches. */
  Updates: Record<string, number> | null;
}

export interface JobDiff {
  Type: DiffType;
  ID: string;
  Fields: FieldDiff[] | null;
  Objects: ObjectDiff[] | null;
  TaskGroups: TaskGroupDiff[] | null;
}

/** What the server decides, or keeps secret: never part of a job's diff. */
const JOB_FILTER = [
  "ID",
  "Status",
  "StatusDescription",
  "Version",
  "Stable",
  "CreateIndex",
  "ModifyIndex",
  "JobModifyIndex",
  "Update",
  "SubmitTime",
  "NomadTokenID",
  "VaultToken",
];

/**
 * Job.Diff: `oldJob` to `newJob` (either may be absent: the job is then
 * Added or Deleted). Throws JobDiffError when their IDs differ.
 */
export function diffJobs(oldJob: unknown, newJob: unknown, contextual: boolean): JobDiff {
  const diff: JobDiff = { Type: "None", ID: "", Fields: null, Objects: null, TaskGroups: null };
  if (!present(oldJob) && !present(newJob)) return diff;
  // An absent job is compared as Nomad's empty Job{}.
  const j = present(oldJob) ? toGo(oldJob, JOB) : zeroOf(JOB);
  const other = present(newJob) ? toGo(newJob, JOB) : zeroOf(JOB);
  let oldFlat: Record<string, string> | null = null;
  let newFlat: Record<string, string> | null = null;
  if (!present(oldJob)) {
    diff.Type = "Added";
    newFlat = flatten(other, JOB, JOB_FILTER, true);
    diff.ID = str(other, "ID");
  } else if (!present(newJob)) {
    diff.Type = "Deleted";
    oldFlat = flatten(j, JOB, JOB_FILTER, true);
    diff.ID = str(j, "ID");
  } else {
    if (str(j, "ID") !== str(other, "ID"))
      throw new JobDiffError(
        `can not diff jobs with different IDs: ${goQuote(str(j, "ID"))} and ${goQuote(str(other, "ID"))}`,
      );
    oldFlat = flatten(j, JOB, JOB_FILTER, true);
    newFlat = flatten(other, JOB, JOB_FILTER, true);
    diff.ID = str(other, "ID");
  }

  diff.Fields = fieldDiffs(oldFlat, newFlat, false);
  const dcs = stringSetDiff(
    strings(j, "Datacenters"),
    strings(other, "Datacenters"),
    "Datacenters",
    contextual,
  );
  if (dcs && dcs.Type !== "None") diff.Objects = append(diff.Objects, dcs);
  diff.Objects = append(
    diff.Objects,
    ...(constraintDiffs(j, other, contextual) ?? []),
    ...(affinityDiffs(j, other, contextual) ?? []),
  );
  diff.TaskGroups = taskGroupDiffs(list(j, "TaskGroups"), list(other, "TaskGroups"), contextual);
  diff.Objects = append(
    diff.Objects,
    ...nonNull(
      primitiveObjectDiff(
        field(j, "Periodic"),
        field(other, "Periodic"),
        PERIODIC_CONFIG,
        null,
        "Periodic",
        contextual,
      ),
    ),
    ...nonNull(
      parameterizedJobDiff(field(j, "ParameterizedJob"), field(other, "ParameterizedJob"), contextual),
    ),
    ...nonNull(multiregionDiff(field(j, "Multiregion"), field(other, "Multiregion"), contextual)),
  );

  // Edited when anything below changed: the fields filtered out change with every version.
  if (
    diff.Type === "None" &&
    [...(diff.Fields ?? []), ...(diff.Objects ?? []), ...(diff.TaskGroups ?? [])].some(
      (d) => d.Type !== "None",
    )
  )
    diff.Type = "Edited";
  return diff;
}

/**
 * The groups of two jobs matched by name (a later group with the same name
 * replaces an earlier one, as in Go's map), sorted by name.
 */
function taskGroupDiffs(
  oldList: readonly GoValue[],
  newList: readonly GoValue[],
  contextual: boolean,
): TaskGroupDiff[] | null {
  return diffsByName(oldList, newList, (a, b) => taskGroupDiff(a, b, contextual));
}

/** TaskGroup.Diff. */
export function taskGroupDiff(tg: GoValue, other: GoValue, contextual: boolean): TaskGroupDiff {
  const diff: TaskGroupDiff = {
    Type: "None",
    Name: "",
    Fields: null,
    Objects: null,
    Tasks: null,
    Updates: null,
  };
  if (tg === null && other === null) return diff;
  const filter = ["Name"];
  let oldG = tg;
  let newG = other;
  let oldFlat: Record<string, string> | null;
  let newFlat: Record<string, string> | null;
  if (tg === null || other === null) {
    // One side missing: the whole group is Added or Deleted.
    diff.Type = tg === null ? "Added" : "Deleted";
    diff.Name = str(tg ?? other, "Name");
    oldG = tg ?? zeroOf(TASK_GROUP);
    newG = other ?? zeroOf(TASK_GROUP);
    oldFlat = tg === null ? null : flatten(tg, TASK_GROUP, filter, true);
    newFlat = other === null ? null : flatten(other, TASK_GROUP, filter, true);
  } else {
    if (!deepEqual(tg, other)) diff.Type = "Edited";
    if (str(tg, "Name") !== str(other, "Name"))
      throw new JobDiffError(
        `can not diff task groups with different names: ${goQuote(str(tg, "Name"))} and ${goQuote(str(other, "Name"))}`,
      );
    diff.Name = str(other, "Name");
    oldFlat = flatten(tg, TASK_GROUP, filter, true);
    newFlat = flatten(other, TASK_GROUP, filter, true);
  }

  // These are *time.Duration, skipped by the primitive walk: Nomad adds
  // them by hand, in nanoseconds, and only when both groups exist.
  if (oldFlat && newFlat) {
    for (const name of ["ShutdownDelay", "StopAfterClientDisconnect", "MaxClientDisconnect"]) {
      oldFlat[name] = durationField(oldG, name);
      newFlat[name] = durationField(newG, name);
    }
  }
  diff.Fields = fieldDiffs(oldFlat, newFlat, false);

  const objects: ObjectDiff[] = [
    ...(constraintDiffs(oldG, newG, contextual) ?? []),
    ...(affinityDiffs(oldG, newG, contextual) ?? []),
    ...nonNull(
      primitiveObjectDiff(
        field(oldG, "RestartPolicy"),
        field(newG, "RestartPolicy"),
        RESTART_POLICY,
        null,
        "RestartPolicy",
        contextual,
      ),
    ),
    ...nonNull(
      primitiveObjectDiff(
        field(oldG, "ReschedulePolicy"),
        field(newG, "ReschedulePolicy"),
        RESCHEDULE_POLICY,
        null,
        "ReschedulePolicy",
        contextual,
      ),
    ),
    ...nonNull(
      primitiveObjectDiff(
        field(oldG, "EphemeralDisk"),
        field(newG, "EphemeralDisk"),
        EPHEMERAL_DISK,
        null,
        "EphemeralDisk",
        contextual,
      ),
    ),
    ...nonNull(
      primitiveObjectDiff(field(oldG, "Consul"), field(newG, "Consul"), CONSUL, null, "Consul", contextual),
    ),
    ...nonNull(
      primitiveObjectDiff(
        field(oldG, "Update"),
        field(newG, "Update"),
        UPDATE_STRATEGY,
        ["Stagger"],
        "Update",
        contextual,
      ),
    ),
    ...(networkResourceDiffs(list(oldG, "Networks"), list(newG, "Networks"), contextual) ?? []),
    ...(serviceDiffs(list(oldG, "Services"), list(newG, "Services"), contextual) ?? []),
    ...(volumeDiffs(field(oldG, "Volumes"), field(newG, "Volumes"), contextual) ?? []),
  ];
  diff.Objects = append(diff.Objects, ...objects);
  diff.Tasks = taskDiffs(list(oldG, "Tasks"), list(newG, "Tasks"), contextual);
  return diff;
}

function durationField(v: GoValue, name: string): string {
  const d = field(v, name);
  return typeof d === "number" ? goInt(d) : "";
}

function parameterizedJobDiff(oldP: GoValue, newP: GoValue, contextual: boolean): ObjectDiff | null {
  const s = sides(oldP, newP, PARAMETERIZED_JOB);
  if (!s) return null;
  const diff = objectDiff(s.type, "ParameterizedJob", fieldDiffs(s.oldFlat, s.newFlat, contextual));
  addObject(
    diff,
    stringSetDiff(strings(s.old, "MetaOptional"), strings(s.new, "MetaOptional"), "MetaOptional", contextual),
  );
  addObject(
    diff,
    stringSetDiff(strings(s.old, "MetaRequired"), strings(s.new, "MetaRequired"), "MetaRequired", contextual),
  );
  return diff;
}

/** multiregionDiff: the strategy and the regions by name; never null once the two differ. */
function multiregionDiff(oldM: GoValue, newM: GoValue, contextual: boolean): ObjectDiff | null {
  const s = sides(oldM, newM, MULTIREGION);
  if (!s) return null;
  // An added multiregion block is first canonicalized (an empty strategy),
  // a deleted one is compared with a bare one (no strategy): Nomad's asymmetry.
  const oldStrategy = oldM === null ? zeroOf(MULTIREGION_STRATEGY) : field(oldM, "Strategy");
  const newStrategy = field(s.new, "Strategy");
  const diff = objectDiff(s.type, "Multiregion", null);
  addObject(
    diff,
    primitiveObjectDiff(oldStrategy, newStrategy, MULTIREGION_STRATEGY, [], "Strategy", contextual),
  );
  diff.Objects = append(
    diff.Objects,
    ...(keyedDiffs(
      list(s.old, "Regions"),
      list(s.new, "Regions"),
      (r) => str(r, "Name"),
      (o, n) => regionDiff(o, n, contextual),
    ) ?? []),
  );
  sortFields(diff.Fields);
  sortObjects(diff.Objects);
  return diff;
}

function regionDiff(r: GoValue, other: GoValue, contextual: boolean): ObjectDiff | null {
  const s = sides(r, other, MULTIREGION_REGION);
  if (!s) return null;
  const diff = objectDiff(s.type, "Region", fieldDiffs(s.oldFlat, s.newFlat, contextual));
  const dcs = stringSetDiff(
    strings(s.old, "Datacenters"),
    strings(s.new, "Datacenters"),
    "Datacenters",
    contextual,
  );
  if (dcs && dcs.Type !== "None") addObject(diff, dcs);
  sortObjects(diff.Objects);
  sortFields(diff.Fields);
  // The region's type is read off its fields alone: a change of datacenters only is no diff.
  const t = typeFromFields(diff.Fields);
  if (!t) return null;
  diff.Type = t;
  return diff;
}

/** volumeDiffs: by name (Nomad walks a map here, so it has no order of its own: name order is used). */
function volumeDiffs(oldV: GoValue, newV: GoValue, contextual: boolean): ObjectDiff[] | null {
  const asMap = (v: GoValue) =>
    v && typeof v === "object" && !Array.isArray(v) ? (v as Record<string, GoValue>) : {};
  const o = asMap(oldV);
  const n = asMap(newV);
  let diffs: ObjectDiff[] | null = null;
  for (const name of Object.keys(o).sort())
    diffs = append(
      diffs,
      ...nonNull(volumeDiff(o[name]!, Object.hasOwn(n, name) ? n[name]! : null, contextual)),
    );
  for (const name of Object.keys(n).sort())
    if (!Object.hasOwn(o, name)) diffs = append(diffs, ...nonNull(volumeDiff(null, n[name]!, contextual)));
  return diffs;
}

function volumeDiff(oldV: GoValue, newV: GoValue, contextual: boolean): ObjectDiff | null {
  const s = sides(oldV, newV, VOLUME_REQUEST);
  if (!s) return null;
  const diff = objectDiff(s.type, "Volume", fieldDiffs(s.oldFlat, s.newFlat, contextual));
  const mo = sides(field(s.old, "MountOptions"), field(s.new, "MountOptions"), CSI_MOUNT_OPTIONS);
  if (mo) {
    const moDiff = objectDiff(mo.type, "MountOptions", fieldDiffs(mo.oldFlat, mo.newFlat, contextual));
    addObject(
      moDiff,
      stringSetDiff(strings(mo.old, "MountFlags"), strings(mo.new, "MountFlags"), "MountFlags", contextual),
    );
    addObject(diff, moDiff);
  }
  return diff;
}
