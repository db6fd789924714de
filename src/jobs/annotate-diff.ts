import type { JobDiff, TaskDiff, TaskGroupDiff } from "./job-diff.ts";

/**
 * Nomad's scheduler.Annotate (scheduler/annotate.go, v1.6.1): the plan's
 * counts written onto the job diff for `nomad job plan` to print. A group
 * gets its Updates ("create", "destroy", "in-place update", ...); a
 * changed Count field says whether it forces creations or destructions;
 * a changed task says whether it forces an in-place or a create/destroy
 * update.
 */

/** The counts of Nomad's DesiredUpdates that annotations read. */
export interface DesiredUpdateCounts {
  readonly Ignore: number;
  readonly Place: number;
  readonly Migrate: number;
  readonly Stop: number;
  readonly InPlaceUpdate: number;
  readonly DestructiveUpdate: number;
  readonly Canary: number;
}

export const ANNOTATION_FORCES_CREATE = "forces create";
export const ANNOTATION_FORCES_DESTROY = "forces destroy";
export const ANNOTATION_FORCES_INPLACE_UPDATE = "forces in-place update";
export const ANNOTATION_FORCES_DESTRUCTIVE_UPDATE = "forces create/destroy update";

/** Annotates `diff` in place. */
export function annotateJobDiff(
  diff: JobDiff,
  desiredTGUpdates: Readonly<Record<string, DesiredUpdateCounts>> | null,
): void {
  for (const tg of diff.TaskGroups ?? []) annotateTaskGroup(tg, desiredTGUpdates);
}

function annotateTaskGroup(
  diff: TaskGroupDiff,
  desired: Readonly<Record<string, DesiredUpdateCounts>> | null,
): void {
  const tg = desired && Object.hasOwn(desired, diff.Name) ? desired[diff.Name] : undefined;
  if (tg) {
    // A group the scheduler saw gets Updates, even when all counts are 0 ({}).
    const updates = diff.Updates ?? {};
    diff.Updates = updates;
    if (tg.Ignore !== 0) updates.ignore = tg.Ignore;
    if (tg.Place !== 0) updates.create = tg.Place;
    if (tg.Migrate !== 0) updates.migrate = tg.Migrate;
    if (tg.Stop !== 0) updates.destroy = tg.Stop;
    if (tg.Canary !== 0) updates.canary = tg.Canary;
    if (tg.InPlaceUpdate !== 0) updates["in-place update"] = tg.InPlaceUpdate;
    if (tg.DestructiveUpdate !== 0) updates["create/destroy update"] = tg.DestructiveUpdate;
  }
  annotateCountChange(diff);
  for (const task of diff.Tasks ?? []) annotateTask(task, diff);
}

function annotateCountChange(diff: TaskGroupDiff): void {
  const count = diff.Fields?.find((f) => f.Name === "Count");
  if (!count) return;
  const oldV = count.Old === "" ? 0 : Number.parseInt(count.Old, 10);
  const newV = count.New === "" ? 0 : Number.parseInt(count.New, 10);
  if (oldV < newV) count.Annotations = [...(count.Annotations ?? []), ANNOTATION_FORCES_CREATE];
  else if (newV < oldV) count.Annotations = [...(count.Annotations ?? []), ANNOTATION_FORCES_DESTROY];
}

function annotateTask(diff: TaskDiff, parent: TaskGroupDiff): void {
  if (diff.Type === "None") return;
  const annotate = (a: string) => {
    diff.Annotations = [...(diff.Annotations ?? []), a];
  };
  // The whole group comes or goes.
  if (parent.Type === "Added" || parent.Type === "Deleted") {
    if (diff.Type === "Added") {
      annotate(ANNOTATION_FORCES_CREATE);
      return;
    }
    if (diff.Type === "Deleted") {
      annotate(ANNOTATION_FORCES_DESTROY);
      return;
    }
  }
  // Every primitive field but KillTimeout needs a new allocation; of the
  // objects, services and constraints can change in place, and so can the
  // log config unless logging is switched on or off.
  let destructive = (diff.Fields ?? []).some((f) => f.Name !== "KillTimeout");
  if (!destructive) {
    destructive = (diff.Objects ?? []).some((o) => {
      if (o.Name === "Service" || o.Name === "Constraint") return false;
      if (o.Name === "LogConfig") return (o.Fields ?? []).some((f) => f.Name === "Disabled");
      return true;
    });
  }
  annotate(destructive ? ANNOTATION_FORCES_DESTRUCTIVE_UPDATE : ANNOTATION_FORCES_INPLACE_UPDATE);
}
