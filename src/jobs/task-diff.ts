import { deepEqual, field, flatten, type GoValue, goInt, list, str, strings, zeroOf } from "./go-values.ts";
import {
  addObject,
  affinityDiffs,
  append,
  configDiff,
  constraintDiffs,
  type DiffType,
  diffsByName,
  type FieldDiff,
  fieldDiffs,
  goQuote,
  JobDiffError,
  nonNull,
  type ObjectDiff,
  objectDiff,
  primitiveObjectDiff,
  primitiveObjectSetDiff,
  sides,
  sortObjects,
  stringSetDiff,
} from "./job-diff-model.ts";
import {
  CHANGE_SCRIPT,
  DISPATCH_PAYLOAD,
  LOG_CONFIG,
  TASK,
  TASK_ARTIFACT,
  TEMPLATE,
  VAULT,
  WAIT_CONFIG,
  WORKLOAD_IDENTITY,
} from "./job-diff-types.ts";
import { resourcesDiff } from "./resources-diff.ts";
import { serviceDiffs } from "./service-diff.ts";

/**
 * Nomad's diff of a group's tasks (Task.Diff in nomad/structs/diff.go,
 * v1.6.1): the task's own fields, its driver config, resources, log
 * config, artifacts, services, Vault block, templates and identity.
 */

export interface TaskDiff {
  Type: DiffType;
  Name: string;
  Fields: FieldDiff[] | null;
  Objects: ObjectDiff[] | null;
  Annotations: string[] | null;
}

/** The tasks of two groups matched by name (the last of a name wins, as in Go's map), sorted by name. */
export function taskDiffs(
  oldList: readonly GoValue[],
  newList: readonly GoValue[],
  contextual: boolean,
): TaskDiff[] | null {
  return diffsByName(oldList, newList, (a, b) => taskDiff(a, b, contextual));
}

/** Task.Diff. A task's driver config is an object diff of its own, not fields of the task. */
export function taskDiff(t: GoValue, other: GoValue, contextual: boolean): TaskDiff {
  const diff: TaskDiff = { Type: "None", Name: "", Fields: null, Objects: null, Annotations: null };
  if (t === null && other === null) return diff;
  const filter = ["Name", "Config"];
  let oldT = t;
  let newT = other;
  if (t === null || other === null) {
    diff.Type = t === null ? "Added" : "Deleted";
    diff.Name = str(t ?? other, "Name");
    oldT = t ?? zeroOf(TASK);
    newT = other ?? zeroOf(TASK);
  } else {
    if (!deepEqual(t, other)) diff.Type = "Edited";
    if (str(t, "Name") !== str(other, "Name"))
      throw new JobDiffError(
        `can not diff tasks with different names: ${goQuote(str(t, "Name"))} and ${goQuote(str(other, "Name"))}`,
      );
    diff.Name = str(other, "Name");
  }
  diff.Fields = fieldDiffs(
    t === null ? null : flatten(t, TASK, filter, true),
    other === null ? null : flatten(other, TASK, filter, true),
    false,
  );

  const objects: ObjectDiff[] = [
    ...(constraintDiffs(oldT, newT, contextual) ?? []),
    ...(affinityDiffs(oldT, newT, contextual) ?? []),
    ...nonNull(configDiff(field(oldT, "Config"), field(newT, "Config"), contextual)),
    ...nonNull(resourcesDiff(field(oldT, "Resources"), field(newT, "Resources"), contextual)),
    ...nonNull(
      primitiveObjectDiff(
        field(oldT, "LogConfig"),
        field(newT, "LogConfig"),
        LOG_CONFIG,
        null,
        "LogConfig",
        contextual,
      ),
    ),
    ...nonNull(
      primitiveObjectDiff(
        field(oldT, "DispatchPayload"),
        field(newT, "DispatchPayload"),
        DISPATCH_PAYLOAD,
        null,
        "DispatchPayload",
        contextual,
      ),
    ),
    // Artifacts are a set matched by RelativeDest (their DiffID), else by whole value.
    ...(primitiveObjectSetDiff(
      list(oldT, "Artifacts"),
      list(newT, "Artifacts"),
      TASK_ARTIFACT,
      null,
      "Artifact",
      contextual,
      (a) => str(a, "RelativeDest"),
    ) ?? []),
    ...(serviceDiffs(list(oldT, "Services"), list(newT, "Services"), contextual) ?? []),
    ...nonNull(vaultDiff(field(oldT, "Vault"), field(newT, "Vault"), contextual)),
    ...(templateDiffs(list(oldT, "Templates"), list(newT, "Templates"), contextual) ?? []),
    ...nonNull(identityDiff(field(oldT, "Identity"), field(newT, "Identity"), contextual)),
  ];
  diff.Objects = append(diff.Objects, ...objects);
  return diff;
}

function vaultDiff(oldV: GoValue, newV: GoValue, contextual: boolean): ObjectDiff | null {
  const s = sides(oldV, newV, VAULT);
  if (!s) return null;
  const diff = objectDiff(s.type, "Vault", fieldDiffs(s.oldFlat, s.newFlat, contextual));
  addObject(
    diff,
    stringSetDiff(strings(s.old, "Policies"), strings(s.new, "Policies"), "Policies", contextual),
  );
  return diff;
}

function identityDiff(oldI: GoValue, newI: GoValue, contextual: boolean): ObjectDiff | null {
  const s = sides(oldI, newI, WORKLOAD_IDENTITY);
  return s ? objectDiff(s.type, "Identity", fieldDiffs(s.oldFlat, s.newFlat, contextual)) : null;
}

/**
 * templateDiffs: one template each side is an edit of it; otherwise
 * templates are matched by destination path (their DiffID), first come.
 */
function templateDiffs(
  oldList: readonly GoValue[],
  newList: readonly GoValue[],
  contextual: boolean,
): ObjectDiff[] | null {
  if (oldList.length === 1 && newList.length === 1) {
    const d = templateDiff(oldList[0]!, newList[0]!, contextual);
    return d ? [d] : null;
  }
  const newMatches = newList.map(() => -1);
  let diffs: ObjectDiff[] | null = null;
  oldList.forEach((oldT, oldIndex) => {
    const newIndex = newList.findIndex(
      (n, i) => newMatches[i]! < 0 && str(n, "DestPath") === str(oldT, "DestPath"),
    );
    if (newIndex < 0) {
      diffs = append(diffs, ...nonNull(templateDiff(oldT, null, contextual)));
      return;
    }
    newMatches[newIndex] = oldIndex;
    diffs = append(diffs, ...nonNull(templateDiff(oldT, newList[newIndex]!, contextual)));
  });
  newMatches.forEach((m, i) => {
    if (m === -1) diffs = append(diffs, ...nonNull(templateDiff(null, newList[i]!, contextual)));
  });
  sortObjects(diffs);
  return diffs;
}

function templateDiff(oldT: GoValue, newT: GoValue, contextual: boolean): ObjectDiff | null {
  const s = sides(oldT, newT, TEMPLATE);
  if (!s) return null;
  // Uid and Gid are *int, skipped by the primitive walk: Nomad adds them
  // by hand when set.
  for (const [v, flat] of [
    [oldT, s.oldFlat],
    [newT, s.newFlat],
  ] as const) {
    if (!flat) continue;
    for (const id of ["Uid", "Gid"]) {
      const n = field(v, id);
      if (typeof n === "number") flat[id] = goInt(n);
    }
  }
  const diff = objectDiff(s.type, "Template", fieldDiffs(s.oldFlat, s.newFlat, contextual));
  addObject(diff, waitConfigDiff(field(s.old, "Wait"), field(s.new, "Wait"), contextual));
  addObject(diff, changeScriptDiff(field(s.old, "ChangeScript"), field(s.new, "ChangeScript"), contextual));
  return diff;
}

/**
 * waitConfigDiff: flattened whole (its fields are pointers, so an unset
 * one prints "nil"), and named "Template", as in Nomad.
 */
function waitConfigDiff(oldW: GoValue, newW: GoValue, contextual: boolean): ObjectDiff | null {
  const s = sides(oldW, newW, WAIT_CONFIG, null, false);
  if (!s) return null;
  return objectDiff(s.type, "Template", fieldDiffs(s.oldFlat, s.newFlat, contextual));
}

function changeScriptDiff(oldC: GoValue, newC: GoValue, contextual: boolean): ObjectDiff | null {
  const s = sides(oldC, newC, CHANGE_SCRIPT);
  if (!s) return null;
  const diff = objectDiff(s.type, "ChangeScript", fieldDiffs(s.oldFlat, s.newFlat, contextual));
  addObject(diff, stringSetDiff(strings(s.old, "Args"), strings(s.new, "Args"), "Args", contextual));
  return diff;
}
